//! A bounded process runner that the whole crate shares (the `command`
//! probe, the tmux client, ...).
//!
//! [`run_bounded`] runs an argv (never a shell string) with a time budget and
//! a [`CancelToken`]. The child is started in a process group of its own; when
//! the budget runs out, the token is cancelled or the output goes over a
//! [`OverCap::Fail`] or [`OverCap::Stop`] cap, the **whole group** is killed with `SIGKILL` and the
//! child is reaped. When the child exits by itself, whatever it left running in
//! its group (`sh -c 'sleep 100 &'`) is killed too: no process started by a
//! call outlives it, except one that deliberately left the group
//! (`setsid`, a daemon such as a tmux server): SECURITY.md, "Commands:
//! processes that leave their group", says why and what a host can do.
//!
//! # How waiting works
//!
//! One thread (the caller's) multiplexes everything with `poll(2)`: stdin
//! (written from the bytes in [`RunOptions::stdin`]), stdout, stderr and, on
//! Linux, a `pidfd` that becomes readable when the child exits. Output and
//! exit therefore wake the caller at once. [`CancelToken`] offers no file
//! descriptor, so the poll sleeps in slices of at most [`CANCEL_SLICE`]
//! (5 ms) and checks the token between slices: a cancel is noticed within
//! one slice. Without `pidfd` (not Linux, or an old kernel) the child's exit is
//! checked the same way, once per slice, with `waitid(WNOWAIT)`.
//!
//! The child's exit is detected without reaping it (`WNOWAIT`), so its pid,
//! which is also the group id, stays reserved until the group has been killed:
//! the kill can never hit an unrelated process that reused the number.
//!
//! Writing stdin to a child that closed it raises `SIGPIPE` in processes that
//! do not ignore it; Rust programs, CPython and Node ignore it by default.
//!
//! ```
//! use std::time::Duration;
//! use waitfor::process::{run_bounded, RunOptions};
//! use waitfor::CancelToken;
//!
//! let argv = vec!["echo".to_string(), "hello".to_string()];
//! let out = run_bounded(&argv, &RunOptions::default(), Duration::from_secs(10), &CancelToken::new())?;
//! assert_eq!(out.stdout, b"hello\n");
//! assert_eq!(out.status, Some(0));
//! # Ok::<(), waitfor::process::RunError>(())
//! ```
#![cfg(unix)]

use crate::CancelToken;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Longest time the runner blocks without looking at the cancel token.
pub const CANCEL_SLICE: Duration = Duration::from_millis(5);

/// How long to keep reading pipes after the child exited and its group was
/// killed, for a process outside the group that still holds them open.
const DRAIN_GRACE: Duration = Duration::from_millis(100);

/// Default cap on each of stdout and stderr: 1 MiB.
pub const DEFAULT_OUTPUT_CAP: usize = 1 << 20;

/// What to do when a stream produces more than [`RunOptions::output_cap`]
/// bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OverCap {
    /// Keep the first `cap` bytes, discard the rest (still reading, so the
    /// child never blocks on a full pipe) and set the truncated flag.
    #[default]
    KeepHead,
    /// Keep the last `cap` bytes and set the truncated flag.
    KeepTail,
    /// Kill the process group and return [`RunError::OutputOverCap`].
    Fail,
    /// For a caller whose own limit is on stdout and stderr together: as
    /// soon as the two streams have produced more than `cap` bytes between
    /// them, kill the process group and return what was read (at most `cap`
    /// bytes of each stream, more than `cap` in all) as the output of a
    /// child killed by `SIGKILL`. A program that never stops writing is
    /// answered at once, not at the end of the budget.
    ///
    /// ```
    /// use std::time::Duration;
    /// use waitfor::process::{run_bounded, OverCap, RunOptions};
    /// let opts = RunOptions { output_cap: 4096, over_cap: OverCap::Stop, ..RunOptions::default() };
    /// let out = run_bounded(&["yes".to_string()], &opts, Duration::from_secs(60),
    ///                       &waitfor::CancelToken::new())?;
    /// assert!(out.stdout.len() == 4096 && out.stdout_truncated);
    /// assert_eq!(out.signal, Some(9));
    /// # Ok::<(), waitfor::process::RunError>(())
    /// ```
    Stop,
}

/// Which output stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl std::fmt::Display for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        })
    }
}

/// Options for [`run_bounded`]. `Default` gives: inherit the working
/// directory and environment, stdin from `/dev/null`, 1 MiB per stream,
/// keep the head of an over-long stream.
///
/// ```
/// use waitfor::process::{OverCap, RunOptions};
/// let opts = RunOptions {
///     env: vec![("LANG".into(), "C".into())],
///     stdin: Some(b"input".to_vec()),
///     output_cap: 4096,
///     over_cap: OverCap::KeepTail,
///     ..RunOptions::default()
/// };
/// assert_eq!(opts.cwd, None);
/// ```
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Working directory of the child; `None` inherits ours.
    pub cwd: Option<PathBuf>,
    /// Variables added to (or replacing in) the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to the child's stdin, which is then closed; `None`
    /// connects stdin to `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Most bytes kept from each of stdout and stderr.
    pub output_cap: usize,
    /// What happens beyond `output_cap`.
    pub over_cap: OverCap,
    /// Connect stderr to `/dev/null`: for a caller that does not read it,
    /// so that it is neither kept nor counted against the cap.
    pub discard_stderr: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            cwd: None,
            env: Vec::new(),
            stdin: None,
            output_cap: DEFAULT_OUTPUT_CAP,
            over_cap: OverCap::KeepHead,
            discard_stderr: false,
        }
    }
}

/// What a finished child produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessOutput {
    /// Standard output, at most `output_cap` bytes.
    pub stdout: Vec<u8>,
    /// Standard error, at most `output_cap` bytes.
    pub stderr: Vec<u8>,
    /// Exit code when the child exited normally.
    pub status: Option<i32>,
    /// Signal number when the child was killed by a signal.
    pub signal: Option<i32>,
    /// Whether stdout went over the cap (some bytes were dropped).
    pub stdout_truncated: bool,
    /// Whether stderr went over the cap (some bytes were dropped).
    pub stderr_truncated: bool,
}

impl ProcessOutput {
    /// Whether the child exited with status 0.
    ///
    /// ```
    /// let out = waitfor::process::ProcessOutput { status: Some(0), ..Default::default() };
    /// assert!(out.success());
    /// ```
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }
}

/// Why [`run_bounded`] gave no [`ProcessOutput`].
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The argv was empty.
    #[error("empty argv: no program to run")]
    EmptyArgv,
    /// The program could not be started (not found, not executable, bad cwd).
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        /// argv\[0\].
        program: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The budget ran out; the process group was killed.
    #[error("`{program}` timed out after {budget:?} and was killed")]
    TimedOut {
        /// argv\[0\].
        program: String,
        /// The budget that was given.
        budget: Duration,
    },
    /// The cancel token was cancelled; the process group was killed.
    #[error("`{program}` was cancelled and killed")]
    Cancelled {
        /// argv\[0\].
        program: String,
    },
    /// A stream went over the cap with [`OverCap::Fail`]; the group was killed.
    #[error("`{program}` wrote more than {cap} bytes to {stream} and was killed")]
    OutputOverCap {
        /// argv\[0\].
        program: String,
        /// The stream that overflowed.
        stream: Stream,
        /// The cap in bytes.
        cap: usize,
    },
    /// An I/O error while talking to the child (the group was killed).
    #[error("i/o error while running `{program}`: {source}")]
    Io {
        /// argv\[0\].
        program: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}

/// Runs `argv` (program and arguments, no shell) to completion within
/// `budget`, unless `cancel` is cancelled first. See the [module
/// docs](self) for the guarantees about the process group.
///
/// A non-zero exit is not an error: it is in [`ProcessOutput::status`].
///
/// ```
/// use std::time::Duration;
/// use waitfor::process::{run_bounded, RunError, RunOptions};
/// use waitfor::CancelToken;
///
/// let argv: Vec<String> = ["sleep", "30"].iter().map(|s| s.to_string()).collect();
/// let err = run_bounded(&argv, &RunOptions::default(), Duration::from_millis(50), &CancelToken::new());
/// assert!(matches!(err, Err(RunError::TimedOut { .. })));
/// ```
pub fn run_bounded(
    argv: &[String],
    opts: &RunOptions,
    budget: Duration,
    cancel: &CancelToken,
) -> Result<ProcessOutput, RunError> {
    let start = Instant::now();
    let (program, args) = argv.split_first().ok_or(RunError::EmptyArgv)?;
    let name = program.clone();
    if cancel.is_cancelled() {
        return Err(RunError::Cancelled { program: name });
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
        .process_group(0)
        .stdin(if opts.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(if opts.discard_stderr {
            Stdio::null()
        } else {
            Stdio::piped()
        });
    if let Some(cwd) = &opts.cwd {
        cmd.current_dir(cwd);
    }
    for (k, v) in &opts.env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().map_err(|source| RunError::Spawn {
        program: name.clone(),
        source,
    })?;
    let mut group = Group::new(child);
    let io_err = |source: io::Error| RunError::Io {
        program: name.clone(),
        source,
    };

    let child = group.child.as_mut().expect("child present until reaped");
    let mut stdin = child.stdin.take();
    let as_file = |fd: Option<OwnedFd>| fd.map(std::fs::File::from);
    let mut out = Sink::new(
        as_file(child.stdout.take().map(OwnedFd::from)),
        opts.output_cap,
        opts.over_cap,
    );
    let mut err = Sink::new(
        as_file(child.stderr.take().map(OwnedFd::from)),
        opts.output_cap,
        opts.over_cap,
    );
    for fd in [stdin.as_ref().map(|s| s.as_raw_fd()), out.fd(), err.fd()]
        .into_iter()
        .flatten()
    {
        set_nonblocking(fd).map_err(io_err)?;
    }
    let input: &[u8] = opts.stdin.as_deref().unwrap_or_default();
    let mut written = 0usize;
    if input.is_empty() {
        stdin = None;
    }
    let pidfd = pidfd_open(group.pid);
    let deadline = start.checked_add(budget);
    let mut exited = false;
    let mut drain_until: Option<Instant> = None;

    loop {
        if cancel.is_cancelled() {
            group.kill_and_reap();
            return Err(RunError::Cancelled { program: name });
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            group.kill_and_reap();
            return Err(RunError::TimedOut {
                program: name,
                budget,
            });
        }
        if exited && ((out.closed() && err.closed()) || drain_until.is_some_and(|d| now >= d)) {
            break;
        }
        let mut slice = CANCEL_SLICE;
        if let Some(d) = deadline {
            slice = slice.min(d - now);
        }
        if let Some(d) = drain_until {
            slice = slice.min(d.saturating_duration_since(now));
        }

        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(4);
        let mut slot = [usize::MAX; 4]; // stdin, stdout, stderr, pidfd
        let mut push = |i: usize, fd: RawFd, events: libc::c_short| {
            slot[i] = fds.len();
            fds.push(libc::pollfd {
                fd,
                events,
                revents: 0,
            });
        };
        if let Some(s) = &stdin {
            push(0, s.as_raw_fd(), libc::POLLOUT);
        }
        if let Some(fd) = out.fd() {
            push(1, fd, libc::POLLIN);
        }
        if let Some(fd) = err.fd() {
            push(2, fd, libc::POLLIN);
        }
        if let (Some(p), false) = (&pidfd, exited) {
            push(3, p.as_raw_fd(), libc::POLLIN);
        }
        let timeout_ms = slice.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                group.kill_and_reap();
                return Err(io_err(e));
            }
            continue;
        }
        let ready = |i: usize| slot[i] != usize::MAX && fds[slot[i]].revents != 0;

        if ready(0) {
            if let Some(s) = stdin.as_mut() {
                match s.write(&input[written..]) {
                    Ok(k) => written += k,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // The child closed its stdin (EPIPE) or similar: stop feeding it.
                    Err(_) => written = input.len(),
                }
                if written >= input.len() {
                    stdin = None;
                }
            }
        }
        for (i, sink, stream) in [(1, &mut out, Stream::Stdout), (2, &mut err, Stream::Stderr)] {
            if ready(i) {
                if let Err(e) = sink.pump() {
                    group.kill_and_reap();
                    return Err(io_err(e));
                }
                if sink.overflowed_fail {
                    group.kill_and_reap();
                    return Err(RunError::OutputOverCap {
                        program: name,
                        stream,
                        cap: opts.output_cap,
                    });
                }
            }
        }
        if opts.over_cap == OverCap::Stop && out.read + err.read > opts.output_cap {
            // Reaped below, killed by this signal.
            group.kill_group();
            break;
        }
        if !exited {
            let pid_ready = ready(3);
            if pid_ready || pidfd.is_none() {
                exited = has_exited(group.pid);
            }
            if exited {
                // The leader is a zombie, so its pid (= the group id) is still
                // reserved: kill what it left behind in its group.
                group.kill_group();
                stdin = None;
                drain_until = Some(Instant::now() + DRAIN_GRACE);
            }
        }
    }
    let status = group.reap();
    let mut result = ProcessOutput {
        stdout_truncated: out.truncated,
        stderr_truncated: err.truncated,
        stdout: out.buf,
        stderr: err.buf,
        status: None,
        signal: None,
    };
    if let Some(status) = status {
        result.status = status.code();
        result.signal = status.signal();
    }
    Ok(result)
}

/// A child in its own process group; dropping it kills the group and reaps
/// the child, so an early return or a panic leaks nothing.
struct Group {
    pid: libc::pid_t,
    child: Option<Child>,
}

impl Group {
    fn new(child: Child) -> Self {
        Self {
            pid: child.id() as libc::pid_t,
            child: Some(child),
        }
    }

    fn kill_group(&self) {
        if self.child.is_some() {
            // SAFETY: plain syscall; the group id is our unreaped child's pid.
            unsafe {
                libc::kill(-self.pid, libc::SIGKILL);
            }
        }
    }

    fn reap(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        drop(child.stdin.take());
        child.wait().ok()
    }

    fn kill_and_reap(&mut self) {
        self.kill_group();
        self.reap();
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

/// One output pipe and what was kept of it.
struct Sink {
    pipe: Option<std::fs::File>,
    buf: Vec<u8>,
    /// Bytes read from the pipe, kept or not.
    read: usize,
    cap: usize,
    mode: OverCap,
    truncated: bool,
    overflowed_fail: bool,
}

impl Sink {
    fn new(pipe: Option<std::fs::File>, cap: usize, mode: OverCap) -> Self {
        Self {
            pipe,
            buf: Vec::new(),
            read: 0,
            cap,
            mode,
            truncated: false,
            overflowed_fail: false,
        }
    }

    fn fd(&self) -> Option<RawFd> {
        self.pipe.as_ref().map(|p| p.as_raw_fd())
    }

    fn closed(&self) -> bool {
        self.pipe.is_none()
    }

    /// Reads what is available now; closes the pipe at end of file.
    fn pump(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        while let Some(pipe) = self.pipe.as_mut() {
            match pipe.read(&mut chunk) {
                Ok(0) => self.pipe = None,
                Ok(n) => {
                    self.keep(&chunk[..n]);
                    if self.overflowed_fail {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn keep(&mut self, bytes: &[u8]) {
        self.read = self.read.saturating_add(bytes.len());
        let room = self.cap.saturating_sub(self.buf.len());
        if bytes.len() <= room {
            self.buf.extend_from_slice(bytes);
            return;
        }
        self.truncated = true;
        match self.mode {
            OverCap::KeepHead | OverCap::Stop => self.buf.extend_from_slice(&bytes[..room]),
            OverCap::Fail => self.overflowed_fail = true,
            OverCap::KeepTail => {
                if bytes.len() >= self.cap {
                    self.buf.clear();
                    self.buf.extend_from_slice(&bytes[bytes.len() - self.cap..]);
                } else {
                    let excess = self.buf.len() + bytes.len() - self.cap;
                    self.buf.drain(..excess);
                    self.buf.extend_from_slice(bytes);
                }
            }
        }
    }
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether the child exited, without reaping it.
fn has_exited(pid: libc::pid_t) -> bool {
    // SAFETY: zeroed siginfo_t is a valid out-parameter for waitid.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        // With WNOHANG, si_pid stays 0 while the child runs; an error (ECHILD)
        // means there is nothing left to wait for.
        r != 0 || info.si_pid() != 0
    }
}

#[cfg(target_os = "linux")]
fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: plain syscall; a non-negative result is a new descriptor we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor was just returned to us and is owned by no one else.
    Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

#[cfg(not(target_os = "linux"))]
fn pidfd_open(_pid: libc::pid_t) -> Option<OwnedFd> {
    None
}
