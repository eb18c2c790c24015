//! The host's side of a running wait: its result slot and its controls.

use super::call::ANSWER_WAIT;
use super::queue::Queue;
use super::scheduler::Msg;
use crate::cancel::CancelToken;
use crate::probe::{Answer, Inbox, Waker};
use crate::result::WaitResult;
use crate::sync::{Condvar, Mutex};
use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

thread_local! {
    /// The inbox of the engine whose endings need this thread (its
    /// scheduler or a result delivery thread), as an address; 0 elsewhere.
    static ENDS_WAITS_OF: Cell<usize> = const { Cell::new(0) };
}

/// Marks the calling thread as one that `inbox`'s engine needs to end
/// waits: its scheduler or a result delivery thread. Host code it runs
/// (`AsyncProbe::begin`, cancel hooks, `on_done`, a probe's drop) must
/// not block there for a result of that engine.
pub(crate) fn mark_ending_thread(inbox: &Arc<Queue<Msg>>) {
    ENDS_WAITS_OF.set(Arc::as_ptr(inbox) as usize);
}

/// Whether the calling thread is one `inbox`'s engine needs to end waits.
pub(crate) fn needs_this_thread(inbox: &Arc<Queue<Msg>>) -> bool {
    ENDS_WAITS_OF.get() == Arc::as_ptr(inbox) as usize
}

/// The answer of a wait refused on a thread its ending may need.
fn refused_here() -> WaitResult {
    super::scheduler::error_result(
        "the wait's result was waited for on a thread of the engine that ends waits (its \
         scheduler, which runs AsyncProbe::begin and cancel hooks, or a delivery thread, \
         which runs on_done and drops probes): the result could need that very thread, so \
         it cannot be waited for there; wait from another thread"
            .to_string(),
    )
}

/// Where the scheduler leaves a wait's result, and where the probe says
/// it is gone.
pub(crate) struct Slot {
    /// The process whose engine ends the wait: a forked child has none of
    /// its threads, so no result ever arrives there.
    owner: u32,
    state: Mutex<SlotState>,
    /// Told when the result arrives.
    filled: Condvar,
    /// Told when the probe is dropped. Apart from `filled`: the probe is
    /// dropped just before the result arrives, and a host waiting for the
    /// result must not be woken for nothing in between.
    released: Condvar,
}

#[derive(Default)]
struct SlotState {
    result: Option<WaitResult>,
    /// The probe was dropped: no call of it runs any more.
    released: bool,
}

impl Slot {
    /// An empty slot of this process.
    pub fn new() -> Self {
        Slot {
            owner: std::process::id(),
            state: Mutex::default(),
            filled: Condvar::default(),
            released: Condvar::default(),
        }
    }

    /// In a forked child of the process that started the wait, where no
    /// thread fills the slot: the result it already held at the fork, or
    /// one saying why there is none. Never blocks: a parent's thread may
    /// have held the lock at the fork.
    fn in_forked_child(&self) -> Option<WaitResult> {
        let here = std::process::id();
        if here == self.owner {
            return None;
        }
        let held = self
            .state
            .try_lock()
            .and_then(|mut state| state.result.take());
        Some(held.unwrap_or_else(|| {
            super::scheduler::error_result(format!(
                "this wait was started by process {}, and only that process can wait for \
                 it: process {here} is a child forked from it, where the wait never ends",
                self.owner
            ))
        }))
    }

    pub fn fill(&self, result: WaitResult) {
        self.state.lock().result = Some(result);
        self.filled.notify_all();
    }

    pub fn release(&self) {
        self.state.lock().released = true;
        self.released.notify_all();
    }
}

/// The probe as the engine holds it; when the last holder (the wait, or a
/// worker still inside an abandoned call) lets go, the handle hears.
pub(crate) struct ProbeCell {
    pub probe: Mutex<Calling>,
    pub slot: Arc<Slot>,
    /// The lock every call needs (see [`crate::HostLock`]).
    pub host_lock: Option<Arc<dyn crate::HostLock>>,
    /// What the probe adds to the result (see [`crate::probe::EndNotices`]).
    pub end_notices: Option<crate::probe::EndNotices>,
}

/// A blocking probe with the context its calls get: the context lives as
/// long as the wait and each call only updates its numbers, so a call
/// clones no cancel token.
pub(crate) struct Calling {
    pub probe: Box<dyn crate::probe::Probe>,
    /// Its `cancel` is a child of `ended`: the probe may cancel it, which
    /// does not end the wait.
    pub ctx: crate::probe::ProbeContext,
    /// The wait's token, cancelled when the wait ends.
    pub ended: crate::cancel::CancelToken,
}

impl Drop for ProbeCell {
    fn drop(&mut self) {
        self.slot.release();
    }
}

/// An [`AsyncProbe`](crate::AsyncProbe) as the engine holds it: started on
/// the scheduler thread, so no call of it runs once the wait drops it.
pub(crate) struct DeferredCell {
    pub probe: Box<dyn crate::probe::AsyncProbe>,
    pub slot: Arc<Slot>,
}

impl Drop for DeferredCell {
    fn drop(&mut self) {
        self.slot.release();
    }
}

/// The probe of one wait, by how its calls run.
pub(crate) enum ProbeHolder {
    /// Called on a worker thread, which blocks until it returns.
    Blocking(Arc<ProbeCell>),
    /// Started on the scheduler thread; answers through a [`Reply`](super::Reply).
    Deferred(DeferredCell),
}

/// Cancels or wakes a running wait from any thread. Cheap to clone; using
/// it after the wait ended does nothing.
///
/// ```
/// use waitfor::{probe_fn, Condition, Engine, Observation, Outcome, Pattern, Spec};
/// let spec = Spec::new(Condition::Matches(Pattern::literal("never")));
/// let handle = Engine::global().start(spec, probe_fn(|_| Ok(Observation::text("")))).unwrap();
/// handle.control().cancel();
/// assert_eq!(handle.wait().outcome, Outcome::Cancelled);
/// ```
#[derive(Clone)]
pub struct WaitControl {
    pub(crate) id: u64,
    pub(crate) tx: Arc<Queue<Msg>>,
    /// The wait's call token: cancelled here at once, so that a call
    /// queued but not begun is never made (a command never started).
    pub(crate) call_cancel: CancelToken,
    /// The process whose engine runs the wait.
    pub(crate) owner: u32,
}

impl WaitControl {
    /// Ends the wait with outcome `cancelled`; a probe call in flight is
    /// abandoned and its cancel token cancelled, and a call not begun yet
    /// is not made. In a forked child of the process that started the
    /// wait it does nothing: the wait is the parent's, and the child's copy
    /// of its token shares descriptors with the parent's running command,
    /// which a cancel here would wake for good.
    pub fn cancel(&self) {
        if std::process::id() != self.owner {
            return;
        }
        self.call_cancel.cancel();
        self.tx.push(Msg::Cancel(self.id));
    }

    /// Whether the calling thread is one this wait's engine needs to end
    /// waits (see [`Engine::needs_this_thread`](crate::Engine::needs_this_thread)).
    pub(crate) fn needs_this_thread(&self) -> bool {
        needs_this_thread(&self.tx)
    }

    /// Takes a sample now instead of at the next poll (a push signal: a
    /// file changed, a pane printed). During a probe call, the next sample
    /// starts as soon as it returns. In a forked child of the process that
    /// started the wait it does nothing: the wait is the parent's, and the
    /// child's copy of the engine's queue may be locked for good (a
    /// parent's thread held it at the fork).
    pub fn wake(&self) {
        if std::process::id() != self.owner {
            return;
        }
        self.tx.push(Msg::Wake(self.id));
    }
}

impl WaitControl {
    /// A [`Waker`] for this wait. Like [`WaitControl::wake`], it does
    /// nothing in a forked child of the process that started the wait,
    /// wherever it was made.
    pub fn waker(&self) -> Waker {
        Waker::new(self.id, self.tx.clone(), self.owner)
    }
}

impl Inbox for Queue<Msg> {
    fn wake(&self, ids: &mut dyn Iterator<Item = u64>) {
        self.push_all(ids.map(Msg::Wake));
    }

    fn answer(&self, answers: &mut dyn Iterator<Item = Answer>) {
        let answers = answers.map(|a| Msg::ProbeDone {
            id: a.id,
            call: a.call,
            result: a.result,
            resume: None,
        });
        // As a worker's answer does (`ProbeJob::run`).
        self.push_all_unless_awake_by(answers, Instant::now() + ANSWER_WAIT);
    }
}

/// A running wait. Dropping it does not cancel the wait; call
/// [`WaitControl::cancel`] for that.
pub struct WaitHandle {
    pub(crate) slot: Arc<Slot>,
    pub(crate) control: WaitControl,
}

impl WaitHandle {
    /// The controls, to hand to other threads.
    pub fn control(&self) -> WaitControl {
        self.control.clone()
    }

    /// Blocks the calling thread until the wait ends. In a child forked
    /// from the process that started it, where it never ends, returns at
    /// once: the result if the wait had ended before the fork, else one
    /// with outcome `error` saying why. Called on a thread the engine needs
    /// to end waits ([`Engine::needs_this_thread`](crate::Engine::needs_this_thread): in `on_done`,
    /// [`AsyncProbe::begin`](crate::AsyncProbe::begin) or a cancel hook),
    /// it cancels the wait, which no one else can then wait for, and
    /// returns at once a result with outcome `error` saying why.
    pub fn wait(self) -> WaitResult {
        if let Some(result) = self.slot.in_forked_child() {
            return result;
        }
        if self.control.needs_this_thread() {
            self.control.cancel();
            return refused_here();
        }
        let mut state = self.slot.state.lock();
        loop {
            if let Some(result) = state.result.take() {
                return result;
            }
            self.slot.filled.wait(&mut state);
        }
    }

    /// Blocks at most `timeout`; `None` if the wait is still running (the
    /// handle stays usable). In a forked child, as [`WaitHandle::wait`].
    /// On a thread the engine needs to end waits
    /// ([`Engine::needs_this_thread`](crate::Engine::needs_this_thread)), a `timeout` other than zero
    /// returns at once a result with outcome `error` saying why, and the
    /// wait goes on.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<WaitResult> {
        if let Some(result) = self.slot.in_forked_child() {
            return Some(result);
        }
        if !timeout.is_zero() && self.control.needs_this_thread() {
            return Some(refused_here());
        }
        self.block_until(&self.slot.filled, timeout, |state| state.result.take())
    }

    /// Blocks at most `timeout` until the probe is dropped: every call of
    /// it has returned, abandoned ones included, so a command probe's
    /// processes are gone. A process about to exit calls this after a
    /// wait that abandoned a call. Returns whether it was released. On a
    /// thread the engine needs to end waits
    /// ([`Engine::needs_this_thread`](crate::Engine::needs_this_thread)) it does not block: it says
    /// whether the probe is released already.
    pub fn wait_released(&self, timeout: Duration) -> bool {
        if std::process::id() != self.slot.owner {
            return false;
        }
        let timeout = if self.control.needs_this_thread() {
            Duration::ZERO
        } else {
            timeout
        };
        self.block_until(&self.slot.released, timeout, |state| {
            state.released.then_some(())
        })
        .is_some()
    }

    /// Blocks at most `timeout` until `ready` gives a value, woken by `told`.
    fn block_until<T>(
        &self,
        told: &Condvar,
        timeout: Duration,
        mut ready: impl FnMut(&mut SlotState) -> Option<T>,
    ) -> Option<T> {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.slot.state.lock();
        loop {
            if let Some(value) = ready(&mut state) {
                return Some(value);
            }
            match deadline {
                Some(deadline) => {
                    if told.wait_until(&mut state, deadline) {
                        return ready(&mut state);
                    }
                }
                None => told.wait(&mut state),
            }
        }
    }

    /// The result if the wait has ended, without blocking. In a forked
    /// child, as [`WaitHandle::wait`]: a parent's thread may have held the
    /// result's lock at the fork, which the child then never gets.
    pub fn try_result(&self) -> Option<WaitResult> {
        if let Some(result) = self.slot.in_forked_child() {
            return Some(result);
        }
        self.slot.state.lock().result.take()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Runs `child` in a child forked while another thread is inside
    /// `hold` (which holds one of the engine's locks while it runs what
    /// it is given), as a host's thread may be at a fork; says whether it
    /// returned. A child still running after 30 s is killed.
    fn returns_in_child_forked_in(
        hold: impl FnOnce(Box<dyn FnOnce() + Send>) + Send + 'static,
        child: impl FnOnce(),
    ) -> bool {
        let (held, holding) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            hold(Box::new(move || {
                let _ = held.send(());
                let _ = released.recv();
            }))
        });
        holding.recv().expect("the lock is held");
        // Lent, not given: the parent drops what `child` holds (a reply
        // posts to the inbox when dropped) only once the lock is let go.
        let mut child = Some(child);
        let returned = crate::fork::in_forked_child(Duration::from_secs(30), || {
            child.take().map(|run| run()).is_some()
        });
        drop(release);
        holder.join().expect("the holder let go");
        returned
    }

    /// The controls of a wait of this process, posting to `inbox`, which
    /// no scheduler reads.
    fn control(inbox: &Arc<Queue<Msg>>) -> WaitControl {
        WaitControl {
            id: 1,
            tx: inbox.clone(),
            call_cancel: CancelToken::new(),
            owner: std::process::id(),
        }
    }

    /// The child's copy of the inbox is locked for good when a parent's
    /// thread held it at the fork: waking there would hang.
    #[test]
    fn wake_in_a_forked_child_does_nothing() {
        let inbox = Arc::new(Queue::new());
        let control = control(&inbox);
        let holder = inbox.clone();
        assert!(returns_in_child_forked_in(
            move |inside| holder.locked(inside),
            || control.wake()
        ));
    }

    #[test]
    fn a_waker_in_a_forked_child_does_nothing() {
        let inbox = Arc::new(Queue::new());
        let control = control(&inbox);
        let made_before = control.waker();
        let holder = inbox.clone();
        assert!(returns_in_child_forked_in(
            move |inside| holder.locked(inside),
            || {
                made_before.wake();
                control.waker().wake();
                Waker::wake_all([&made_before]);
            }
        ));
    }

    /// A parent's delivery thread may hold the slot's lock at the fork.
    #[test]
    fn try_result_in_a_forked_child_says_why_without_blocking() {
        let inbox = Arc::new(Queue::new());
        let handle = WaitHandle {
            slot: Arc::new(Slot::new()),
            control: control(&inbox),
        };
        let slot = handle.slot.clone();
        assert!(returns_in_child_forked_in(
            move |inside| {
                let _state = slot.state.lock();
                inside();
            },
            || {
                let refused = handle.try_result().expect("a result at once");
                assert!(refused.error.is_some_and(|e| e.contains("forked")));
            }
        ));
    }

    /// An async probe's host loop may answer, or drop, its calls in a
    /// forked child.
    #[test]
    fn a_reply_in_a_forked_child_posts_nothing() {
        let inbox: Arc<Queue<Msg>> = Arc::new(Queue::new());
        let owner = std::process::id();
        let reply = |call| crate::Reply::new(1, call, inbox.clone(), owner);
        let (sent, dropped, batch) = (reply(1), reply(2), reply(3));
        let holder = inbox.clone();
        assert!(returns_in_child_forked_in(
            move |inside| holder.locked(inside),
            || {
                sent.send(Ok(crate::Observation::text("x")));
                drop(dropped);
                crate::Reply::send_all([(batch, Ok(crate::Observation::text("x")))]);
            }
        ));
    }
}
