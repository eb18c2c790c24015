//! A tmux control-mode client that wakes a wait when a pane gets output.
//!
//! [`Tmux::control_attach`] starts `tmux -N -C attach-session -t SESSION -f
//! ignore-size,read-only` (`-N`: never start a server) in a process group of
//! its own and reads its notifications on a thread. Each `%output %N ...` line for the watched pane
//! calls the wake callback. Everything else is ignored except what tells the
//! client's health: the reply to the attach itself, replies to
//! [`ControlClient::ping`], `%exit`, and end of file.
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
//! - it is closed when the [`ControlClient`] is dropped: stdin is closed (tmux
//!   detaches) and its process group is killed and reaped.
//!
//! What it cannot avoid while it lives: `list-clients` lists it (with
//! `#{client_control_mode}` = 1 and the flags above), `#{session_attached}`
//! counts it (so `tmux ls` shows the session as attached), and
//! `client-attached` / `client-detached` hooks run. A wait that must leave no
//! trace should poll instead of attaching.
//!
//! `no-output` would hide it from nothing and would also stop `%output`, so
//! it is not used; output of other panes of the session is read and dropped.

use super::{Tmux, TmuxError};
use crate::sync::{Condvar, Mutex};
use crate::CancelToken;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
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
    outputs: AtomicU64,
    last_output: Mutex<Option<Instant>>,
}

/// A running control-mode client; see the [module docs](self). Dropping it
/// closes it.
pub struct ControlClient {
    pane_id: String,
    pid: u32,
    child: Option<Child>,
    stdin: Mutex<Option<ChildStdin>>,
    reader: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ControlClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlClient")
            .field("pane_id", &self.pane_id)
            .field("pid", &self.pid)
            .field("state", &self.state())
            .finish()
    }
}

impl Tmux {
    /// Attaches a control client to `session_id` (the session the pane was
    /// resolved through, [`super::PaneRef::session_id`]) and calls `wake` on
    /// every `%output` of `pane_id`. Returns once tmux answered the attach,
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
        let deadline = Instant::now() + budget;
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
            outputs: AtomicU64::new(0),
            last_output: Mutex::new(None),
        });
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let stdin = child.stdin.take();
        let reader_shared = Arc::clone(&shared);
        let watched = pane_id.to_string();
        let reader = std::thread::Builder::new()
            .name("waitfor-tmux-control".into())
            .spawn(move || read_loop(stdout, stderr, &watched, &wake, &reader_shared));
        let mut client = ControlClient {
            pane_id: pane_id.to_string(),
            pid: child.id(),
            child: Some(child),
            stdin: Mutex::new(stdin),
            reader: None,
            shared,
        };
        match reader {
            Ok(handle) => client.reader = Some(handle),
            Err(e) => {
                return Err(TmuxError::Control(format!(
                    "cannot start reader thread: {e}"
                )))
            }
        }
        // Wait for the answer to the attach.
        let mut state = client.shared.state.lock();
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
            if cancel.is_cancelled() {
                drop(state);
                return Err(TmuxError::Run(crate::process::RunError::Cancelled {
                    program: argv[0].clone(),
                }));
            }
            let now = Instant::now();
            if now >= deadline {
                drop(state);
                return Err(TmuxError::Run(crate::process::RunError::TimedOut {
                    program: argv[0].clone(),
                    budget,
                }));
            }
            let slice = crate::process::CANCEL_SLICE.min(deadline - now);
            client.shared.changed.wait_for(&mut state, slice);
        }
        drop(state);
        Ok(client)
    }
}

fn classify_attach_error(tmux: &Tmux, session_id: &str, msg: String) -> TmuxError {
    match tmux.classify("attach-session", Some(1), msg.clone()) {
        TmuxError::Command { .. } if msg.contains("server exited") || msg.is_empty() => {
            TmuxError::NoServer {
                socket: tmux
                    .socket_name()
                    .map_or("the default socket".into(), |n| format!("socket `{n}`")),
            }
        }
        TmuxError::NoSuchSession(_) => TmuxError::NoSuchSession(session_id.to_string()),
        TmuxError::Command { .. } => TmuxError::Control(format!("cannot attach: {msg}")),
        other => other,
    }
}

impl ControlClient {
    /// The pane whose output wakes.
    pub fn pane_id(&self) -> &str {
        &self.pane_id
    }

    /// Pid of the `tmux -C` process (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Current health. Anything but [`ControlState::Attached`] means the
    /// wait should poll.
    pub fn state(&self) -> ControlState {
        self.shared.state.lock().clone()
    }

    /// How many `%output` notifications for the pane arrived.
    pub fn outputs(&self) -> u64 {
        self.shared.outputs.load(Ordering::Relaxed)
    }

    /// When the last `%output` for the pane arrived.
    pub fn last_output(&self) -> Option<Instant> {
        *self.shared.last_output.lock()
    }

    /// Checks that the client still answers: sends a no-op command and waits
    /// for its reply. Returns the round trip, or an error when the client is
    /// gone or silent (the wait should then fall back to polling).
    pub fn ping(&self, budget: Duration, cancel: &CancelToken) -> Result<Duration, TmuxError> {
        let start = Instant::now();
        let deadline = start + budget;
        let before = self.shared.replies.load(Ordering::SeqCst);
        {
            let mut stdin = self.stdin.lock();
            let pipe = stdin
                .as_mut()
                .ok_or_else(|| TmuxError::Control("client closed".into()))?;
            pipe.write_all(b"refresh-client\n")
                .and_then(|_| pipe.flush())
                .map_err(|e| TmuxError::Control(format!("client gone: {e}")))?;
        }
        let mut state = self.shared.state.lock();
        loop {
            if self.shared.replies.load(Ordering::SeqCst) > before {
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
            self.shared
                .changed
                .wait_for(&mut state, crate::process::CANCEL_SLICE.min(deadline - now));
        }
    }

    /// Closes the client now (dropping it does the same).
    pub fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // EOF on stdin makes tmux detach; the kill covers a client that hangs.
        drop(self.stdin.lock().take());
        if let Some(mut child) = self.child.take() {
            // SAFETY: plain syscall on the group of our own unreaped child.
            unsafe {
                libc::kill(-(self.pid as libc::pid_t), libc::SIGKILL);
            }
            let _ = child.wait();
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

impl Drop for ControlClient {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn set_state(shared: &Shared, state: ControlState) {
    *shared.state.lock() = state;
    shared.changed.notify_all();
}

fn read_loop(
    stdout: Option<std::process::ChildStdout>,
    stderr: Option<std::process::ChildStderr>,
    watched: &str,
    wake: &WakeFn,
    shared: &Shared,
) {
    let mut block: Option<(bool, Vec<String>)> = None; // (sent by us, body)
    let mut attached = false;
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
                    } else if !attached {
                        if error {
                            set_state(shared, ControlState::Failed(body.join("\n")));
                        } else {
                            attached = true;
                            set_state(shared, ControlState::Attached);
                        }
                    }
                } else {
                    body.push(line.to_string());
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix("%output ") {
                let (pane, _data) = rest.split_once(' ').unwrap_or((rest, ""));
                if pane == watched {
                    shared.outputs.fetch_add(1, Ordering::Relaxed);
                    *shared.last_output.lock() = Some(Instant::now());
                    // A panicking callback must not stop the notifications.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(wake));
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
    shared.changed.notify_all();
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
