//! A tmux control-mode client that wakes a wait when a pane gets output.
//!
//! [`Tmux::control_attach`] starts `tmux -N -C attach-session -t SESSION -f
//! ignore-size,read-only` (`-N`: never start a server) in a process group of
//! its own and reads its notifications on a thread. Each `%output %N ...`
//! line for a watched pane calls the wake callback of every wait watching
//! it. Everything else is ignored except what tells the client's health:
//! the reply to the attach itself, replies to [`ControlClient::ping`],
//! `%exit`, and end of file.
//!
//! Every wait of this process watching a pane of one session shares one
//! client (the [`ControlClient`] each gets is its watch): a client per
//! wait was a process, a thread and a client of the user's server per
//! wait, and 300 pane waits on one server slowed it until most of them
//! had no sample. Watches that start together wait, each within its own
//! budget, for the client the first of them starts. The client is closed
//! with its last watch; a watch that comes after the client ended starts a
//! new one.
//!
//! # What the user sees
//!
//! tmux has no hidden client: a control client is a client. What this
//! client achieves:
//!
//! - it never changes the size of any window (`ignore-size`; a control
//!   client has no size of its own anyway);
//! - it cannot type into panes or change anything (`read-only`);
//! - it does not take over the user's terminal, status line or current
//!   session (it is a separate client on a pipe);
//! - it is closed when the last [`ControlClient`] watching through it is
//!   dropped: stdin is closed (tmux detaches) and its process group is
//!   killed and reaped, at once, or on a thread of its own while an attach
//!   to the same server is pending (see below).
//!
//! What it cannot avoid while it lives: `list-clients` lists it (with
//! `#{client_control_mode}` = 1 and the flags above), `#{session_attached}`
//! counts it (so `tmux ls` shows the session as attached), and
//! `client-attached` / `client-detached` hooks run. A wait that must leave no
//! trace should poll instead of attaching.
//!
//! `no-output` would hide it from nothing and would also stop `%output`, so
//! it is not used; output of other panes of the session is read and dropped.
//!
//! # Why attaches and closes of one server never overlap
//!
//! tmux (3.3a here; up to 3.5a per tmux/tmux#4980) crashes (SIGSEGV, every
//! session of the user lost) when a control client leaves while another
//! control client is between the start and the end of its handshake: the
//! loss runs the `%client-detached` notification for every client flagged
//! as control mode, and the one still in its handshake has no control
//! state yet (a NULL dereference in `control_write`). tmux spreads one
//! handshake over several turns of its loop, so a hundred waits attaching
//! and ending together on one server hit it most of the time, whether the
//! leaving client is killed or detached gently. So, per server (its
//! socket, however it is named: no socket name and `default` reach the
//! same one) in this process, a gate:
//!
//! - an attach enters only while none of our clients is closing, and
//!   counts as attaching until tmux answered it (the handshake is over
//!   then); attaches run side by side;
//! - a close waits until none is attaching; closes run side by side, and
//!   new attaches wait for them (a close is a kill and a reap);
//! - a client whose attach was never answered (its budget passed, or the
//!   wait was cancelled) is not killed in its handshake, which crashes
//!   tmux as well (tmux/tmux#5004): it is closed on a thread of its own
//!   once tmux answered, within [`LAST_RESORT`] after which it is killed
//!   anyway;
//! - a close that would have to wait is done on a thread of its own, so
//!   dropping a client never holds a wait past its deadline.
//!
//! A close ends only when the client process is reaped: tmux then sees the
//! end of its connection before any later client connects, and handles it
//! before reading that client's handshake. Clients of other processes (a
//! second host, a terminal using `tmux -CC`) are beyond the gate.

use super::socket_key::{PerServer, SocketKey};
use super::{gave_up, PaneFacts, Tmux, TmuxError};
use crate::sync::{Condvar, Mutex};
use crate::CancelToken;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Called (on the client's reader thread) when the watched pane gets
/// output. Keep it short: e.g. send on a channel or call the wait's `wake()`.
pub type WakeFn = Box<dyn Fn() + Send + Sync>;

/// Health of a [`ControlClient`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlState {
    /// Started, the attach has not been answered yet.
    Attaching,
    /// Attached and reading notifications.
    Attached,
    /// The attach failed (tmux's message).
    Failed(String),
    /// The client ended after attaching (server gone, session closed, or
    /// closed by us); the reason tmux gave, if any.
    Exited(String),
}

struct Shared {
    state: Mutex<ControlState>,
    changed: Condvar,
    replies: AtomicU64,
    /// The watched panes: who to wake on their `%output`, and how many
    /// came.
    panes: Mutex<HashMap<String, Watchers>>,
}

/// The waits watching one pane through a connection.
#[derive(Default)]
struct Watchers {
    wakes: Vec<(u64, WakeFn)>,
    outputs: u64,
    last_output: Option<Instant>,
    /// When a watch last took the turn to check the pane.
    check_begun: Option<Instant>,
    /// The last capture of the pane by a watch while attached, and when.
    checked: Option<(Instant, PaneFacts)>,
}

/// Whose turn it is to check a pane that printed nothing for a while; see
/// [`ControlClient::check_turn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckTurn {
    /// The caller's: ping the client and capture the pane, then record it
    /// with [`ControlClient::checked`].
    Yours,
    /// Another watch captured the pane recently and found these facts.
    Recent(PaneFacts),
    /// Another watch took the turn recently and is checking.
    UnderWay,
}

/// Longest time a client whose attach was never answered is given to get
/// through tmux's handshake before it is killed anyway, and longest time a
/// close waits for attaches of the same server to be answered.
pub const LAST_RESORT: Duration = Duration::from_secs(5);

/// Our control clients of one tmux server; see the [module docs](self).
#[derive(Default)]
struct GateState {
    /// Clients started and not yet answered: in tmux's handshake, maybe.
    attaching: usize,
    /// Clients being killed and reaped.
    closing: usize,
    /// Closes waiting for the attaches to be answered.
    closers_waiting: usize,
}

#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

/// The gate of the server `tmux` reaches.
fn gate_for(tmux: &Tmux) -> Arc<Gate> {
    static GATES: OnceLock<PerServer<Gate>> = OnceLock::new();
    let key = SocketKey::of(tmux.socket_path());
    GATES.get_or_init(PerServer::new).get(key)
}

/// One client counted as attaching; uncounted when dropped.
struct Attaching(Arc<Gate>);

/// One client counted as closing; uncounted when dropped.
struct Closing(Arc<Gate>);

impl Gate {
    /// Counts a new client as attaching once no close runs or waits; `None`
    /// when `deadline` passes first or `cancel` is cancelled.
    fn attach(self: &Arc<Self>, deadline: Instant, cancel: &CancelToken) -> Option<Attaching> {
        let mut state = self.state.lock();
        while state.closing > 0 || state.closers_waiting > 0 {
            let now = Instant::now();
            if cancel.is_cancelled() || now >= deadline {
                return None;
            }
            self.changed
                .wait_for(&mut state, crate::process::CANCEL_SLICE.min(deadline - now));
        }
        state.attaching += 1;
        Some(Attaching(Arc::clone(self)))
    }

    /// Counts a close when no attach is pending now.
    fn try_close(self: &Arc<Self>) -> Option<Closing> {
        let mut state = self.state.lock();
        (state.attaching == 0 && state.closers_waiting == 0).then(|| {
            state.closing += 1;
            Closing(Arc::clone(self))
        })
    }

    /// Counts a close once no attach is pending, or once `deadline` passed.
    fn close(self: &Arc<Self>, deadline: Instant) -> Closing {
        let mut state = self.state.lock();
        state.closers_waiting += 1;
        while state.attaching > 0 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            self.changed.wait_for(&mut state, deadline - now);
        }
        state.closers_waiting -= 1;
        state.closing += 1;
        drop(state);
        self.changed.notify_all();
        Closing(Arc::clone(self))
    }
}

impl Drop for Attaching {
    fn drop(&mut self) {
        self.0.state.lock().attaching -= 1;
        self.0.changed.notify_all();
    }
}

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.state.lock().closing -= 1;
        self.0.changed.notify_all();
    }
}

/// One wait's watch on a pane through a control-mode client; see the
/// [module docs](self). Dropping it ends the watch, and the client with the
/// last watch on it.
pub struct ControlClient {
    pane_id: String,
    watch: u64,
    connection: Arc<Connection>,
}

/// One `tmux -C` process and the thread reading it, shared by every wait
/// of this process watching a pane of its session.
struct Connection {
    pid: u32,
    child: Mutex<Option<Child>>,
    stdin: Mutex<Option<ChildStdin>>,
    reader: Mutex<Option<JoinHandle<()>>>,
    shared: Arc<Shared>,
    gate: Arc<Gate>,
}

/// A session of a server: the connections this process can share.
type ConnectionKey = (SocketKey, String);

/// A session's entry among this process's connections.
enum Entry {
    /// A watch is starting the session's client; others wait for it.
    Connecting,
    /// The session's client, while some watch holds it.
    Live(Weak<Connection>),
}

/// The connections of this process, one per server and session, so that
/// watches starting together share one client instead of each starting one.
#[derive(Default)]
struct Registry {
    entries: Mutex<HashMap<ConnectionKey, Entry>>,
    changed: Condvar,
}

/// This process's registry; `None` in a forked child, which neither reads
/// its parent's clients (their readers are not there) nor takes a lock that
/// may have been held at the fork: its watches start clients of their own.
fn registry() -> Option<&'static Registry> {
    static REGISTRY: OnceLock<(u32, Registry)> = OnceLock::new();
    let (owner, registry) = REGISTRY.get_or_init(|| (std::process::id(), Registry::default()));
    (*owner == std::process::id()).then_some(registry)
}

impl Registry {
    /// The client of `key` that is attaching or attached; else one `connect`
    /// starts. While another watch starts it, waits for that one, until
    /// `deadline` or `cancel` (then `gave_up`'s error).
    fn share_or_connect(
        &self,
        key: ConnectionKey,
        deadline: Instant,
        cancel: &CancelToken,
        gave_up: impl Fn() -> TmuxError,
        connect: impl FnOnce() -> Result<Connection, TmuxError>,
    ) -> Result<Arc<Connection>, TmuxError> {
        let mut entries = self.entries.lock();
        let mut waited = false;
        let ended = loop {
            let live = match entries.get(&key) {
                Some(Entry::Connecting) => {
                    let now = Instant::now();
                    if cancel.is_cancelled() || now >= deadline {
                        return Err(gave_up());
                    }
                    let slice = super::CANCEL_CHECK.min(deadline - now);
                    self.changed.wait_for(&mut entries, slice);
                    waited = true;
                    continue;
                }
                Some(Entry::Live(weak)) => weak.upgrade(),
                None => None,
            };
            match live {
                // The start this watch waited for answers it, failed or not
                // (a session that does not exist fails every watch at once).
                Some(connection) if waited || connection.usable() => return Ok(connection),
                ended => break ended,
            }
        };
        entries.retain(|_, entry| match entry {
            Entry::Connecting => true,
            Entry::Live(weak) => weak.strong_count() > 0,
        });
        entries.insert(key.clone(), Entry::Connecting);
        drop(entries);
        // Its close may reap a process: never under the registry's lock.
        drop(ended);
        let claim = Claim {
            registry: self,
            key,
        };
        let connection = Arc::new(connect()?);
        claim.fulfil(&connection);
        Ok(connection)
    }
}

/// A watch's claim to start a session's client. Dropped unfulfilled (the
/// start failed), it lets a waiting watch try in its turn.
struct Claim<'a> {
    registry: &'a Registry,
    key: ConnectionKey,
}

impl Claim<'_> {
    fn fulfil(self, connection: &Arc<Connection>) {
        let entry = Entry::Live(Arc::downgrade(connection));
        self.registry.entries.lock().insert(self.key.clone(), entry);
        self.registry.changed.notify_all();
        // Drop now finds the entry live and leaves it.
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut entries = self.registry.entries.lock();
        if matches!(entries.get(&self.key), Some(Entry::Connecting)) {
            entries.remove(&self.key);
        }
        drop(entries);
        self.registry.changed.notify_all();
    }
}

static NEXT_WATCH: AtomicU64 = AtomicU64::new(1);

impl std::fmt::Debug for ControlClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlClient")
            .field("pane_id", &self.pane_id)
            .field("pid", &self.connection.pid)
            .field("state", &self.state())
            .finish()
    }
}

impl Tmux {
    /// Watches `pane_id` through a control client attached to `session_id`
    /// (the session the pane was resolved through,
    /// [`super::PaneRef::session_id`]), calling `wake` on every `%output`
    /// of the pane. Every watch of this process on one session of a server
    /// shares one client. Returns once tmux answered the client's attach,
    /// or an error if it refused (no server, no such session), or `budget`
    /// passed, or `cancel` was cancelled; no process is left behind then.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use waitfor::tmux::Tmux;
    /// let (tx, rx) = crossbeam_channel::bounded::<()>(1);
    /// let client = Tmux::new().control_attach("$0", "%0", Box::new(move || { let _ = tx.try_send(()); }),
    ///     Duration::from_secs(2), &waitfor::CancelToken::new())?;
    /// rx.recv_timeout(Duration::from_secs(5)).ok(); // woken by output
    /// drop(client); // detached and gone
    /// # Ok::<(), waitfor::tmux::TmuxError>(())
    /// ```
    pub fn control_attach(
        &self,
        session_id: &str,
        pane_id: &str,
        wake: WakeFn,
        budget: Duration,
        cancel: &CancelToken,
    ) -> Result<ControlClient, TmuxError> {
        let deadline = super::deadline_in(budget);
        let program = self.argv(&[]).swap_remove(0);
        let key = (SocketKey::of(self.socket_path()), session_id.to_string());
        let connect = || self.connect(session_id, deadline, budget, cancel);
        let connection = match registry() {
            Some(registry) => {
                let gave_up = || gave_up(&program, budget, cancel);
                registry.share_or_connect(key, deadline, cancel, gave_up, connect)?
            }
            None => Arc::new(connect()?),
        };
        let client = ControlClient::watch(connection, pane_id, wake);
        // Wait for the answer to the attach (at once when shared after it).
        let shared = &client.connection.shared;
        let mut state = shared.state.lock();
        loop {
            match &*state {
                ControlState::Attached => break,
                ControlState::Failed(msg) | ControlState::Exited(msg) => {
                    let msg = msg.clone();
                    drop(state);
                    return Err(classify_attach_error(self, session_id, msg));
                }
                ControlState::Attaching => {}
            }
            let now = Instant::now();
            if cancel.is_cancelled() || now >= deadline {
                drop(state);
                return Err(gave_up(&program, budget, cancel));
            }
            let slice = crate::process::CANCEL_SLICE.min(deadline - now);
            shared.changed.wait_for(&mut state, slice);
        }
        drop(state);
        Ok(client)
    }

    /// Starts a control client of `session_id`, once no close of ours runs
    /// on its server; its reader counts it as attaching until tmux answers.
    fn connect(
        &self,
        session_id: &str,
        deadline: Instant,
        budget: Duration,
        cancel: &CancelToken,
    ) -> Result<Connection, TmuxError> {
        let gate = gate_for(self);
        let argv = self.argv(&[
            "-N",
            "-C",
            "attach-session",
            "-t",
            session_id,
            "-f",
            "ignore-size,read-only",
        ]);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Not while one of our clients of this server is closing.
        let Some(attaching) = gate.attach(deadline, cancel) else {
            return Err(gave_up(&argv[0], budget, cancel));
        };
        let mut child = cmd.spawn().map_err(|source| {
            TmuxError::Run(crate::process::RunError::Spawn {
                program: argv[0].clone(),
                source,
            })
        })?;
        let shared = Arc::new(Shared {
            state: Mutex::new(ControlState::Attaching),
            changed: Condvar::new(),
            replies: AtomicU64::new(0),
            panes: Mutex::default(),
        });
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let stdin = child.stdin.take();
        let reader_shared = Arc::clone(&shared);
        let reader = std::thread::Builder::new()
            .name("waitfor-tmux-control".into())
            .spawn(move || read_loop(stdout, stderr, &reader_shared, attaching));
        let connection = Connection {
            pid: child.id(),
            child: Mutex::new(Some(child)),
            stdin: Mutex::new(stdin),
            reader: Mutex::new(None),
            shared,
            gate,
        };
        match reader {
            Ok(handle) => *connection.reader.lock() = Some(handle),
            // Dropped, the connection closes the client (the attach is
            // never answered to it: it is given its last resort).
            Err(e) => {
                return Err(TmuxError::Control(format!(
                    "cannot start reader thread: {e}"
                )))
            }
        }
        Ok(connection)
    }
}

fn classify_attach_error(tmux: &Tmux, session_id: &str, msg: String) -> TmuxError {
    match tmux.classify("attach-session", Some(1), msg.clone()) {
        TmuxError::Command { .. } if msg.contains("server exited") || msg.is_empty() => {
            TmuxError::NoServer {
                socket: tmux
                    .socket_name()
                    .map_or("the default socket".into(), |n| format!("socket `{n}`")),
                stderr: msg,
            }
        }
        TmuxError::NoSuchSession(_) => TmuxError::NoSuchSession(session_id.to_string()),
        TmuxError::Command { .. } => TmuxError::Control(format!("cannot attach: {msg}")),
        other => other,
    }
}

impl ControlClient {
    /// Adds a watch of `pane_id` to `connection`.
    fn watch(connection: Arc<Connection>, pane_id: &str, wake: WakeFn) -> Self {
        let watch = NEXT_WATCH.fetch_add(1, Ordering::Relaxed);
        let mut panes = connection.shared.panes.lock();
        panes
            .entry(pane_id.to_string())
            .or_default()
            .wakes
            .push((watch, wake));
        drop(panes);
        Self {
            pane_id: pane_id.to_string(),
            watch,
            connection,
        }
    }

    /// The pane whose output wakes.
    pub fn pane_id(&self) -> &str {
        &self.pane_id
    }

    /// Pid of the `tmux -C` process (also its process group id), shared
    /// with every watch of the same session.
    pub fn pid(&self) -> u32 {
        self.connection.pid
    }

    /// Current health. Anything but [`ControlState::Attached`] means the
    /// wait should poll.
    pub fn state(&self) -> ControlState {
        self.connection.shared.state.lock().clone()
    }

    /// How many `%output` notifications for the pane arrived while it was
    /// watched.
    pub fn outputs(&self) -> u64 {
        let panes = self.connection.shared.panes.lock();
        panes.get(&self.pane_id).map_or(0, |w| w.outputs)
    }

    /// When the last `%output` for the pane arrived.
    pub fn last_output(&self) -> Option<Instant> {
        let panes = self.connection.shared.panes.lock();
        panes.get(&self.pane_id).and_then(|w| w.last_output)
    }

    /// Shares one periodic check of the pane among its watches: a capture
    /// every `every`, whichever watch takes it, stands for all of them
    /// (each would otherwise capture the pane on its own, and 300 waits on
    /// one pane kept its server busy past their deadlines). [`CheckTurn::Yours`]
    /// when no watch checked or took the turn within `every`; the caller
    /// then has it.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use waitfor::tmux::{CheckTurn, ControlClient};
    /// # fn sample(client: &ControlClient, mine: waitfor::tmux::PaneFacts) -> bool {
    /// // Whether this watch's last capture still stands.
    /// match client.check_turn(Duration::from_millis(500)) {
    ///     CheckTurn::Recent(facts) => facts == mine,
    ///     CheckTurn::UnderWay => true,
    ///     CheckTurn::Yours => false, // ping, capture, then client.checked(facts, began)
    /// }
    /// # }
    /// ```
    pub fn check_turn(&self, every: Duration) -> CheckTurn {
        let now = Instant::now();
        let recent = |at: Option<Instant>| at.is_some_and(|at| now.duration_since(at) < every);
        let mut panes = self.connection.shared.panes.lock();
        let Some(watchers) = panes.get_mut(&self.pane_id) else {
            return CheckTurn::Yours;
        };
        match watchers.checked {
            Some((at, facts)) if recent(Some(at)) => CheckTurn::Recent(facts),
            _ if recent(watchers.check_begun) => CheckTurn::UnderWay,
            _ => {
                watchers.check_begun = Some(now);
                CheckTurn::Yours
            }
        }
    }

    /// Records a capture of the pane begun at `at`, taken while attached,
    /// for the pane's other watches (see [`ControlClient::check_turn`]).
    pub fn checked(&self, facts: PaneFacts, at: Instant) {
        let mut panes = self.connection.shared.panes.lock();
        if let Some(watchers) = panes.get_mut(&self.pane_id) {
            if watchers.checked.is_none_or(|(last, _)| last <= at) {
                watchers.checked = Some((at, facts));
            }
        }
    }

    /// Marks the client as no longer answering (a ping got no reply within
    /// its whole budget): every watch through it sees it ended and polls,
    /// and no new watch shares it.
    pub fn stopped_answering(&self, reason: &str) {
        let shared = &self.connection.shared;
        let mut state = shared.state.lock();
        if *state == ControlState::Attached {
            *state = ControlState::Exited(reason.to_string());
        }
        drop(state);
        shared.changed.notify_all();
    }

    /// Checks that the client still answers: sends a no-op command and waits
    /// for a reply. Returns the round trip, or an error when the client is
    /// gone or silent (the wait should then fall back to polling).
    pub fn ping(&self, budget: Duration, cancel: &CancelToken) -> Result<Duration, TmuxError> {
        let start = Instant::now();
        let deadline = super::deadline_in(budget);
        let shared = &self.connection.shared;
        let before = shared.replies.load(Ordering::SeqCst);
        {
            let mut stdin = self.connection.stdin.lock();
            let pipe = stdin
                .as_mut()
                .ok_or_else(|| TmuxError::Control("client closed".into()))?;
            pipe.write_all(b"refresh-client\n")
                .and_then(|_| pipe.flush())
                .map_err(|e| TmuxError::Control(format!("client gone: {e}")))?;
        }
        let mut state = shared.state.lock();
        loop {
            if shared.replies.load(Ordering::SeqCst) > before {
                return Ok(start.elapsed());
            }
            if *state != ControlState::Attached {
                return Err(TmuxError::Control(format!(
                    "client not attached: {:?}",
                    *state
                )));
            }
            let now = Instant::now();
            if cancel.is_cancelled() || now >= deadline {
                return Err(TmuxError::Control(format!("no reply within {budget:?}")));
            }
            shared
                .changed
                .wait_for(&mut state, crate::process::CANCEL_SLICE.min(deadline - now));
        }
    }

    /// Ends the watch now (dropping it does the same); the client closes
    /// with its last watch.
    pub fn close(self) {}
}

impl Drop for ControlClient {
    fn drop(&mut self) {
        let mut panes = self.connection.shared.panes.lock();
        if let Some(watchers) = panes.get_mut(&self.pane_id) {
            watchers.wakes.retain(|(watch, _)| *watch != self.watch);
            if watchers.wakes.is_empty() {
                panes.remove(&self.pane_id);
            }
        }
    }
}

impl Connection {
    /// Whether a new watch may share it: attaching or attached.
    fn usable(&self) -> bool {
        matches!(
            *self.shared.state.lock(),
            ControlState::Attaching | ControlState::Attached
        )
    }

    /// Closes the client now when no attach to its server is pending;
    /// otherwise on a thread of its own, once that is safe (see the
    /// [module docs](self)).
    fn shutdown(&mut self) {
        let Some(child) = self.child.lock().take() else {
            return;
        };
        let closer = Closer {
            pid: self.pid,
            child,
            stdin: self.stdin.lock().take(),
            reader: self.reader.lock().take(),
            shared: Arc::clone(&self.shared),
            gate: Arc::clone(&self.gate),
        };
        if *closer.shared.state.lock() != ControlState::Attaching {
            if let Some(closing) = closer.gate.try_close() {
                closer.end(closing);
                return;
            }
        }
        let slot = Arc::new(Mutex::new(Some(closer)));
        let taken = Arc::clone(&slot);
        let spawned = std::thread::Builder::new()
            .name("waitfor-tmux-close".into())
            .spawn(move || {
                if let Some(closer) = taken.lock().take() {
                    closer.end_when_safe();
                }
            });
        if spawned.is_err() {
            if let Some(closer) = slot.lock().take() {
                closer.end_when_safe();
            }
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// What closing a client takes; see [`Connection::shutdown`].
struct Closer {
    pid: u32,
    child: Child,
    stdin: Option<ChildStdin>,
    reader: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    gate: Arc<Gate>,
}

impl Closer {
    /// Waits until tmux answered this client's attach and no attach to the
    /// server is pending (each for [`LAST_RESORT`] at most), then ends it.
    fn end_when_safe(self) {
        let deadline = Instant::now() + LAST_RESORT;
        let mut state = self.shared.state.lock();
        while *state == ControlState::Attaching {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            self.shared.changed.wait_for(&mut state, deadline - now);
        }
        drop(state);
        let closing = self.gate.close(deadline);
        self.end(closing);
    }

    /// Ends the client: once tmux answered its attach, a kill is to tmux
    /// what a detach is (the end of its connection), and it cannot hang.
    fn end(mut self, closing: Closing) {
        drop(self.stdin.take());
        // SAFETY: plain syscall on the group of our own unreaped child.
        unsafe {
            libc::kill(-(self.pid as libc::pid_t), libc::SIGKILL);
        }
        let _ = self.child.wait();
        // tmux holds the other end of the client's stdout until it handles
        // the client's end: a wedged server would hold the close (and the
        // wait it ends) as long. An unfinished reader ends on its own then.
        if let Some(reader) = self.reader.take().filter(JoinHandle::is_finished) {
            let _ = reader.join();
        }
        // Released only now the process is reaped (see the module docs).
        drop(closing);
    }
}

fn set_state(shared: &Shared, state: ControlState) {
    *shared.state.lock() = state;
    shared.changed.notify_all();
}

/// Reads the client's notifications until it ends; `attaching` counts the
/// client as in its handshake until tmux answered the attach.
fn read_loop(
    stdout: Option<std::process::ChildStdout>,
    stderr: Option<std::process::ChildStderr>,
    shared: &Shared,
    attaching: Attaching,
) {
    let mut attaching = Some(attaching);
    let mut block: Option<(bool, Vec<String>)> = None; // (sent by us, body)
    let mut exit_reason = String::new();
    if let Some(stdout) = stdout {
        let mut reader = BufReader::new(stdout);
        let mut raw = Vec::new();
        loop {
            raw.clear();
            match reader.read_until(b'\n', &mut raw) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&raw);
            let line = line.trim_end_matches(['\n', '\r']);
            if let Some((_, body)) = block.as_mut() {
                if line.starts_with("%end ") || line.starts_with("%error ") {
                    let (ours, body) = block.take().unwrap_or_default();
                    let error = line.starts_with("%error ");
                    if ours {
                        shared.replies.fetch_add(1, Ordering::SeqCst);
                        shared.changed.notify_all();
                    } else if attaching.is_some() {
                        if error {
                            set_state(shared, ControlState::Failed(body.join("\n")));
                        } else {
                            set_state(shared, ControlState::Attached);
                        }
                        // Answered: past the handshake.
                        attaching = None;
                    }
                } else {
                    body.push(line.to_string());
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix("%output ") {
                let (pane, _data) = rest.split_once(' ').unwrap_or((rest, ""));
                let mut panes = shared.panes.lock();
                if let Some(watchers) = panes.get_mut(pane) {
                    watchers.outputs += 1;
                    watchers.last_output = Some(Instant::now());
                    for (_, wake) in &watchers.wakes {
                        // A panicking callback must not stop the notifications.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(wake));
                    }
                }
            } else if let Some(rest) = line.strip_prefix("%begin ") {
                let ours = rest.split(' ').nth(2) == Some("1");
                block = Some((ours, Vec::new()));
            } else if line == "%exit" || line.starts_with("%exit ") {
                exit_reason = line.strip_prefix("%exit").unwrap_or("").trim().to_string();
            }
        }
    }
    let mut err_text = String::new();
    if let Some(mut stderr) = stderr {
        let _ = stderr.read_to_string(&mut err_text);
    }
    let reason = [exit_reason, err_text.trim().to_string()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(": ");
    let mut state = shared.state.lock();
    *state = match &*state {
        ControlState::Failed(msg) => ControlState::Failed(msg.clone()),
        ControlState::Attaching => ControlState::Failed(reason),
        _ => ControlState::Exited(reason),
    };
    drop(state);
    shared.changed.notify_all();
    drop(attaching);
}

/// Decodes the octal escapes (`\ooo`, `\\`) of a control-mode `%output`
/// payload into the pane's raw bytes.
///
/// ```
/// assert_eq!(waitfor::tmux::decode_output(r"hi\015\012\\"), b"hi\r\n\\");
/// ```
pub fn decode_output(data: &str) -> Vec<u8> {
    let b = data.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let oct = b
                .get(i + 1..i + 4)
                .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
            if let Some(d) = oct {
                let v = (u32::from(d[0] - b'0') << 6)
                    | (u32::from(d[1] - b'0') << 3)
                    | u32::from(d[2] - b'0');
                out.push(v as u8);
                i += 4;
                continue;
            }
            if b.get(i + 1) == Some(&b'\\') {
                out.push(b'\\');
                i += 2;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_that_reaches_one_server_shares_its_gate() {
        let (tmux, run) = super::super::test_server("gate");
        let name = tmux.socket_name().unwrap().to_string();
        let socket = run(&["display-message", "-p", "#{socket_path}"]);
        // As tmux finds it.
        assert_eq!(tmux.socket_path().to_str(), Some(socket.trim()));
        // SAFETY: getuid only reads the process's user id.
        let uid = unsafe { libc::getuid() };
        let by_path = Tmux::new().with_socket_name(format!("../tmux-{uid}/./{name}"));
        assert!(Arc::ptr_eq(&gate_for(&tmux), &gate_for(&by_path)));
        let other = Tmux::new().with_socket_name(format!("{name}-other"));
        assert!(!Arc::ptr_eq(&gate_for(&tmux), &gate_for(&other)));
        // No name is the name `default`, whether or not a server runs.
        let default = Tmux::new().with_socket_name("default");
        assert_eq!(
            SocketKey::of(Tmux::new().socket_path()),
            SocketKey::of(default.socket_path())
        );
        run(&["kill-server"]);
    }
}
