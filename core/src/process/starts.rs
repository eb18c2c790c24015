//! At most [`STARTS_PER_CORE`] commands a core starting at once, process-wide.
//!
//! Starting a program (`exec`, the dynamic loader, a shell's start-up) is
//! the costly part of most commands a wait runs. A thousand command waits
//! starting theirs together keep hundreds of new processes runnable, and
//! the engine's own threads got the CPU too late to end the waits at their
//! deadlines: 1,000 waits on `sh -c "echo x; sleep 0.3"` ended 0.3-0.7 s
//! late (hostile bench, "many-commands").
//!
//! A run takes a turn before it starts its command and gives it back when
//! the command exits or has run for [`START_WINDOW`], whichever comes
//! first. So a command that runs long, or hangs, holds no turn: it never
//! keeps another wait's command from starting, and a thousand of them
//! still start at least [`STARTS_PER_CORE`] a core every window. Turns go
//! in arrival order; a run waits for its turn within its own budget and
//! leaves the queue at once when its token is cancelled.
//!
//! Tmux client calls go ahead of commands ([`Queue::Tmux`]): each holds a
//! turn of its server too (at most four a server), and a pane wait's
//! samples would otherwise wait behind every command queued: 400 waits
//! rerunning `sleep 0.05` kept any run from starting for a second.
//!
//! A run may note in a [`StartLog`] how long it waited for its turn: a
//! wait whose commands spent much of its time so was starved by this
//! process's other commands, and says so in its result.

use crate::sync::Mutex;
use crate::CancelToken;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

/// Commands a core may have starting at once.
const STARTS_PER_CORE: usize = 4;

/// How long a command keeps its turn if it has not exited by then: a
/// shell and what it starts first are running by this time. It trades
/// deadlines for starts: 1,000 waits on `sh -c "echo x; sleep 0.3"` with
/// 1 s deadlines end p99 about 24 ms past them at 20 ms, 55-65 ms at 5 ms;
/// but at 20 ms a turn starts 50 long-running commands a second, and 228
/// of 500 such waits from Python's `wait_async` ended with no sample
/// (none at 5 ms).
const START_WINDOW: Duration = Duration::from_millis(20);

/// Turns to start commands.
pub(super) struct Gate {
    state: Mutex<GateState>,
    /// Turns in all.
    turns: usize,
}

struct GateState {
    free: usize,
    /// Runs waiting, by [`Queue`]: `Tmux`'s get turns first.
    queues: [VecDeque<Arc<Ticket>>; 2],
}

/// Which queue a run waits in for its turn.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Queue {
    /// Commands a caller named, in arrival order.
    Commands = 0,
    /// Tmux client calls, ahead of commands: short, and already few (see
    /// `tmux/turns.rs`).
    #[cfg(unix)]
    Tmux = 1,
}

/// A run waiting for its turn.
#[derive(Default)]
struct Ticket {
    /// Set, under the gate's lock, when a turn is handed to this run.
    granted: AtomicBool,
    /// Woken by a hand-over, or by the run's cancel.
    wake: CancelToken,
}

/// The process's gate, with the process that made it. A forked child
/// starts its commands without it: a parent's thread may have held its
/// lock at the fork, and then holds it in the child for good.
static GATE: LazyLock<(u32, Gate)> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (std::process::id(), Gate::new(STARTS_PER_CORE * cores))
});

/// A turn from the process's gate (see [`Gate::take`]); at once in a
/// forked child.
pub(super) fn take(
    queue: Queue,
    deadline: Option<Instant>,
    cancel: &CancelToken,
    log: Option<&StartLog>,
) -> Option<StartTurn> {
    let (owner, gate) = &*GATE;
    if *owner != std::process::id() {
        return Some(StartTurn { gate: None });
    }
    gate.take(queue, deadline, cancel, log)
}

/// How many commands this process starts at once: [`STARTS_PER_CORE`] a
/// core.
pub(crate) fn turns() -> usize {
    GATE.1.turns
}

/// How one wait's runs fared at the gate: how long they waited for their
/// turns, and how many started. Clones share it.
#[derive(Clone, Default)]
pub(crate) struct StartLog(Arc<Mutex<Log>>);

#[derive(Default)]
struct Log {
    seen: Starts,
    /// Since when a run waits for its turn, if one does.
    waiting: Option<Instant>,
}

/// What a [`StartLog`] tells.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct Starts {
    /// How long the runs waited for a turn, the wait of a run still
    /// waiting included (as it stood when read).
    pub waited: Duration,
    /// Runs that got their turn and started their command.
    pub started: u64,
    /// The most runs waiting ahead of one of these when it joined the
    /// queue.
    pub ahead: usize,
}

impl StartLog {
    /// What the runs saw up to now.
    pub(crate) fn read(&self) -> Starts {
        let log = self.0.lock();
        let mut seen = log.seen;
        if let Some(since) = log.waiting {
            seen.waited += since.elapsed();
        }
        seen
    }

    fn waiting(&self, ahead: usize) {
        let mut log = self.0.lock();
        log.waiting = Some(Instant::now());
        log.seen.ahead = log.seen.ahead.max(ahead);
    }

    /// A run left the queue, `started` or not.
    fn left(&self, started: bool) {
        let mut log = self.0.lock();
        if let Some(since) = log.waiting.take() {
            log.seen.waited += since.elapsed();
        }
        log.seen.started += u64::from(started);
    }
}

impl std::fmt::Debug for StartLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StartLog")
    }
}

impl Gate {
    fn new(turns: usize) -> Self {
        Self {
            state: Mutex::new(GateState {
                free: turns,
                queues: Default::default(),
            }),
            turns,
        }
    }

    /// A turn, once the runs ahead in `queue`, or in a queue before it,
    /// have theirs; `None` if `cancel` is cancelled or `deadline` passes
    /// first. `log`, if any, notes how long the run waited.
    fn take(
        &'static self,
        queue: Queue,
        deadline: Option<Instant>,
        cancel: &CancelToken,
        log: Option<&StartLog>,
    ) -> Option<StartTurn> {
        let mut state = self.state.lock();
        // A turn is free only while nobody waits (see `give_back`).
        if state.free > 0 {
            state.free -= 1;
            drop(state);
            if let Some(log) = log {
                log.left(true);
            }
            return Some(StartTurn { gate: Some(self) });
        }
        let ticket = Arc::new(Ticket::default());
        let ahead = state.queues.iter().map(VecDeque::len).sum();
        state.queues[queue as usize].push_back(ticket.clone());
        drop(state);
        if let Some(log) = log {
            log.waiting(ahead);
        }
        let _hook = cancel.on_cancel_quick({
            let wake = ticket.wake.clone();
            move || wake.cancel()
        });
        let left = deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        });
        ticket.wake.wait_timeout(left);
        let mut state = self.state.lock();
        if !ticket.granted.load(Ordering::Acquire) {
            state.queues[queue as usize].retain(|queued| !Arc::ptr_eq(queued, &ticket));
            drop(state);
            if let Some(log) = log {
                log.left(false);
            }
            return None;
        }
        drop(state);
        let turn = StartTurn { gate: Some(self) };
        // Handed over as the cancel or the deadline came: passed on (by
        // the drop, out of the lock), for the run would only start its
        // command to kill it.
        let late = cancel.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d);
        if let Some(log) = log {
            log.left(!late);
        }
        (!late).then_some(turn)
    }
}

/// A turn to start a command; handed to the next run when dropped.
pub(super) struct StartTurn {
    /// `None` for a forked child's, which no gate counts.
    gate: Option<&'static Gate>,
}

impl Drop for StartTurn {
    fn drop(&mut self) {
        if let Some(gate) = self.gate {
            gate.state.lock().give_back();
        }
    }
}

impl GateState {
    /// A turn given back: the first waiting run's, tmux calls first, or
    /// a free one.
    fn give_back(&mut self) {
        let [commands, tmux] = &mut self.queues;
        match tmux.pop_front().or_else(|| commands.pop_front()) {
            Some(next) => {
                next.granted.store(true, Ordering::Release);
                next.wake.cancel();
            }
            None => self.free += 1,
        }
    }
}

/// A run's turn while its command starts: given back when the command
/// exits or [`START_WINDOW`] after it started.
pub(super) struct Starting {
    turn: Option<StartTurn>,
    until: Instant,
}

impl Starting {
    /// `turn`, held from now.
    pub(super) fn new(turn: StartTurn) -> Self {
        Self {
            turn: Some(turn),
            until: Instant::now() + START_WINDOW,
        }
    }

    /// When the turn is due back, while it is held.
    pub(super) fn until(&self) -> Option<Instant> {
        self.turn.as_ref().map(|_| self.until)
    }

    /// Gives the turn back if the command exited or its window is over.
    pub(super) fn settle(&mut self, now: Instant, exited: bool) {
        if exited || now >= self.until {
            self.turn = None;
        }
    }
}

/// Test hooks; not part of the API.
pub mod hooks {
    use super::{take, Queue, StartTurn};
    use crate::CancelToken;

    /// Every start turn of this process, held until dropped.
    pub struct HeldTurns {
        _turns: Vec<StartTurn>,
    }

    /// Takes every start turn of this process, once the runs holding or
    /// waiting for one have had theirs: no command of this process starts
    /// until the result is dropped.
    pub fn hold_start_turns() -> HeldTurns {
        let turns = (0..super::GATE.1.turns)
            .map_while(|_| take(Queue::Commands, None, &CancelToken::new(), None))
            .collect();
        HeldTurns { _turns: turns }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn far() -> Option<Instant> {
        Some(Instant::now() + Duration::from_secs(60))
    }

    fn queued(gate: &Gate) -> usize {
        gate.state.lock().queues.iter().map(VecDeque::len).sum()
    }

    fn free(gate: &Gate) -> usize {
        gate.state.lock().free
    }

    /// A run on a thread of its own, returned once it waits in `queue`;
    /// it answers whether it got a turn.
    fn queued_run(
        gate: &'static Gate,
        queue: Queue,
        deadline: Option<Instant>,
        cancel: &CancelToken,
    ) -> std::thread::JoinHandle<bool> {
        let before = queued(gate);
        let cancel = cancel.clone();
        let run = std::thread::spawn(move || gate.take(queue, deadline, &cancel, None).is_some());
        while queued(gate) == before {
            std::thread::yield_now();
        }
        run
    }

    #[test]
    fn turns_go_in_order_within_budget_and_cancel() {
        let gate: &'static Gate = Box::leak(Box::new(Gate::new(2)));
        let mut held: Vec<_> = (0..2)
            .map(|_| {
                gate.take(Queue::Commands, far(), &CancelToken::new(), None)
                    .unwrap()
            })
            .collect();

        // Out of budget: no turn, and the queue is left.
        let soon = Some(Instant::now() + Duration::from_millis(5));
        assert!(gate
            .take(Queue::Commands, soon, &CancelToken::new(), None)
            .is_none());
        assert_eq!(queued(gate), 0);

        // Cancelled while queued: leaves at once, whatever its budget.
        let cancel = CancelToken::new();
        let in_queue = queued_run(gate, Queue::Commands, None, &cancel);
        cancel.cancel();
        assert!(!in_queue.join().unwrap());
        assert_eq!(queued(gate), 0);

        // A freed turn goes to the run that waited, not to a newcomer.
        let waiter = queued_run(gate, Queue::Commands, far(), &CancelToken::new());
        held.pop();
        assert!(waiter.join().unwrap());
        assert_eq!(free(gate), 1, "the waiter's turn was given back");
        drop(held);
        assert_eq!(free(gate), 2);
    }

    #[test]
    fn a_log_tells_how_long_runs_waited_and_how_many_started() {
        let gate: &'static Gate = Box::leak(Box::new(Gate::new(1)));
        let log = StartLog::default();
        let held = gate.take(Queue::Commands, far(), &CancelToken::new(), Some(&log));
        assert!(held.is_some());
        assert_eq!(log.read().started, 1);
        assert_eq!(log.read().waited, Duration::ZERO);
        let waiter = queued_run(gate, Queue::Commands, far(), &CancelToken::new());
        // Behind one waiting run, out of budget.
        let soon = Some(Instant::now() + Duration::from_millis(5));
        assert!(gate
            .take(Queue::Commands, soon, &CancelToken::new(), Some(&log))
            .is_none());
        let seen = log.read();
        assert_eq!((seen.started, seen.ahead), (1, 1));
        assert!(seen.waited > Duration::ZERO, "{seen:?}");
        drop(held);
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn a_turn_that_comes_with_the_cancel_is_passed_on() {
        let gate: &'static Gate = Box::leak(Box::new(Gate::new(0)));
        let cancel = CancelToken::new();
        let in_queue = queued_run(gate, Queue::Commands, None, &cancel);
        {
            // The run is cancelled and given a turn before it looks.
            let mut state = gate.state.lock();
            cancel.cancel();
            state.give_back();
        }
        assert!(!in_queue.join().unwrap(), "a cancelled run kept a turn");
        assert_eq!(free(gate), 1, "the turn was passed on");
    }

    #[test]
    #[cfg(unix)]
    fn tmux_calls_start_ahead_of_commands() {
        let gate: &'static Gate = Box::leak(Box::new(Gate::new(0)));
        let command = queued_run(gate, Queue::Commands, None, &CancelToken::new());
        let tmux = queued_run(gate, Queue::Tmux, None, &CancelToken::new());
        {
            let mut state = gate.state.lock();
            state.give_back();
            let waiting = &state.queues[Queue::Commands as usize];
            assert_eq!(waiting.len(), 1, "the turn went to the command");
        }
        assert!(tmux.join().unwrap());
        // Given back by the tmux call: the command's now.
        assert!(command.join().unwrap());
        assert_eq!(free(gate), 1);
    }

    #[test]
    #[cfg(unix)]
    fn a_forked_child_takes_turns_without_the_lock_its_parent_held() {
        let held = GATE.1.state.lock();
        let took = crate::fork::in_forked_child(Duration::from_secs(20), || {
            take(Queue::Commands, far(), &CancelToken::new(), None).is_some()
        });
        drop(held);
        assert!(took, "the child waited for the lock its parent held");
    }

    #[test]
    fn a_turn_is_given_back_at_exit_or_after_its_window() {
        let gate: &'static Gate = Box::leak(Box::new(Gate::new(2)));
        let mut exits = Starting::new(
            gate.take(Queue::Commands, None, &CancelToken::new(), None)
                .unwrap(),
        );
        assert!(exits.until().is_some());
        exits.settle(Instant::now(), true);
        assert!(exits.until().is_none());

        let mut runs_long = Starting::new(
            gate.take(Queue::Commands, None, &CancelToken::new(), None)
                .unwrap(),
        );
        let due = runs_long.until().unwrap();
        runs_long.settle(due - Duration::from_millis(1), false);
        assert!(runs_long.until().is_some());
        assert_eq!(free(gate), 1);
        runs_long.settle(due, false);
        assert!(runs_long.until().is_none());
        assert_eq!(free(gate), 2);
    }
}
