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
//! A wait's calls may also note in a [`TurnLog`] how long they waited
//! behind calls tmux answered: a wait that spent much of its time so was
//! starved by this process's other waits.

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
    /// When tmux last answered one.
    last_answer: Option<Instant>,
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
            calls.last_answer = Some(Instant::now());
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

/// How long the tmux calls of one user (a pane wait) waited for their
/// turns while tmux answered this process's calls ahead of them. Clones
/// share it.
///
/// Read when the wait ends, it tells a wait starved by this process's
/// other calls on a busy server from one that was not: an idle server's
/// calls never wait, and a stopped server answers none of the calls they
/// wait behind.
#[derive(Clone, Default)]
pub(crate) struct TurnLog(Arc<Mutex<Waits>>);

#[derive(Clone, Default)]
struct Waits {
    /// The waits of calls that left the queue, behind answered calls.
    behind_answers: Duration,
    /// The call waiting now, if one is.
    waiting: Option<Waiting>,
}

/// A call waiting for its turn.
#[derive(Clone)]
struct Waiting {
    server: Arc<Server>,
    /// The server's answers when the call began to wait.
    answers: u64,
    since: Instant,
}

impl Waiting {
    /// How long the call has waited behind calls tmux answered, the
    /// server's answers now being `answers`, the last at `last_answer`:
    /// up to that answer only, so that a server that answered once and
    /// then stopped does not read as busy for the rest of the wait.
    fn behind_answers(&self, answers: u64, last_answer: Option<Instant>) -> Duration {
        match last_answer {
            Some(last) if answers != self.answers => last.saturating_duration_since(self.since),
            _ => Duration::ZERO,
        }
    }
}

impl TurnLog {
    /// The time the calls waited for a turn while tmux answered calls
    /// ahead of them, the wait of a call still waiting included.
    pub(crate) fn waited_behind_answers(&self) -> Duration {
        // Cloned out: the server's lock is never taken under this one.
        let waits = self.0.lock().clone();
        let now = waits.waiting.map_or(Duration::ZERO, |w| {
            let calls = w.server.calls.lock();
            w.behind_answers(calls.answers, calls.last_answer)
        });
        waits.behind_answers + now
    }

    fn waiting(&self, server: &Arc<Server>, answers: u64) {
        self.0.lock().waiting = Some(Waiting {
            server: server.clone(),
            answers,
            since: Instant::now(),
        });
    }

    /// The waiting call left the queue, with its turn or without, the
    /// server's calls as `calls` says.
    fn left(&self, calls: &Calls) {
        let mut waits = self.0.lock();
        if let Some(waiting) = waits.waiting.take() {
            waits.behind_answers += waiting.behind_answers(calls.answers, calls.last_answer);
        }
    }
}

impl std::fmt::Debug for TurnLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TurnLog")
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
/// `deadline`; else why not. `log`, if any, notes how long the call
/// waited behind calls tmux answered.
pub(super) fn take(
    socket: PathBuf,
    deadline: Instant,
    cancel: &CancelToken,
    log: Option<&TurnLog>,
) -> Result<Turn, NoTurn> {
    let server = server_at(socket);
    let mut calls = server.calls.lock();
    let answers_before = calls.answers;
    // Behind the calls already waiting: a newcomer never takes the turn
    // a freed call handed to one of them.
    let mut gave_up = false;
    let queued = calls.in_flight >= CALLS_PER_SERVER || calls.waiting > 0;
    let log = log.filter(|_| queued);
    if queued {
        if let Some(log) = log {
            log.waiting(&server, answers_before);
        }
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
    let answered = calls.answers != answers_before;
    if let Some(log) = log {
        log.left(&calls);
    }
    if gave_up || late {
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
                take(socket.to_path_buf(), far, &CancelToken::new(), None)
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
        let silent = take(socket.clone(), soon(), &CancelToken::new(), None);
        assert_eq!(silent.err(), Some(NoTurn::Silent));
        let cancelled = CancelToken::new();
        cancelled.cancel();
        assert_eq!(
            take(socket.clone(), soon(), &cancelled, None).err(),
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

    /// A log counts the time a call waited behind calls tmux answered,
    /// while it waits and after it left, and nothing for a call behind
    /// calls tmux did not answer, or one that did not wait.
    #[test]
    fn a_turn_log_counts_waits_behind_answered_calls() {
        let socket = PathBuf::from(format!("/nonexistent/turn-log-{}", std::process::id()));
        let held = all_turns(&socket);
        let server = server_at(socket.clone());
        let answer = || {
            let mut calls = server.calls.lock();
            calls.answers += 1;
            calls.last_answer = Some(Instant::now());
        };
        let soon = Instant::now() + Duration::from_millis(10);

        let log = TurnLog::default();
        let call = take(socket.clone(), soon, &CancelToken::new(), Some(&log));
        assert_eq!(call.err(), Some(NoTurn::Silent));
        answer();
        assert_eq!(
            log.waited_behind_answers(),
            Duration::ZERO,
            "behind silence"
        );

        let cancel = CancelToken::new();
        let far = Instant::now() + Duration::from_secs(60);
        let waited = std::thread::scope(|scope| {
            let queued = scope.spawn(|| take(socket.clone(), far, &cancel, Some(&log)));
            let deadline = Instant::now() + Duration::from_secs(20);
            while server.calls.lock().waiting == 0 {
                assert!(Instant::now() < deadline, "the call never queued");
                std::thread::yield_now();
            }
            answer();
            let waiting = log.waited_behind_answers();
            assert!(waiting > Duration::ZERO, "still waiting, behind an answer");
            cancel.cancel();
            assert_eq!(queued.join().unwrap().err(), Some(NoTurn::Cancelled));
            waiting
        });
        let left = log.waited_behind_answers();
        assert!(left >= waited, "{left:?} after {waited:?}");

        drop(held);
        let _turn = take(socket, far, &CancelToken::new(), Some(&log)).ok();
        assert_eq!(
            log.waited_behind_answers(),
            left,
            "a call that did not wait"
        );
    }

    /// A call behind a server that answered once and then stopped waits
    /// behind answers up to that answer only: the rest of its wait is
    /// behind a stuck server, not a busy one.
    #[test]
    fn a_turn_log_stops_counting_at_the_last_answer() {
        let socket = PathBuf::from(format!("/nonexistent/turn-stop-{}", std::process::id()));
        let _held = all_turns(&socket);
        let server = server_at(socket.clone());
        let log = TurnLog::default();
        let cancel = CancelToken::new();
        let far = Instant::now() + Duration::from_secs(60);
        std::thread::scope(|scope| {
            let queued = scope.spawn(|| take(socket.clone(), far, &cancel, Some(&log)));
            let deadline = Instant::now() + Duration::from_secs(20);
            while server.calls.lock().waiting == 0 {
                assert!(Instant::now() < deadline, "the call never queued");
                std::thread::yield_now();
            }
            {
                let mut calls = server.calls.lock();
                calls.answers += 1;
                calls.last_answer = Some(Instant::now());
            }
            let at_answer = log.waited_behind_answers();
            // Time passes with no answer: not a synchronisation.
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(log.waited_behind_answers(), at_answer, "still waiting");
            cancel.cancel();
            assert_eq!(queued.join().unwrap().err(), Some(NoTurn::Cancelled));
            assert_eq!(log.waited_behind_answers(), at_answer, "after it left");
        });
    }
}
