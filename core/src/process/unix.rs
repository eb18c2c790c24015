//! The Unix runner: the child leads a process group of its own, watched
//! with `poll(2)` and killed as a group with `SIGKILL`. A descendant that
//! left the group (`setsid`) is ended with its wait's [`super::RunMark`].

use super::starts::{StartTurn, Starting};
use super::{output, OverCap, ProcessOutput, Run, RunError, Sink, Stream, DRAIN_GRACE};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command};
use std::time::Instant;

pub(super) fn run(mut cmd: Command, run: &Run, turn: StartTurn) -> Result<ProcessOutput, RunError> {
    let opts = run.opts;
    // Before the child exists, so that the host's exit waits for its group.
    let spawning = live_groups::Spawning::enter().map_err(|e| run.spawn_error(e))?;
    let child = cmd
        .process_group(0)
        .spawn()
        .map_err(|e| run.spawn_error(e))?;
    exit_hooks::spawned();
    let mut starting = Starting::new(turn);
    let mut group = Group::new(child, spawning);

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
        set_nonblocking(fd).map_err(|e| run.io_error(e))?;
    }
    let input: &[u8] = opts.stdin.as_deref().unwrap_or_default();
    let mut written = 0usize;
    if input.is_empty() {
        stdin = None;
    }
    let pidfd = pidfd_open(group.pid);
    // With both, every event that ends a slice wakes `poll` itself.
    let cancel_wake = pidfd
        .as_ref()
        .and_then(|_| CancelWake::new(run.cancel).ok());
    let mut exited = false;
    let mut drain_until: Option<Instant> = None;

    loop {
        let now = Instant::now();
        if let Some(end) = run.ended(now) {
            group.kill_and_reap();
            return Err(end);
        }
        if exited && ((out.closed() && err.closed()) || drain_until.is_some_and(|d| now >= d)) {
            break;
        }
        let until = [drain_until, starting.until()].into_iter().flatten().min();
        let timeout = match cancel_wake {
            Some(_) => run.time_left(now, until),
            None => Some(run.slice(now, until)),
        };

        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(5);
        let mut slot = [usize::MAX; 5]; // stdin, stdout, stderr, pidfd, cancel
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
        if let Some(wake) = &cancel_wake {
            push(4, wake.reader.as_raw_fd(), libc::POLLIN);
        }
        // -1: no limit (no deadline, no drain).
        let timeout_ms = timeout.map_or(-1, |t| {
            t.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int
        });
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                group.kill_and_reap();
                return Err(run.io_error(e));
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
                    return Err(run.io_error(e));
                }
                if sink.overflowed_fail {
                    group.kill_and_reap();
                    return Err(run.over_cap(stream));
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
        starting.settle(Instant::now(), exited);
    }
    let status = group.reap();
    Ok(output(
        out,
        err,
        status.and_then(|s| s.code()),
        status.and_then(|s| s.signal()),
    ))
}

/// A descriptor that turns readable when a run's [`CancelToken`] is
/// cancelled, for `poll` to sleep on beside the child's pipes and pidfd.
///
/// [`CancelToken`]: crate::CancelToken
struct CancelWake {
    reader: UnixStream,
    /// Writes to the other end on cancel; dropped with the run, so the
    /// token keeps nothing of it.
    _hook: crate::CancelHook,
}

impl CancelWake {
    fn new(token: &crate::CancelToken) -> io::Result<Self> {
        let (reader, writer) = UnixStream::pair()?;
        writer.set_nonblocking(true)?;
        let hook = token.on_cancel_quick(move || {
            // Readable either way: the byte, or the end when `writer` drops.
            let _ = (&writer).write(&[1]);
        });
        Ok(Self {
            reader,
            _hook: hook,
        })
    }
}

/// Has the child change into `dir`, an open directory, just before it
/// runs its program: the directory is the one the caller opened and
/// checked, not whatever its path leads to by then. The caller keeps `dir`
/// open until the child is spawned.
///
/// On Linux the child is told the path `/proc/self/fd/N`, which, followed
/// in the child, is that very directory (its copy of the descriptor). So
/// the child still starts with `posix_spawn`: the `fchdir` hook used
/// elsewhere makes the standard library fork instead, and a fork copies
/// the whole memory map of a host that has thousands of threads. The
/// hook is also used when `/proc` is not mounted, or when the descriptor
/// is 0-2, which the child's standard streams replace before it changes
/// directory.
pub(super) fn enter(cmd: &mut Command, dir: std::sync::Arc<OwnedFd>) {
    let fd = dir.as_raw_fd();
    if cfg!(any(target_os = "linux", target_os = "android")) && fd > 2 && proc_fd_links() {
        cmd.current_dir(format!("/proc/self/fd/{fd}"));
        return;
    }
    // SAFETY: the closure runs in the forked child, where it only calls
    // `fchdir`, which is async-signal-safe, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::fchdir(dir.as_raw_fd()) == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
    }
}

/// Whether `/proc/self/fd` lists this process's descriptors (procfs is
/// mounted), looked at once.
fn proc_fd_links() -> bool {
    static MOUNTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *MOUNTED.get_or_init(|| std::path::Path::new("/proc/self/fd").is_dir())
}

/// A child in its own process group; dropping it kills the group and reaps
/// the child, so an early return or a panic leaks nothing.
struct Group {
    pid: libc::pid_t,
    child: Option<Child>,
}

impl Group {
    fn new(child: Child, spawning: live_groups::Spawning) -> Self {
        let pid = child.id() as libc::pid_t;
        spawning.track(pid);
        Self {
            pid,
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
        // Before the reap frees the number for reuse.
        live_groups::untrack(self.pid);
        drop(child.stdin.take());
        child.wait().ok()
    }

    fn kill_and_reap(&mut self) {
        self.kill_group();
        self.reap();
    }
}

/// The process groups of runs not reaped yet, killed as the process exits
/// (an `atexit` handler): a host that exits while its waits run commands
/// leaves none of them behind. (A host killed by a signal runs no exit
/// handler.)
///
/// A child runs from its spawn on, but its pid (its group's id) is known
/// only once the spawning thread runs again, which on a busy machine may
/// be after the child did much, and after another thread's `exit`. So a
/// run counts itself as spawning from before its spawn until its group is
/// listed ([`Spawning`]), and the exit handler waits for those runs
/// before it kills, for [`super::super::EXIT_PATIENCE`] at most: a spawn
/// held up longer must not hold up the exit (nor can an exit on the
/// spawning thread itself, from a signal handler, see its spawn end); its
/// group is killed when it is listed, if the process still runs by then.
/// Once the exit handler ran, no run spawns: what it started would be
/// left behind.
mod live_groups {
    use crate::sync::{Condvar, Mutex};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::LazyLock;
    use std::time::Instant;

    #[derive(Default)]
    struct Groups {
        pids: Vec<libc::pid_t>,
        /// Runs counted by a [`Spawning`].
        spawning: usize,
        /// Whether the exit handler ran.
        exiting: bool,
    }

    /// The groups, with the process that started them: a forked child
    /// neither kills its parent's groups nor takes a lock that may have
    /// been held at the fork. The condition variable tells of a run that
    /// stopped spawning.
    static LIVE: LazyLock<(u32, Mutex<Groups>, Condvar)> =
        LazyLock::new(|| (std::process::id(), Mutex::default(), Condvar::new()));
    /// Whether [`kill_at_exit`] is registered.
    static AT_EXIT: AtomicBool = AtomicBool::new(false);

    fn ours() -> Option<(&'static Mutex<Groups>, &'static Condvar)> {
        let (owner, live, spawned) = &*LIVE;
        (*owner == std::process::id()).then_some((live, spawned))
    }

    /// A run counted as spawning, until its group is listed (or the spawn
    /// failed and this is dropped).
    pub(super) struct Spawning {
        counted: bool,
    }

    impl Spawning {
        /// Counts a run about to spawn; an error once the process exits.
        pub(super) fn enter() -> std::io::Result<Self> {
            let Some((live, _)) = ours() else {
                return Ok(Self { counted: false });
            };
            if !AT_EXIT.swap(true, Ordering::SeqCst) {
                // SAFETY: registers a plain function; glibc runs it at `exit`,
                // or when this library is unloaded.
                unsafe { libc::atexit(kill_at_exit) };
            }
            let mut groups = live.lock();
            if groups.exiting {
                return Err(std::io::Error::other("the process is exiting"));
            }
            groups.spawning += 1;
            Ok(Self { counted: true })
        }

        /// Lists the group of the child spawned, then stops counting. If
        /// the exit handler ran meanwhile (it waits for a spawn only so
        /// long), the group is killed now: the process is ending, and
        /// what it started must not outlive it.
        pub(super) fn track(self, pid: libc::pid_t) {
            if let (true, Some((live, _))) = (self.counted, ours()) {
                let mut groups = live.lock();
                groups.pids.push(pid);
                if groups.exiting {
                    // SAFETY: plain syscall; the group id is our unreaped child's pid.
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                }
            }
        }
    }

    impl Drop for Spawning {
        fn drop(&mut self) {
            let Some((live, spawned)) = ours().filter(|_| self.counted) else {
                return;
            };
            live.lock().spawning -= 1;
            spawned.notify_all();
        }
    }

    pub(super) fn untrack(pid: libc::pid_t) {
        let Some((live, _)) = ours() else { return };
        let mut groups = live.lock();
        if let Some(at) = groups.pids.iter().position(|&p| p == pid) {
            groups.pids.swap_remove(at);
        }
    }

    /// Kills every group not reaped yet, once the runs spawning have
    /// listed theirs (see above); holding the lock, so none is reaped
    /// (its number freed) meanwhile. Also called by the exit handler of
    /// the marks' sweeps, before it sweeps: a group killed twice is no
    /// harm, since its leader is not reaped while listed.
    pub(super) extern "C" fn kill_at_exit() {
        let Some((live, spawned)) = ours() else {
            return;
        };
        let mut groups = live.lock();
        if !std::mem::replace(&mut groups.exiting, true) {
            super::exit_hooks::exiting();
            let until = Instant::now() + super::super::EXIT_PATIENCE;
            while groups.spawning > 0 && !spawned.wait_until(&mut groups, until) {}
        }
        for &pid in &groups.pids {
            // SAFETY: plain syscall; the group id is an unreaped child's pid.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        super::exit_hooks::killed();
    }
}

/// Test hooks; not part of the API.
pub mod exit_hooks {
    use crate::sync::{Condvar, Mutex};
    use std::sync::atomic::{AtomicU8, Ordering};

    /// How far the exit handler got: [`RUNNING`], [`EXITING`] or [`KILLED`].
    const RUNNING: u8 = 0;
    const EXITING: u8 = 1;
    const KILLED: u8 = 2;

    /// Until which stage spawning threads are held ([`RUNNING`]: not held).
    static HOLD_UNTIL: AtomicU8 = AtomicU8::new(RUNNING);
    /// The exit handler's stage, and the threads held until it changes.
    static STAGE: (Mutex<u8>, Condvar) = (Mutex::new(RUNNING), Condvar::new());

    /// From now on, holds each thread that starts a command right after
    /// its child is spawned, before the child's group is listed for the
    /// exit handler, until this process exits: the exit comes in between,
    /// as it may when the spawning thread is slow to run again.
    pub fn hold_spawned_until_exit() {
        HOLD_UNTIL.store(EXITING, Ordering::SeqCst);
    }

    /// As [`hold_spawned_until_exit`], but until the exit handler has
    /// stopped waiting for spawns and killed what was listed: the spawning
    /// thread lists its group later than the handler's patience.
    pub fn hold_spawned_past_exit_patience() {
        HOLD_UNTIL.store(KILLED, Ordering::SeqCst);
    }

    /// Holds this thread, if asked to, until the exit handler's stage.
    pub(super) fn spawned() {
        let until = HOLD_UNTIL.load(Ordering::SeqCst);
        if until != RUNNING {
            let (stage, changed) = &STAGE;
            let mut stage = stage.lock();
            while *stage < until {
                changed.wait(&mut stage);
            }
        }
    }

    fn reach(next: u8) {
        let (stage, changed) = &STAGE;
        *stage.lock() = next;
        changed.notify_all();
    }

    /// The exit handler runs.
    pub(super) fn exiting() {
        reach(EXITING);
    }

    /// The exit handler killed the groups listed.
    pub(super) fn killed() {
        reach(KILLED);
    }
}

/// Kills the process group of every run not reaped yet (see
/// `live_groups`), for the exit handler that sweeps the marks.
#[cfg(target_os = "linux")]
pub(super) fn kill_live_groups() {
    live_groups::kill_at_exit();
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

impl Sink {
    fn fd(&self) -> Option<RawFd> {
        self.pipe.as_ref().map(|p| p.as_raw_fd())
    }

    /// Reads what is available now (the pipe is non-blocking); closes the
    /// pipe at end of file.
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

/// The most passes over `/proc` one sweep makes (see [`end_marked`]).
#[cfg(target_os = "linux")]
const MAX_SWEEP_PASSES: usize = 16;

/// How long a pass waits before it looks again at processes caught in the
/// middle of `execve` when no process is new, doubling each time up to
/// [`MAX_LOOK_AGAIN_PAUSE`]: back to back, the passes could all be over
/// before a process that lost its processor (a loaded machine) is through
/// its `execve`. The pauses of a sweep add up to 0.2 s at most (for a
/// process stuck in `execve` through every pass).
#[cfg(target_os = "linux")]
const FIRST_LOOK_AGAIN_PAUSE: std::time::Duration = std::time::Duration::from_millis(1);
/// The longest of those pauses.
#[cfg(target_os = "linux")]
const MAX_LOOK_AGAIN_PAUSE: std::time::Duration = std::time::Duration::from_millis(16);

/// Kills every process of this user that carries one of `marks`:
/// descendants that escaped the process group (`setsid`) and outlived the
/// run. Linux only (it reads `/proc/PID/environ`); one that clears its
/// environment escapes. Each process is held by a pidfd while it is read,
/// so a reused pid is never signalled. One sweep serves every mark.
///
/// A listing of `/proc` is a snapshot, and a descendant that starts its
/// next generation and exits, over and over, is at a pid the listing does
/// not hold by the time a pass reaches it. So a pass reads the newest
/// processes first, and passes repeat over the processes that appeared
/// since the last (few, read within microseconds of their listing) until
/// none did, up to [`MAX_SWEEP_PASSES`]. A process whose environment
/// could not be told yet (it was in the middle of `execve`, see
/// `environ`) is read again in the next pass, as if new. Only marked
/// processes are killed, never their groups: a marked process may run in
/// a group it does not own (a job `tmux run-shell` started is in the tmux
/// server's group).
///
/// A kill takes effect when the process next runs, and its exit takes a
/// while more (its memory is let go of): the sweep returns once every
/// process it killed has exited, so that what is killed is gone when
/// [`super::finish_sweeps`] returns (see [`Killed`]).
#[cfg(target_os = "linux")]
pub(super) fn end_marked(var: &str, marks: &[String]) {
    let mut killed = Killed::default();
    sweep_passes(&super::environ::Marks::new(var, marks), &mut killed);
    killed.wait();
}

/// The passes of [`end_marked`] over `/proc`.
#[cfg(target_os = "linux")]
fn sweep_passes(marks: &super::environ::Marks, killed: &mut Killed) {
    use super::environ::Verdict;
    let mut read = std::collections::HashSet::from([std::process::id()]);
    // Those to look at again, and whether each seemed empty.
    let mut again = std::collections::HashMap::<u32, bool>::new();
    let mut pause = FIRST_LOOK_AGAIN_PAUSE;
    let mut environ = Vec::new();
    for _ in 0..MAX_SWEEP_PASSES {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        let mut new: Vec<u32> = entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .filter(|pid| !read.contains(pid))
            .collect();
        if new.is_empty() {
            return;
        }
        if new.iter().all(|pid| again.contains_key(pid)) {
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_LOOK_AGAIN_PAUSE);
        }
        new.sort_unstable_by(|a, b| b.cmp(a));
        let looked_again = std::mem::take(&mut again);
        for pid in new {
            let seemed_empty = looked_again.get(&pid).copied().unwrap_or(false);
            match end_if_marked(pid, marks, seemed_empty, &mut environ, killed) {
                Verdict::Marked | Verdict::NotMarked | Verdict::LeaderEnded => {
                    read.insert(pid);
                }
                verdict @ (Verdict::Unsettled | Verdict::SeemsEmpty) => {
                    again.insert(pid, verdict == Verdict::SeemsEmpty);
                }
            }
        }
    }
}

/// Kills `pid` if it carries one of `marks` (see [`end_marked`]), and
/// keeps it in `killed` then; says what it found.
#[cfg(target_os = "linux")]
fn end_if_marked(
    pid: u32,
    marks: &super::environ::Marks,
    seemed_empty: bool,
    buf: &mut Vec<u8>,
    killed: &mut Killed,
) -> super::environ::Verdict {
    use super::environ::{read_through_thread, Verdict};
    let Some(pidfd) = pidfd_open(pid as libc::pid_t) else {
        return Verdict::NotMarked;
    };
    let environ = match super::environ::read(pid, buf) {
        Ok(environ) => environ,
        // Recent kernels refuse to read the environment of a process whose
        // main thread has no memory (a kernel thread, a zombie, one
        // ending, or one whose main thread ended while others run): told
        // apart by its `stat`, as an empty read is.
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => &[],
        // Other users' environments are not readable: nothing of ours there.
        Err(_) => return Verdict::NotMarked,
    };
    let mut verdict = marks.verdict(environ, || super::environ::stat(pid), seemed_empty);
    // A kill of its pid ends every thread of it.
    if verdict == Verdict::LeaderEnded
        && read_through_thread(pid, buf).is_some_and(|environ| marks.carried_by(environ))
    {
        verdict = Verdict::Marked;
    }
    if verdict == Verdict::Marked {
        // SAFETY: plain syscall on a pidfd we own.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
        }
        killed.hold(pidfd);
    }
    verdict
}

/// The processes a sweep killed, held by their pidfds until they have
/// exited. A pidfd reads as ready once its process has exited whole (a
/// zombie, or reaped): every thread, a main thread that ended early
/// included.
#[cfg(target_os = "linux")]
#[derive(Default)]
struct Killed {
    held: Vec<OwnedFd>,
    /// When the sweep stops waiting: set by its first wait.
    until: Option<Instant>,
}

/// The most pidfds a sweep holds: it waits for them when it holds that
/// many, so that a sweep killing thousands does not run the host out of
/// descriptors (a pidfd it could not open would let a process escape).
#[cfg(target_os = "linux")]
const MAX_KILLED_HELD: usize = 64;

/// The longest a sweep waits for the processes it killed, in all. One
/// killed in uninterruptible sleep (stuck on a network file system, say)
/// exits only when that sleep ends, which may be never: the sweep (and a
/// host's exit, which waits for it) must not wait for it that long.
#[cfg(target_os = "linux")]
const KILLED_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(target_os = "linux")]
impl Killed {
    fn hold(&mut self, pidfd: OwnedFd) {
        self.held.push(pidfd);
        if self.held.len() >= MAX_KILLED_HELD {
            self.wait();
        }
    }

    /// Waits until every process held has exited, or the patience is
    /// spent; lets go of them.
    fn wait(&mut self) {
        let until = *self
            .until
            .get_or_insert_with(|| Instant::now() + KILLED_PATIENCE);
        while !self.held.is_empty() {
            let mut fds: Vec<libc::pollfd> = self
                .held
                .iter()
                .map(|fd| libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            // Rounded up: a poll that times out is past `until`.
            let left = until.saturating_duration_since(Instant::now());
            let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            // SAFETY: `fds` is a valid array of `fds.len()` entries.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            let interrupted = || io::Error::last_os_error().kind() == io::ErrorKind::Interrupted;
            if ready == 0 || (ready < 0 && !interrupted()) {
                break;
            }
            let mut exited = fds.iter().map(|fd| fd.revents != 0);
            self.held.retain(|_| !exited.next().unwrap_or(false));
        }
        self.held.clear();
    }
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
    use std::os::fd::FromRawFd;
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
