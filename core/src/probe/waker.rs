//! How a probe's push source asks for a sample: a [`Waker`] posts to the
//! inbox of whatever runs the wait (the engine) without depending on it.

use super::reply::Answer;
use std::sync::Arc;

/// Where a [`Waker`] and a [`Reply`](super::Reply) post: the inbox of the
/// engine running the wait.
pub(crate) trait Inbox: Send + Sync {
    /// Asks for a sample of each of these waits now, with one hand-off.
    fn wake(&self, ids: &mut dyn Iterator<Item = u64>);
    /// Delivers these probe answers, with one hand-off.
    fn answer(&self, answers: &mut dyn Iterator<Item = Answer>);
}

/// Wakes one wait, and can do nothing else: what a probe's push source
/// holds. Waking a wait that already ended does nothing; so does waking in
/// a forked child of the process whose engine runs the wait (the child's
/// copy of that engine's queue may be locked for good, a parent's thread
/// having held it at the fork).
///
/// ```
/// use waitfor::{probe_fn, Condition, Engine, Observation, Pattern, Spec};
/// let spec = Spec::new(Condition::Matches(Pattern::literal("never")));
/// let handle = Engine::global().start(spec, probe_fn(|_| Ok(Observation::text("")))).unwrap();
/// let waker = handle.control().waker();
/// waker.wake();
/// handle.control().cancel();
/// ```
#[derive(Clone)]
pub struct Waker {
    id: u64,
    inbox: Arc<dyn Inbox>,
    /// The process whose engine reads `inbox`.
    owner: u32,
}

impl Waker {
    /// A waker for wait `id`, posting to `inbox`, which process `owner`
    /// reads.
    pub(crate) fn new(id: u64, inbox: Arc<dyn Inbox>, owner: u32) -> Self {
        Self { id, inbox, owner }
    }

    /// Asks for a sample now; in another process than the engine's (a
    /// forked child), does nothing.
    pub fn wake(&self) {
        if std::process::id() != self.owner {
            return;
        }
        self.inbox.wake(&mut std::iter::once(self.id));
    }

    /// Wakes many waits with one hand-off per engine instead of one per
    /// wait: a push source that wakes thousands of waits at once.
    pub(crate) fn wake_all<'a>(wakers: impl IntoIterator<Item = &'a Waker>) {
        let here = std::process::id();
        let mut batches: Vec<(&Arc<dyn Inbox>, Vec<u64>)> = Vec::new();
        for waker in wakers.into_iter().filter(|w| w.owner == here) {
            match batches
                .iter_mut()
                .find(|(inbox, _)| Arc::ptr_eq(inbox, &waker.inbox))
            {
                Some((_, ids)) => ids.push(waker.id),
                None => batches.push((&waker.inbox, vec![waker.id])),
            }
        }
        for (inbox, ids) in batches {
            inbox.wake(&mut ids.into_iter());
        }
    }
}
