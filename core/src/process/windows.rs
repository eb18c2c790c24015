//! The Windows runner: the child joins a job object before its first
//! instruction runs, so the job holds every process it starts; the job is
//! ended with `TerminateJobObject`, and closing it ends whatever is left
//! (kill-on-close), so an early return or a panic leaks nothing.

use super::starts::{StartTurn, Starting};
use super::{output, OverCap, ProcessOutput, Run, RunError, Sink, Stream, DRAIN_GRACE};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::os::windows::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use windows_sys::Win32::Foundation::{ERROR_BROKEN_PIPE, INVALID_HANDLE_VALUE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Pipes::PeekNamedPipe;
use windows_sys::Win32::System::Threading::{
    OpenThread, ResumeThread, WaitForSingleObject, CREATE_SUSPENDED, THREAD_SUSPEND_RESUME,
};

/// The exit code of a process the runner ended: what a shell reports for a
/// process killed by `SIGKILL` (128 + 9), so callers see one number on
/// every platform.
const KILLED: u32 = 137;

pub(super) fn run(mut cmd: Command, run: &Run, turn: StartTurn) -> Result<ProcessOutput, RunError> {
    let opts = run.opts;
    let job = Job::new().map_err(|e| run.spawn_error(e))?;
    let child = cmd
        .creation_flags(CREATE_SUSPENDED)
        .spawn()
        .map_err(|e| run.spawn_error(e))?;
    let mut tree = Tree { job, child };
    // Only once the child is in the job may it run and start others.
    tree.job
        .assign(&tree.child)
        .and_then(|()| resume_main_thread(tree.child.id()))
        .map_err(|e| run.spawn_error(e))?;
    let mut starting = Starting::new(turn);

    let as_file = |handle: Option<OwnedHandle>| handle.map(File::from);
    let mut out = Sink::new(
        as_file(tree.child.stdout.take().map(OwnedHandle::from)),
        opts.output_cap,
        opts.over_cap,
    );
    let mut err = Sink::new(
        as_file(tree.child.stderr.take().map(OwnedHandle::from)),
        opts.output_cap,
        opts.over_cap,
    );
    if let (Some(mut stdin), Some(input)) = (tree.child.stdin.take(), opts.stdin.clone()) {
        // A pipe write blocks until the child reads, so a thread feeds it.
        // It ends when the child has read everything or the job is ended
        // (the pipe's reading end closes with the last process holding it).
        std::thread::spawn(move || stdin.write_all(&input));
    }
    let mut exited = false;
    let mut drain_until: Option<Instant> = None;

    loop {
        let now = Instant::now();
        if let Some(end) = run.ended(now) {
            tree.job.terminate();
            return Err(end);
        }
        let read_before = out.read + err.read;
        for (sink, stream) in [(&mut out, Stream::Stdout), (&mut err, Stream::Stderr)] {
            sink.pump().map_err(|e| run.io_error(e))?;
            if sink.overflowed_fail {
                tree.job.terminate();
                return Err(run.over_cap(stream));
            }
        }
        if opts.over_cap == OverCap::Stop && out.read + err.read > opts.output_cap {
            // Reaped below, with the exit code the job gave it.
            tree.job.terminate();
            break;
        }
        if exited && ((out.closed() && err.closed()) || drain_until.is_some_and(|d| now >= d)) {
            break;
        }
        // Output that came in may have more behind it (a pipe holds 4 KiB):
        // look again at once rather than after a slice.
        starting.settle(now, exited);
        let slice = if out.read + err.read > read_before {
            Duration::ZERO
        } else {
            let until = [drain_until, starting.until()].into_iter().flatten().min();
            run.slice(now, until)
        };
        if exited {
            std::thread::sleep(slice);
        } else if tree.wait_exit(slice) {
            // End what the child left behind in its job.
            tree.job.terminate();
            exited = true;
            drain_until = Some(Instant::now() + DRAIN_GRACE);
        }
    }
    let status = tree.child.wait().map_err(|e| run.io_error(e))?;
    Ok(output(out, err, status.code(), None))
}

/// The child and the job that holds it and its descendants; dropping it
/// ends them all and reaps the child (closing the job would end them too:
/// kill-on-close).
struct Tree {
    job: Job,
    child: Child,
}

impl Tree {
    /// Waits up to `slice` for the child to exit; whether it did.
    fn wait_exit(&self, slice: Duration) -> bool {
        // Below INFINITE (u32::MAX); 0 only looks.
        let ms = slice.as_millis().min(u128::from(u32::MAX - 1)) as u32;
        // SAFETY: the handle is our child's, open until `child` is dropped.
        unsafe { WaitForSingleObject(self.child.as_raw_handle(), ms) == WAIT_OBJECT_0 }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.job.terminate();
        // A child that never joined the job (the assignment failed) is
        // still suspended: end it too, or the wait below never returns.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A job object whose processes all end when it is closed.
struct Job(OwnedHandle);

impl Job {
    fn new() -> io::Result<Self> {
        // SAFETY: no attributes and no name: a new anonymous job we own.
        let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if handle.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh handle no one else owns.
        let job = Self(unsafe { OwnedHandle::from_raw_handle(handle as RawHandle) });
        let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        // Breakaway stays off: no process of the job can leave it.
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the struct and its size match the information class.
        let ok = unsafe {
            SetInformationJobObject(
                job.handle(),
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    }

    fn handle(&self) -> RawHandle {
        self.0.as_raw_handle()
    }

    fn assign(&self, child: &Child) -> io::Result<()> {
        // SAFETY: both handles are open and ours.
        if unsafe { AssignProcessToJobObject(self.handle(), child.as_raw_handle()) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Ends every process in the job.
    fn terminate(&self) {
        // SAFETY: the job handle is open and ours. A job already empty is
        // not an error worth reporting.
        unsafe {
            TerminateJobObject(self.handle(), KILLED);
        }
    }
}

/// Lets the suspended child run: resumes its one thread, found in a
/// snapshot of the system's threads.
fn resume_main_thread(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of all threads; a valid handle is ours to close.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh handle no one else owns.
    let snapshot = unsafe { OwnedHandle::from_raw_handle(snapshot as RawHandle) };
    let mut entry = THREADENTRY32 {
        dwSize: size_of::<THREADENTRY32>() as u32,
        ..Default::default()
    };
    // SAFETY: `entry` is a THREADENTRY32 with its size set, as required.
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle(), &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: plain call; a valid result is a handle we own.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if thread.is_null() {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a fresh handle no one else owns.
            let thread = unsafe { OwnedHandle::from_raw_handle(thread as RawHandle) };
            // SAFETY: the handle was opened with THREAD_SUSPEND_RESUME.
            if unsafe { ResumeThread(thread.as_raw_handle()) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
            return Ok(());
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot.as_raw_handle(), &mut entry) } != 0;
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        "the started process has no thread to resume",
    ))
}

impl Sink {
    /// Reads what the pipe holds now, never blocking: only as many bytes
    /// as `PeekNamedPipe` reports. Closes the pipe at end of file (every
    /// writer closed it).
    fn pump(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        while let Some(pipe) = self.pipe.as_mut() {
            let mut available = 0u32;
            // SAFETY: a pipe handle we own; only the count is asked for.
            let ok = unsafe {
                PeekNamedPipe(
                    pipe.as_raw_handle(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    &mut available,
                    std::ptr::null_mut(),
                )
            };
            if ok == 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(ERROR_BROKEN_PIPE as i32) {
                    self.pipe = None;
                    return Ok(());
                }
                return Err(e);
            }
            if available == 0 {
                return Ok(());
            }
            let want = chunk.len().min(available as usize);
            match pipe.read(&mut chunk[..want]) {
                Ok(0) => self.pipe = None,
                Ok(n) => {
                    self.keep(&chunk[..n]);
                    if self.overflowed_fail {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
