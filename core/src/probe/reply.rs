//! The way back for an answer of an [`AsyncProbe`](crate::AsyncProbe):
//! posted to the inbox of whatever runs the wait (the engine), as a
//! [`Waker`](super::Waker) posts, without depending on it.

use super::waker::Inbox;
use super::{Observation, ProbeError};
use std::sync::Arc;

/// Where one call of an [`AsyncProbe`](crate::AsyncProbe) sends its
/// answer. Send it from any thread; dropping it unanswered answers with a
/// probe error, so a host that loses a call does not leave the wait
/// hanging until its deadline. In a forked child of the process whose
/// engine runs the wait, sending or dropping it does nothing: the child's
/// copy of that engine's queue may be locked for good (a parent's thread
/// held it at the fork).
///
/// ```
/// use waitfor::{AsyncProbe, Observation, ProbeContext, Reply};
/// struct Immediate;
/// impl AsyncProbe for Immediate {
///     fn begin(&mut self, _ctx: &ProbeContext, reply: Reply) {
///         reply.send(Ok(Observation::text("ready")));
///     }
/// }
/// ```
pub struct Reply {
    target: Option<Target>,
}

struct Target {
    id: u64,
    call: u64,
    inbox: Arc<dyn Inbox>,
    /// The process whose engine reads `inbox`.
    owner: u32,
}

impl Target {
    /// Whether this process may post to the inbox: the engine's, not a
    /// forked child of it.
    fn postable(&self) -> bool {
        std::process::id() == self.owner
    }

    fn answer(&self, result: Result<Observation, ProbeError>) -> Answer {
        Answer {
            id: self.id,
            call: self.call,
            result,
        }
    }
}

/// One probe call's answer, on its way to the inbox of the wait `id`.
pub(crate) struct Answer {
    /// The wait.
    pub id: u64,
    /// The call (its sample number).
    pub call: u64,
    /// What the probe answered.
    pub result: Result<Observation, ProbeError>,
}

impl Reply {
    /// The reply to call `call` of wait `id`, posting to `inbox`, which
    /// process `owner` reads.
    pub(crate) fn new(id: u64, call: u64, inbox: Arc<dyn Inbox>, owner: u32) -> Self {
        Self {
            target: Some(Target {
                id,
                call,
                inbox,
                owner,
            }),
        }
    }

    /// Delivers the answer. An answer for a wait that has ended, or for a
    /// call the wait abandoned, is ignored.
    pub fn send(mut self, answer: Result<Observation, ProbeError>) {
        if let Some(target) = self.target.take().filter(Target::postable) {
            target
                .inbox
                .answer(&mut std::iter::once(target.answer(answer)));
        }
    }

    /// Delivers many answers at once: the engine wakes once for the lot,
    /// not once per answer (a host loop that ran a batch of calls).
    ///
    /// ```
    /// # use waitfor::{Observation, Reply};
    /// fn answer_all(calls: Vec<Reply>) {
    ///     Reply::send_all(calls.into_iter().map(|r| (r, Ok(Observation::text("ready")))));
    /// }
    /// ```
    pub fn send_all(answers: impl IntoIterator<Item = (Reply, Result<Observation, ProbeError>)>) {
        let mut batch: Vec<Answer> = Vec::new();
        let mut inbox: Option<Arc<dyn Inbox>> = None;
        let here = std::process::id();
        for (mut reply, answer) in answers {
            let Some(target) = reply.target.take().filter(|t| t.owner == here) else {
                continue;
            };
            // Answers for another engine (rare: most hosts use one) flush
            // what was gathered so far.
            if let Some(current) = &inbox {
                if !Arc::ptr_eq(current, &target.inbox) {
                    current.answer(&mut batch.drain(..));
                }
            }
            batch.push(target.answer(answer));
            inbox = Some(target.inbox);
        }
        if let Some(inbox) = inbox {
            inbox.answer(&mut batch.into_iter());
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(target) = self.target.take().filter(Target::postable) {
            let lost = ProbeError::new("the probe dropped its call without answering");
            target
                .inbox
                .answer(&mut std::iter::once(target.answer(Err(lost))));
        }
    }
}
