//! A tmux client for pane waits: pane resolution, pane snapshots with the
//! facts the fresh view needs, a control-mode wake client, and the echo log
//! that discounts keys the host typed itself.
//!
//! Every call runs the `tmux` program as [`crate::process::run_bounded`]
//! does, with an argv (never a shell string), inside a time budget and
//! under a [`CancelToken`]: a cancelled or late call kills its tmux client
//! process. Its turn to start comes ahead of the commands waits run.
//! A process keeps at most [`CALLS_PER_SERVER`] invocations in flight per
//! server; the others wait their turn within their budget (`turns.rs`).
//! Control-mode clients ([`ControlClient`]), long-lived, are not counted.
//! Only ids, row numbers and formats written by this module reach a tmux
//! command line; pattern text never does.
//!
//! ```no_run
//! use std::time::Duration;
//! use waitfor::tmux::{PaneTarget, Rows, Tmux};
//! use waitfor::CancelToken;
//!
//! let tmux = Tmux::new().with_socket_name("work");
//! let cancel = CancelToken::new();
//! let budget = Duration::from_secs(2);
//! let pane = tmux.resolve_pane(&PaneTarget::default(), budget, &cancel)?;
//! let entry = tmux.snapshot(&pane.pane_id, Rows::Visible, budget, &cancel)?;
//! let anchor = entry.cursor_row();
//! let later = tmux.snapshot(&pane.pane_id, Rows::from_row(anchor, entry.history_size), budget, &cancel)?;
//! println!("{:?}", later.lines);
//! # Ok::<(), waitfor::tmux::TmuxError>(())
//! ```
//!
//! The module exists on Unix hosts only; elsewhere `waitfor::tmux` holds
//! just [`PaneTarget`] and [`NEEDS_UNIX_HOST`], so that a spec naming a pane
//! parses everywhere and is refused with that reason.

mod target;
pub use target::{parse_pane_id, Freshness, PanePick, PaneTarget, NEEDS_UNIX_HOST};

pub mod control;
pub mod echo;
pub mod echo_registry;
pub mod pane_probe;
pub(crate) mod scripted;
pub mod snapshot;
mod socket_key;
mod turns;

pub use control::{decode_output, CheckTurn, ControlClient, ControlState, WakeFn};
pub use echo::{
    EchoLog, EchoMask, Key, ServerIdentity, ECHO_MAX_PENDING, ECHO_PENDING_TTL, ECHO_RECENT_LIMIT,
    ECHO_RECENT_TTL,
};
pub use echo_registry::{echo_key, echo_log, record_keys, record_keys_on, record_send_keys};
pub use pane_probe::{
    ObserveRows, PaneEnd, PaneProbe, PaneReport, PaneReportHandle, PushPath, Unresolved,
    CONTROL_BUDGET, VERIFY_EVERY,
};
pub use snapshot::{PaneFacts, PaneSnapshot, Rows, MARGIN, MAX_INVOCATIONS};
pub use turns::CALLS_PER_SERVER;
pub(crate) use turns::{AnsweredSince, TurnLog};

use crate::process::{run_bounded_in, OverCap, Queue, RunError, RunOptions};
use scripted::ScriptedServer;
use std::sync::Arc;
use turns::NoTurn;

/// How often a tmux call or attach waiting for its turn looks at its
/// cancel token (a cancelled wait is over already; its call only holds a
/// worker until then).
pub const CANCEL_CHECK: Duration = Duration::from_millis(50);

/// The instant `budget` from now; a budget beyond a year counts as a year.
fn deadline_in(budget: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(budget)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600))
}

/// The error of a call that stopped waiting to begin: cancelled, or out
/// of `budget`.
fn gave_up(program: &str, budget: Duration, cancel: &CancelToken) -> TmuxError {
    let program = program.to_string();
    TmuxError::Run(if cancel.is_cancelled() {
        RunError::Cancelled { program }
    } else {
        RunError::TimedOut { program, budget }
    })
}

/// Most bytes one tmux invocation may print; more is an error
/// ([`RunError::OutputOverCap`]), never a silently cut capture.
pub const TMUX_OUTPUT_CAP: usize = 64 << 20;
use crate::CancelToken;
use std::time::{Duration, Instant};

/// Why a tmux call failed.
#[derive(Debug, thiserror::Error)]
pub enum TmuxError {
    /// No tmux server is listening on the socket.
    #[error("no tmux server running on {socket}")]
    NoServer {
        /// `-L` name, or "the default socket".
        socket: String,
        /// What tmux wrote to stderr, trimmed (empty when it said nothing).
        stderr: String,
    },
    /// The server has no sessions (so there is no pane to default to).
    #[error("the tmux server has no sessions")]
    NoSessions,
    /// No pane has this id or target.
    #[error("no such tmux pane: {0}")]
    NoSuchPane(String),
    /// No window has this id.
    #[error("no such tmux window: {0}")]
    NoSuchWindow(String),
    /// No session has this id or name.
    #[error("no such tmux session: {0}")]
    NoSuchSession(String),
    /// tmux itself reported another error.
    #[error("tmux {command} failed (exit {status:?}): {stderr}")]
    Command {
        /// The tmux command (first word after the global flags).
        command: String,
        /// Exit status.
        status: Option<i32>,
        /// What tmux wrote to stderr, trimmed.
        stderr: String,
    },
    /// Running the tmux program failed: not installed, timed out, cancelled.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The call's budget ran out before its turn ([`CALLS_PER_SERVER`])
    /// while tmux answered this process's other calls: the server is
    /// busy, not stuck, and the call never started.
    #[error("tmux {command} got no turn within {:.2}s: the server was answering this process's other calls", budget.as_secs_f64())]
    Busy {
        /// The tmux command (first word after the global flags).
        command: String,
        /// The call's whole budget.
        budget: Duration,
    },
    /// tmux answered something this module does not understand (see
    /// [`TmuxError::unexpected`]).
    #[error("unexpected tmux output: {0}")]
    Parse(String),
    /// The control-mode client could not attach or stopped working.
    #[error("tmux control mode: {0}")]
    Control(String),
}

impl TmuxError {
    /// Whether the call ran out of time, waiting for its turn or for tmux,
    /// or was cancelled (not a tmux fault).
    ///
    /// ```
    /// use waitfor::process::RunError;
    /// let e = waitfor::tmux::TmuxError::Run(RunError::Cancelled { program: "tmux".into() });
    /// assert!(e.is_interrupted());
    /// ```
    pub fn is_interrupted(&self) -> bool {
        matches!(
            self,
            TmuxError::Run(RunError::Cancelled { .. } | RunError::TimedOut { .. })
                | TmuxError::Busy { .. }
        )
    }

    /// A [`TmuxError::Parse`] for a `line` of tab-separated fields (`what`
    /// names the command) that did not read as expected. When tabs are
    /// missing and `_` stands where they belong, tmux ran without UTF-8
    /// output, and the message says so.
    ///
    /// ```
    /// let e = waitfor::tmux::TmuxError::unexpected("list-panes", "%0_@0_$0_1_1_nc");
    /// assert!(e.to_string().contains("UTF-8"));
    /// ```
    pub fn unexpected(what: &str, line: &str) -> Self {
        if !line.contains('\t') && line.contains('_') {
            return TmuxError::Parse(format!(
                "tmux printed '_' where a field separator (a tab) was expected, as it does \
                 without UTF-8 output: run tmux with `-u` or a UTF-8 locale (LC_ALL, \
                 LC_CTYPE or LANG such as C.UTF-8); {what} line: {line:?}"
            ));
        }
        TmuxError::Parse(format!("{what} line: {line:?}"))
    }
}

/// How to reach a tmux server: program path, socket name, config file.
///
/// ```
/// let tmux = waitfor::tmux::Tmux::new().with_socket_name("private");
/// assert_eq!(tmux.argv(&["list-sessions"]), ["tmux", "-u", "-L", "private", "list-sessions"]);
/// ```
#[derive(Clone, Debug)]
pub struct Tmux {
    program: String,
    socket_name: Option<String>,
    config_file: Option<String>,
    /// The simulator's server, answering instead of the `tmux` program.
    scripted: Option<Arc<ScriptedServer>>,
    /// Where the calls of this client (one wait's) note their turns.
    turn_log: Option<TurnLog>,
}

impl Default for Tmux {
    fn default() -> Self {
        Self::new()
    }
}

/// A resolved pane and where it lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaneRef {
    /// `%N`.
    pub pane_id: String,
    /// `@N`.
    pub window_id: String,
    /// `$N` of the session the pane was found through.
    pub session_id: String,
    /// Name of that session.
    pub session_name: String,
}

impl Tmux {
    /// The `tmux` on `PATH`, default socket, default config.
    pub fn new() -> Self {
        Self {
            program: "tmux".into(),
            socket_name: None,
            config_file: None,
            scripted: None,
            turn_log: None,
        }
    }

    /// A client of the simulator's scripted server instead of a tmux
    /// program: every invocation is answered by `server`.
    pub(crate) fn scripted(server: Arc<ScriptedServer>) -> Self {
        Self {
            scripted: Some(server),
            ..Self::new()
        }
    }

    /// The echo log of the scripted server, if this client reaches one.
    pub(crate) fn scripted_echo_log(&self) -> Option<Arc<EchoLog>> {
        self.scripted.as_ref().map(|server| server.echo_log())
    }

    /// Uses `-L name` (a socket in tmux's socket directory). An empty
    /// name is the default socket, as libtmux takes it (no `-L ""`, whose
    /// path would be tmux's directory itself).
    ///
    /// ```
    /// let tmux = waitfor::tmux::Tmux::new().with_socket_name("");
    /// assert_eq!(tmux.argv(&["list-sessions"]), ["tmux", "-u", "list-sessions"]);
    /// ```
    pub fn with_socket_name(mut self, name: impl Into<String>) -> Self {
        self.socket_name = Some(name.into()).filter(|name| !name.is_empty());
        self
    }

    /// Runs this program instead of `tmux` from `PATH`.
    pub fn with_program(mut self, program: impl Into<String>) -> Self {
        self.program = program.into();
        self
    }

    /// Passes `-f file` (only matters when a command starts the server).
    pub fn with_config_file(mut self, file: impl Into<String>) -> Self {
        self.config_file = Some(file.into());
        self
    }

    /// The socket name given with [`Tmux::with_socket_name`].
    pub fn socket_name(&self) -> Option<&str> {
        self.socket_name.as_deref()
    }

    /// This client, its calls noting in `log` whether the latest is
    /// without a turn behind this process's other calls.
    pub(crate) fn logging_turns(mut self, log: TurnLog) -> Self {
        self.turn_log = Some(log);
        self
    }

    /// Tells, later, whether tmux answered any call of this process on
    /// this server from now on (a scripted server answers none).
    pub(crate) fn answered_since_now(&self) -> AnsweredSince {
        AnsweredSince::now(self.socket_path())
    }

    /// Where the server this reaches listens, as tmux finds it for `-L`:
    /// `$TMUX_TMPDIR` (or `/tmp`), `tmux-UID`, then the socket name
    /// (`default` when none is given) appended even when it holds `/`.
    #[cfg(unix)]
    pub(crate) fn socket_path(&self) -> std::path::PathBuf {
        let dir = std::env::var_os("TMUX_TMPDIR")
            .filter(|dir| !dir.is_empty())
            .unwrap_or_else(|| "/tmp".into());
        // tmux resolves the directory (`realpath`) before it appends.
        let dir = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.into());
        // SAFETY: getuid only reads the process's user id.
        let uid = unsafe { libc::getuid() };
        let mut path = dir.join(format!("tmux-{uid}")).into_os_string();
        path.push("/");
        path.push(self.socket_name.as_deref().unwrap_or("default"));
        path.into()
    }

    /// The full argv for a tmux command: program, global flags, `args`.
    ///
    /// `-u` comes first: without a UTF-8 locale in the environment (MCP
    /// clients start servers with a minimal one, without `LANG`), tmux
    /// prints each tab of a `-F` format as `_`, and the fields this module
    /// reads could not be told apart.
    pub fn argv(&self, args: &[&str]) -> Vec<String> {
        let mut argv = vec![self.program.clone(), "-u".to_string()];
        if let Some(name) = &self.socket_name {
            argv.extend(["-L".to_string(), name.clone()]);
        }
        if let Some(file) = &self.config_file {
            argv.extend(["-f".to_string(), file.clone()]);
        }
        argv.extend(args.iter().map(|a| a.to_string()));
        argv
    }

    /// Runs one tmux invocation (which may hold several commands separated
    /// by a `;` argument) and returns its stdout. A non-zero exit becomes a
    /// typed error. The call waits, within `budget`, while
    /// [`CALLS_PER_SERVER`] calls of this process are in flight on the
    /// server, and holds a turn until tmux answers (so a command that blocks,
    /// such as `wait-for`, holds one that long).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// let tmux = waitfor::tmux::Tmux::new();
    /// let out = tmux.run(&["display-message", "-p", "#{version}"], Duration::from_secs(1), &waitfor::CancelToken::new())?;
    /// # Ok::<(), waitfor::tmux::TmuxError>(())
    /// ```
    pub fn run(
        &self,
        args: &[&str],
        budget: Duration,
        cancel: &CancelToken,
    ) -> Result<String, TmuxError> {
        let (status, stdout, stderr) = match &self.scripted {
            Some(server) => {
                let (status, stdout, stderr) = server.run(args);
                (Some(status), stdout, stderr)
            }
            None => {
                let opts = RunOptions {
                    output_cap: TMUX_OUTPUT_CAP,
                    over_cap: OverCap::Fail,
                    ..RunOptions::default()
                };
                let argv = self.argv(args);
                let deadline = deadline_in(budget);
                let log = self.turn_log.as_ref();
                let mut turn = turns::take(self.socket_path(), deadline, cancel, log).map_err(
                    |why| match why {
                        NoTurn::Busy => TmuxError::Busy {
                            command: args.first().copied().unwrap_or("").to_string(),
                            budget,
                        },
                        NoTurn::Cancelled | NoTurn::Silent => gave_up(&argv[0], budget, cancel),
                    },
                )?;
                let left = deadline.saturating_duration_since(Instant::now());
                let out =
                    run_bounded_in(Queue::Tmux, &argv, &opts, left, cancel, None).map_err(|e| {
                        match e {
                            // The turn's wait was part of the call's budget.
                            RunError::TimedOut { program, .. } => {
                                RunError::TimedOut { program, budget }
                            }
                            other => other,
                        }
                    })?;
                turn.answered();
                let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
                (out.status, text(&out.stdout), text(&out.stderr))
            }
        };
        if status == Some(0) {
            return Ok(stdout);
        }
        let stderr = stderr.trim().to_string();
        Err(self.classify(args.first().copied().unwrap_or(""), status, stderr))
    }

    fn classify(&self, command: &str, status: Option<i32>, stderr: String) -> TmuxError {
        let socket = || match &self.socket_name {
            Some(name) => format!("socket `{name}`"),
            None => "the default socket".to_string(),
        };
        let after_colon = |s: &str| {
            s.split_once(": ")
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default()
        };
        if stderr.contains("no server running")
            || stderr.contains("error connecting to")
            || stderr.contains("server exited")
        {
            TmuxError::NoServer {
                socket: socket(),
                stderr,
            }
        } else if stderr.contains("can't find pane") {
            TmuxError::NoSuchPane(after_colon(&stderr))
        } else if stderr.contains("can't find window") {
            TmuxError::NoSuchWindow(after_colon(&stderr))
        } else if stderr.contains("can't find session") {
            TmuxError::NoSuchSession(after_colon(&stderr))
        } else {
            TmuxError::Command {
                command: command.to_string(),
                status,
                stderr,
            }
        }
    }

    /// Resolves a [`PaneTarget`] with one `list-panes -a` (ids and names are
    /// compared exactly here, not by tmux's fuzzy target matching), or one
    /// `display-message` for [`PaneTarget::target`].
    pub fn resolve_pane(
        &self,
        target: &PaneTarget,
        budget: Duration,
        cancel: &CancelToken,
    ) -> Result<PaneRef, TmuxError> {
        self.resolve_pane_picking(target, PanePick::Active, budget, cancel)
    }

    /// [`Tmux::resolve_pane`], with `pick` choosing the pane of a window
    /// or session target.
    pub fn resolve_pane_picking(
        &self,
        target: &PaneTarget,
        pick_pane: PanePick,
        budget: Duration,
        cancel: &CancelToken,
    ) -> Result<PaneRef, TmuxError> {
        if target.pane_id.is_none()
            && target.window_id.is_none()
            && target.session_id.is_none()
            && target.session_name.is_none()
        {
            if let Some(t) = &target.target {
                let fmt = "#{pane_id}\t#{window_id}\t#{session_id}\t#{session_name}";
                let out = self
                    .run(&["display-message", "-p", "-t", t, fmt], budget, cancel)
                    .map_err(|e| match e {
                        TmuxError::NoSuchWindow(_)
                        | TmuxError::NoSuchSession(_)
                        | TmuxError::NoSuchPane(_) => TmuxError::NoSuchPane(t.clone()),
                        other => other,
                    })?;
                let line = out.lines().next().unwrap_or("");
                // display-message prints nothing (and succeeds) for a target
                // it cannot find.
                if !line.starts_with('%') {
                    return Err(TmuxError::NoSuchPane(t.clone()));
                }
                let mut f = line.splitn(4, '\t');
                let mut next = || {
                    f.next()
                        .map(str::to_string)
                        .ok_or_else(|| TmuxError::unexpected("display-message", line))
                };
                return Ok(PaneRef {
                    pane_id: next()?,
                    window_id: next()?,
                    session_id: next()?,
                    session_name: next()?,
                });
            }
        }
        let fmt = "#{pane_id}\t#{window_id}\t#{session_id}\t#{window_active}\t#{pane_active}\t#{session_name}";
        let out = self.run(&["list-panes", "-a", "-F", fmt], budget, cancel)?;
        let rows: Vec<ListedPane> = out
            .lines()
            .filter(|l| !l.is_empty())
            .map(ListedPane::parse)
            .collect::<Result<_, _>>()?;
        // `list-panes -a` lists windows and panes in index order.
        let active =
            |p: &&ListedPane| pick_pane == PanePick::First || p.window_active && p.pane_active;
        let pick = |found: Option<&ListedPane>| found.map(ListedPane::to_ref);
        if let Some(id) = &target.pane_id {
            return pick(rows.iter().find(|p| &p.pane_id == id))
                .ok_or_else(|| TmuxError::NoSuchPane(id.clone()));
        }
        if let Some(id) = &target.window_id {
            return pick(
                rows.iter()
                    .filter(|p| &p.window_id == id)
                    .find(|p| pick_pane == PanePick::First || p.pane_active),
            )
            .ok_or_else(|| TmuxError::NoSuchWindow(id.clone()));
        }
        if let Some(id) = &target.session_id {
            return pick(rows.iter().filter(|p| &p.session_id == id).find(active))
                .ok_or_else(|| TmuxError::NoSuchSession(id.clone()));
        }
        if let Some(name) = &target.session_name {
            return pick(rows.iter().filter(|p| &p.session_name == name).find(active))
                .ok_or_else(|| TmuxError::NoSuchSession(name.clone()));
        }
        let first = rows.first().ok_or(TmuxError::NoSessions)?;
        pick(
            rows.iter()
                .filter(|p| p.session_id == first.session_id)
                .find(active),
        )
        .ok_or(TmuxError::NoSessions)
    }
}

struct ListedPane {
    pane_id: String,
    window_id: String,
    session_id: String,
    window_active: bool,
    pane_active: bool,
    session_name: String,
}

impl ListedPane {
    fn parse(line: &str) -> Result<Self, TmuxError> {
        // The session name comes last, so a tab inside it cannot shift fields.
        let f: Vec<&str> = line.splitn(6, '\t').collect();
        if f.len() != 6 {
            return Err(TmuxError::unexpected("list-panes", line));
        }
        Ok(Self {
            pane_id: f[0].into(),
            window_id: f[1].into(),
            session_id: f[2].into(),
            window_active: f[3] == "1",
            pane_active: f[4] == "1",
            session_name: f[5].into(),
        })
    }

    fn to_ref(&self) -> PaneRef {
        PaneRef {
            pane_id: self.pane_id.clone(),
            window_id: self.window_id.clone(),
            session_id: self.session_id.clone(),
            session_name: self.session_name.clone(),
        }
    }
}

/// A tmux server of a unit test's own (socket `waitfor-{tag}-PID`, no
/// config file) with a session `main`, and a runner of commands on it.
#[cfg(test)]
pub(crate) fn test_server(tag: &str) -> (Tmux, impl Fn(&[&str]) -> String) {
    let tmux = Tmux::new()
        .with_socket_name(format!("waitfor-{tag}-{}", std::process::id()))
        .with_config_file("/dev/null");
    let client = tmux.clone();
    let run = move |args: &[&str]| {
        client
            .run(args, Duration::from_secs(20), &CancelToken::new())
            .unwrap()
    };
    run(&["new-session", "-d", "-s", "main"]);
    (tmux, run)
}
