//! At most [`CALLS_PER_SERVER`] tmux invocations of this process in flight
//! per server.
//!
//! A tmux server answers its clients one command at a time, so more
//! clients at once do not answer sooner: they are only more processes
//! contending for the CPU. 300 pane waits starting together on one server
//! kept some 270 threads and processes runnable, and the engine's own
//! threads got the CPU too late to end the waits at their deadlines. A
//! call beyond the limit waits for its turn, behind the calls already
//! waiting, within its own budget; it leaves the queue within
//! [`super::CANCEL_CHECK`] of its cancel token's cancel. Control-mode
//! clients (`tmux -C`, long-lived) take no turn.
//!
//! A call whose budget ends before its turn tells why ([`NoTurn`]): when
//! calls ahead of it got answers meanwhile the server was only busy with
//! this process's other calls; when none did, the server is not answering.

use super::socket_key::{PerServer, SocketKey};
use super::CANCEL_CHECK;
use crate::sync::{Condvar, Mutex};
use crate::CancelToken;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The least time left worth starting a tmux call for.
const MIN_CALL_TIME: Duration = Duration::from_millis(1);

/// Most tmux invocations of this process in flight on one server.
pub const CALLS_PER_SERVER: usize = 4;

/// The invocations of one server: in flight, and waiting for a turn.
#[derive(Default)]
struct Server {
    calls: Mutex<Calls>,
    freed: Condvar,
}

#[derive(Default)]
struct Calls {
    in_flight: usize,
    waiting: usize,
    /// Calls that got tmux's answer, ever (wrapping).
    answers: u64,
}

/// One invocation's turn; the next call's when dropped.
pub(super) struct Turn {
    server: Arc<Server>,
    answered: bool,
}

impl Turn {
    /// Notes that tmux answered this call (it exited, whatever its status).
    pub(super) fn answered(&mut self) {
        self.answered = true;
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut calls = self.server.calls.lock();
        calls.in_flight -= 1;
        if self.answered {
            calls.answers = calls.answers.wrapping_add(1);
        }
        drop(calls);
        self.server.freed.notify_one();
    }
}

/// The server at a socket, as this process's calls meet it.
fn server_at(socket: PathBuf) -> Arc<Server> {
    static SERVERS: OnceLock<PerServer<Server>> = OnceLock::new();
    SERVERS
        .get_or_init(PerServer::new)
        .get(SocketKey::of(socket))
}

/// Tells whether tmux answered any call of this process on one server
/// between its making and the first question: every reader of one wait's
/// end gets the same answer. Clones share it.
#[derive(Clone)]
pub(crate) struct AnsweredSince {
    server: Arc<Server>,
    answers: u64,
    settled: Arc<OnceLock<bool>>,
}

impl AnsweredSince {
    /// From now on, for the server at `socket`.
    pub(crate) fn now(socket: PathBuf) -> Self {
        let server = server_at(socket);
        let answers = server.calls.lock().answers;
        Self {
            server,
            answers,
            settled: Arc::default(),
        }
    }

    /// Whether tmux answered a call of this process there, up to the
    /// first time this was asked.
    pub(crate) fn any(&self) -> bool {
        *self
            .settled
            .get_or_init(|| self.server.calls.lock().answers != self.answers)
    }
}

/// Why a call got no turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NoTurn {
    /// Its cancel token was cancelled.
    Cancelled,
    /// Its deadline passed while tmux answered calls ahead of it.
    Busy,
    /// Its deadline passed and tmux answered no call of this process
    /// meanwhile.
    Silent,
}

/// A turn to call the server at `socket`, once fewer than
/// [`CALLS_PER_SERVER`] calls are in flight there and the calls that
/// came first have theirs, with at least [`MIN_CALL_TIME`] left before
/// `deadline`; else why not.
pub(super) fn take(
    socket: PathBuf,
    deadline: Instant,
    cancel: &CancelToken,
) -> Result<Turn, NoTurn> {
    let server = server_at(socket);
    let mut calls = server.calls.lock();
    let answers_before = calls.answers;
    // Behind the calls already waiting: a newcomer never takes the turn
    // a freed call handed to one of them.
    let mut gave_up = false;
    if calls.in_flight >= CALLS_PER_SERVER || calls.waiting > 0 {
        calls.waiting += 1;
        loop {
            let now = Instant::now();
            if cancel.is_cancelled() || now >= deadline {
                gave_up = true;
                break;
            }
            server
                .freed
                .wait_for(&mut calls, CANCEL_CHECK.min(deadline - now));
            if calls.in_flight < CALLS_PER_SERVER {
                break;
            }
        }
        calls.waiting -= 1;
    }
    // A turn that came with no time left would start tmux only to kill it.
    let late = deadline.saturating_duration_since(Instant::now()) < MIN_CALL_TIME;
    if gave_up || late {
        let answered = calls.answers != answers_before;
        drop(calls);
        // The turn this one may have been woken for goes on.
        server.freed.notify_one();
        return Err(match (cancel.is_cancelled(), answered) {
            (true, _) => NoTurn::Cancelled,
            (false, true) => NoTurn::Busy,
            (false, false) => NoTurn::Silent,
        });
    }
    calls.in_flight += 1;
    drop(calls);
    Ok(Turn {
        server,
        answered: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn all_turns(socket: &std::path::Path) -> Vec<Turn> {
        let far = Instant::now() + Duration::from_secs(60);
        (0..CALLS_PER_SERVER)
            .map(|_| {
                take(socket.to_path_buf(), far, &CancelToken::new())
                    .ok()
                    .unwrap()
            })
            .collect()
    }

    /// Behind calls tmux never answers, a call out of budget is told the
    /// server is silent; a cancelled one, that it was cancelled. Only
    /// calls tmux answered count as answers, and a reader keeps its first
    /// answer.
    #[test]
    fn a_call_without_a_turn_tells_why() {
        let socket = PathBuf::from(format!("/nonexistent/turns-{}", std::process::id()));
        let mut held = all_turns(&socket);
        let soon = || Instant::now() + Duration::from_millis(10);
        let silent = take(socket.clone(), soon(), &CancelToken::new());
        assert_eq!(silent.err(), Some(NoTurn::Silent));
        let cancelled = CancelToken::new();
        cancelled.cancel();
        assert_eq!(
            take(socket.clone(), soon(), &cancelled).err(),
            Some(NoTurn::Cancelled)
        );

        let unanswered = AnsweredSince::now(socket.clone());
        let answered = AnsweredSince::now(socket.clone());
        drop(held.pop());
        assert!(!unanswered.any());
        held[0].answered();
        drop(held.remove(0));
        assert!(answered.any());
        assert!(!unanswered.any(), "a reader keeps its first answer");
    }
}
