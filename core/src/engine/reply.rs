//! The way back for an answer of an [`AsyncProbe`](crate::AsyncProbe).

use super::queue::Queue;
use super::scheduler::Msg;
use crate::probe::{Observation, ProbeError};
use std::sync::Arc;

/// Where one call of an [`AsyncProbe`](crate::AsyncProbe) sends its
/// answer. Send it from any thread; dropping it unanswered answers with a
/// probe error, so a host that loses a call does not leave the wait
/// hanging until its deadline.
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
    inbox: Arc<Queue<Msg>>,
}

impl Target {
    fn message(&self, answer: Result<Observation, ProbeError>) -> Msg {
        Msg::ProbeDone {
            id: self.id,
            call: self.call,
            result: answer,
        }
    }
}

impl Reply {
    pub(crate) fn new(id: u64, call: u64, inbox: Arc<Queue<Msg>>) -> Self {
        Self {
            target: Some(Target { id, call, inbox }),
        }
    }

    /// Delivers the answer. An answer for a wait that has ended, or for a
    /// call the wait abandoned, is ignored.
    pub fn send(mut self, answer: Result<Observation, ProbeError>) {
        if let Some(target) = self.target.take() {
            target.inbox.push(target.message(answer));
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
        let mut batch: Vec<Msg> = Vec::new();
        let mut inbox: Option<Arc<Queue<Msg>>> = None;
        for (mut reply, answer) in answers {
            let Some(target) = reply.target.take() else {
                continue;
            };
            // Answers for another engine (rare: most hosts use one) flush
            // what was gathered so far.
            if let Some(current) = &inbox {
                if !Arc::ptr_eq(current, &target.inbox) {
                    current.push_all(batch.drain(..));
                }
            }
            batch.push(target.message(answer));
            inbox = Some(target.inbox);
        }
        if let Some(inbox) = inbox {
            inbox.push_all(batch);
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(target) = self.target.take() {
            let lost = ProbeError::new("the probe dropped its call without answering");
            target.inbox.push(target.message(Err(lost)));
        }
    }
}
