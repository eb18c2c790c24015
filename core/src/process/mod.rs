//! A bounded process runner that the whole crate shares (the `command`
//! probe, the tmux client, ...).
//!
//! [`run_bounded`] runs an argv (never a shell string) with a time budget and
//! a [`CancelToken`]. The child and everything it starts form a **process
//! tree** the runner owns: when the budget runs out, the token is cancelled
//! or the output goes over a [`OverCap::Fail`] or [`OverCap::Stop`] cap, the
//! whole tree is killed and the child is reaped. When the child exits by
//! itself, whatever it left running in its tree (`sh -c 'sleep 100 &'`) is
//! killed too: no process started by a call outlives it. Nor the host: a
//! process that exits while calls run kills their trees as it exits (on
//! Unix, an `atexit` handler).
//!
//! - **Unix**: the tree is the child's own process group, killed with
//!   `SIGKILL`. A process that deliberately leaves the group (`setsid`, a
//!   daemon such as a tmux server) is not followed: SECURITY.md, "Commands:
//!   processes that leave their group", says why and what a host can do.
//! - **Windows**: the tree is a job object the child joins before its first
//!   instruction runs (it is started suspended), with kill-on-close and no
//!   breakaway, so every descendant belongs to it; it is ended with
//!   `TerminateJobObject`, and a child it ended exits with code 137 (what a
//!   shell reports for `SIGKILL`) where Unix reports signal 9.
//!
//! Commands start a few at a time, process-wide (`starts.rs`): a turn is
//! held from the start until the command exits or has run 20 ms, so a
//! thousand waits starting commands together leave the engine's threads
//! the CPU to keep their deadlines, and a command that hangs holds none.
//! Tmux client calls get turns ahead of commands.
//!
//! # How waiting works
//!
//! One thread (the caller's) watches the child's pipes and its exit. On Unix
//! it multiplexes with `poll(2)`: stdin (written from the bytes in
//! [`RunOptions::stdin`]), stdout, stderr and, on Linux, a `pidfd` that
//! becomes readable when the child exits, so output and exit wake the caller
//! at once. A socket pair joins them, written by a hook on the
//! [`CancelToken`] that returns at once (run on the cancelling thread, the
//! engine's scheduler included), so a cancel wakes the caller at once too,
//! and `poll` sleeps until one of these or the deadline: a thousand runs
//! that wait for their
//! commands cost no CPU. Without `pidfd` (macOS, an old kernel) the wait
//! sleeps in slices of at most [`CANCEL_SLICE`] (5 ms) and checks the
//! child's exit after each with `waitid(WNOWAIT)`; on Windows each slice
//! waits on the process handle, the token is looked at between slices, and
//! the pipes are read after each (a helper thread writes stdin).
//!
//! On Unix the child's exit is detected without reaping it (`WNOWAIT`), so
//! its pid, which is also the group id, stays reserved until the group has
//! been killed: the kill can never hit an unrelated process that reused the
//! number. A job object names its processes by handle, not by number.
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

use crate::CancelToken;
use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod starts;
#[doc(hidden)]
pub use starts::hooks as start_hooks;
pub(crate) use starts::{turns as start_turns, Queue, StartLog, Starts};
#[cfg(target_os = "linux")]
mod environ;
#[cfg(target_os = "linux")]
mod sweep;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as os;
#[cfg(unix)]
#[doc(hidden)]
pub use unix::exit_hooks;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

/// Longest time the runner blocks without looking at the cancel token.
pub const CANCEL_SLICE: Duration = Duration::from_millis(5);

/// How long to keep reading pipes after the child exited and its tree was
/// killed, for a process outside the tree that still holds them open.
const DRAIN_GRACE: Duration = Duration::from_millis(100);

/// The longest a process's exit waits for one thing: a sweep (one stuck
/// reading a process's environment, or waiting for one it killed that
/// cannot exit yet), or a run's spawn (see `unix::live_groups`). Neither
/// may keep the program from exiting.
#[cfg(unix)]
const EXIT_PATIENCE: Duration = Duration::from_secs(1);

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
    /// Kill the process tree and return [`RunError::OutputOverCap`].
    Fail,
    /// For a caller whose own limit is on stdout and stderr together: as
    /// soon as the two streams have produced more than `cap` bytes between
    /// them, kill the process tree and return what was read (at most `cap`
    /// bytes of each stream, more than `cap` in all) as the output of a
    /// child killed by `SIGKILL` (on Windows: exit code 137). A program that never stops writing is
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
    /// Working directory of the child; `None` inherits ours. The path is
    /// followed when the child starts, links included: a caller that
    /// checked the directory beforehand passes it open in
    /// [`cwd_dir`](Self::cwd_dir) instead (Unix).
    pub cwd: Option<PathBuf>,
    /// An open directory the child changes into just before it runs the
    /// program, instead of following [`cwd`](Self::cwd)'s path again: the
    /// directory it runs in is the very one the caller opened and checked,
    /// whatever was renamed or linked in its place since. On Linux the
    /// child follows the directory's `/proc/self/fd` link, so it still
    /// starts with `posix_spawn`; elsewhere it calls `fchdir`, in a forked
    /// child. It must be a directory, opened with `O_CLOEXEC` (`O_PATH`
    /// will do on Linux). Unix only: Windows starts a process in a
    /// directory named by path.
    #[cfg(unix)]
    pub cwd_dir: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
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
            #[cfg(unix)]
            cwd_dir: None,
            env: Vec::new(),
            stdin: None,
            output_cap: DEFAULT_OUTPUT_CAP,
            over_cap: OverCap::KeepHead,
            discard_stderr: false,
        }
    }
}

/// Marks the processes one wait's command runs start, so that those that
/// leave their process group (`setsid`, a daemon) end with the wait, not
/// later: each run's environment carries the mark, and dropping the last
/// handle kills every process of this user that still carries it (Linux;
/// a process that clears its environment escapes), moments later on a
/// thread of its own ([`finish_sweeps`] waits for it). Held by a wait's
/// probe, so the sweep runs once a wait, not once a sample.
///
/// A process that exits while marks are still held (a wait running, or a
/// call abandoned at its deadline or cancel that still holds its probe)
/// ends their processes too, as it exits (an `atexit` handler): the probe
/// is not dropped then, so only a register of the live marks reaches them.
///
/// ```
/// use waitfor::process::{run_bounded, RunMark, RunOptions};
/// let mark = RunMark::new();
/// let mut options = RunOptions::default();
/// options.env.push(mark.env());
/// let out = run_bounded(&["sh".into(), "-c".into(), "echo $WAITFOR_RUN".into()], &options,
///     std::time::Duration::from_secs(5), &waitfor::CancelToken::new()).unwrap();
/// assert_eq!(out.stdout.len(), 33); // 32 hex digits and a newline
/// ```
#[derive(Debug)]
pub struct RunMark(String);

/// The environment variable that carries a [`RunMark`].
const MARK_VAR: &str = "WAITFOR_RUN";

impl RunMark {
    /// A mark no other wait has: random, so a command cannot guess another's.
    pub fn new() -> std::sync::Arc<Self> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).expect("the operating system's random source works");
        let mark: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        // Live until dropped: a process that exits first ends its
        // processes as it exits.
        #[cfg(target_os = "linux")]
        sweep::track(&mark);
        std::sync::Arc::new(Self(mark))
    }

    /// The variable to add to a run's environment.
    pub fn env(&self) -> (OsString, OsString) {
        (MARK_VAR.into(), self.0.clone().into())
    }
}

impl Drop for RunMark {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        {
            // Queued before it leaves the register, so that an exit in
            // between finds it in one or the other.
            let mark = std::mem::take(&mut self.0);
            sweep::end_soon(MARK_VAR, mark.clone());
            sweep::untrack(&mark);
        }
    }
}

#[cfg(target_os = "linux")]
pub use sweep::finish_sweeps;

/// Waits until the processes of every dropped [`RunMark`] are ended; only
/// Linux ends them, so elsewhere there is nothing to wait for.
///
/// ```
/// waitfor::process::finish_sweeps();
/// ```
#[cfg(not(target_os = "linux"))]
pub fn finish_sweeps() {}

/// What a finished child produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessOutput {
    /// Standard output, at most `output_cap` bytes.
    pub stdout: Vec<u8>,
    /// Standard error, at most `output_cap` bytes.
    pub stderr: Vec<u8>,
    /// Exit code when the child exited normally.
    pub status: Option<i32>,
    /// Signal number when the child was killed by a signal (Unix only:
    /// Windows has no signals, and a child the runner ended exits with 137).
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
    /// The directory to run in does not exist (the OS says "not found" for
    /// it as for a missing program).
    #[error("cannot start `{program}` in {cwd}: no such directory")]
    NoSuchDirectory {
        /// argv\[0\].
        program: String,
        /// The directory asked for.
        cwd: String,
    },
    /// The budget ran out; the process tree was killed.
    #[error("`{program}` timed out after {budget:?} and was killed")]
    TimedOut {
        /// argv\[0\].
        program: String,
        /// The budget that was given.
        budget: Duration,
    },
    /// The cancel token was cancelled; the process tree was killed.
    #[error("`{program}` was cancelled and killed")]
    Cancelled {
        /// argv\[0\].
        program: String,
    },
    /// A stream went over the cap with [`OverCap::Fail`]; the tree was killed.
    #[error("`{program}` wrote more than {cap} bytes to {stream} and was killed")]
    OutputOverCap {
        /// argv\[0\].
        program: String,
        /// The stream that overflowed.
        stream: Stream,
        /// The cap in bytes.
        cap: usize,
    },
    /// An I/O error while talking to the child (the tree was killed).
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
/// docs](self) for the guarantees about the process tree.
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
    run_bounded_in(Queue::Commands, argv, opts, budget, cancel, None)
}

/// [`run_bounded`], waiting for its turn to start in `queue`; `log`, if
/// any, notes how long it waited and whether it started.
pub(crate) fn run_bounded_in(
    queue: Queue,
    argv: &[String],
    opts: &RunOptions,
    budget: Duration,
    cancel: &CancelToken,
    log: Option<&StartLog>,
) -> Result<ProcessOutput, RunError> {
    let deadline = Instant::now().checked_add(budget);
    let (program, args) = argv.split_first().ok_or(RunError::EmptyArgv)?;
    if cancel.is_cancelled() {
        return Err(RunError::Cancelled {
            program: program.clone(),
        });
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
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
    #[cfg(unix)]
    let entered = opts
        .cwd_dir
        .as_ref()
        .map(|dir| os::enter(&mut cmd, dir.clone()));
    #[cfg(not(unix))]
    let entered: Option<()> = None;
    if let (None, Some(cwd)) = (entered, &opts.cwd) {
        cmd.current_dir(cwd);
    }
    for (k, v) in &opts.env {
        cmd.env(k, v);
    }
    let run = Run {
        program,
        opts,
        budget,
        deadline,
        cancel,
    };
    let turn = starts::take(queue, deadline, cancel, log).ok_or_else(|| run.stopped())?;
    os::run(cmd, &run, turn)
}

/// One call of [`run_bounded`], as the platform's runner sees it.
struct Run<'a> {
    program: &'a str,
    opts: &'a RunOptions,
    budget: Duration,
    deadline: Option<Instant>,
    cancel: &'a CancelToken,
}

impl Run<'_> {
    /// The error that ends the call now, if the token was cancelled or the
    /// budget ran out.
    fn ended(&self, now: Instant) -> Option<RunError> {
        if self.cancel.is_cancelled() {
            return Some(RunError::Cancelled {
                program: self.program.to_string(),
            });
        }
        self.deadline
            .is_some_and(|d| now >= d)
            .then(|| RunError::TimedOut {
                program: self.program.to_string(),
                budget: self.budget,
            })
    }

    /// The error of a run stopped before it started: cancelled, or out of
    /// budget.
    fn stopped(&self) -> RunError {
        self.ended(Instant::now())
            .unwrap_or_else(|| RunError::TimedOut {
                program: self.program.to_string(),
                budget: self.budget,
            })
    }

    /// How long until the deadline or `until`, whichever comes first;
    /// `None` if neither is set.
    fn time_left(&self, now: Instant, until: Option<Instant>) -> Option<Duration> {
        [self.deadline, until]
            .into_iter()
            .flatten()
            .map(|d| d.saturating_duration_since(now))
            .min()
    }

    /// How long a runner that nothing wakes on a cancel may block now: one
    /// [`CANCEL_SLICE`], less if the deadline or `until` comes first.
    fn slice(&self, now: Instant, until: Option<Instant>) -> Duration {
        self.time_left(now, until)
            .map_or(CANCEL_SLICE, |left| left.min(CANCEL_SLICE))
    }

    fn spawn_error(&self, source: io::Error) -> RunError {
        match &self.opts.cwd {
            Some(cwd) if source.kind() == io::ErrorKind::NotFound && !cwd.is_dir() => {
                RunError::NoSuchDirectory {
                    program: self.program.to_string(),
                    cwd: crate::error::shown_path(cwd),
                }
            }
            _ => RunError::Spawn {
                program: self.program.to_string(),
                source,
            },
        }
    }

    fn io_error(&self, source: io::Error) -> RunError {
        RunError::Io {
            program: self.program.to_string(),
            source,
        }
    }

    fn over_cap(&self, stream: Stream) -> RunError {
        RunError::OutputOverCap {
            program: self.program.to_string(),
            stream,
            cap: self.opts.output_cap,
        }
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

    fn closed(&self) -> bool {
        self.pipe.is_none()
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

/// What the two sinks kept, with how the child ended.
fn output(out: Sink, err: Sink, status: Option<i32>, signal: Option<i32>) -> ProcessOutput {
    ProcessOutput {
        stdout_truncated: out.truncated,
        stderr_truncated: err.truncated,
        stdout: out.buf,
        stderr: err.buf,
        status,
        signal,
    }
}
