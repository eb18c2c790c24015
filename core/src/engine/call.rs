//! One probe call on a worker thread, and the way its answer goes back.

use super::handle::{Calling, ProbeCell};
use super::queue::Queue;
use super::scheduler::Msg;
use crate::machine::ProbeCall;
use crate::probe::{Observation, ProbeError};
use crate::resume::ResumeToken;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A call of a blocking probe, queued for a worker.
pub(crate) struct ProbeJob {
    pub id: u64,
    pub cell: Arc<ProbeCell>,
    pub call: ProbeCall,
    /// Whether to read where the probe stands after the first call and
    /// calls that read something (its resume token, taken while the call
    /// holds the probe).
    pub ask_resume: bool,
}

/// The longest an answer (a worker's, or an async probe's `Reply`) waits
/// for a wake-up of the scheduler that is due anyway: thousands of waits
/// keep it ticking, and while answers come in and more calls are out it
/// is up this soon (`Scheduler::gather`). Shorter than a timer grain: an
/// answer is a reaction, its delay is the host's.
pub(crate) const ANSWER_WAIT: Duration = Duration::from_millis(1);

impl ProbeJob {
    /// Calls the probe and queues its answer in the scheduler's `inbox`.
    pub fn run(self, inbox: &Queue<Msg>) {
        let process = THREAD_PROCESS.with(|p| *p);
        let (result, resume) = self.call();
        if std::process::id() != process {
            forked_child_ends();
        }
        let done = Msg::ProbeDone {
            id: self.id,
            call: self.call.sample,
            result,
            resume,
        };
        // Let go of the probe before answering: a wait this answer ends
        // closes its probe before the host hears, which it cannot while a
        // call still holds it.
        drop(self);
        // When the scheduler wakes within a tick anyway, the answer waits
        // for it: one wake-up per tick instead of one per answer.
        inbox.push_unless_awake_by(done, Instant::now() + ANSWER_WAIT);
    }

    /// Calls the probe, turning a panic into a probe error; and where the
    /// probe stands after it, when asked.
    fn call(&self) -> (Result<Observation, ProbeError>, Option<Box<ResumeToken>>) {
        let mut calling = self.cell.probe.lock();
        let Calling { probe, ctx, ended } = &mut *calling;
        // The wait ended while this call was queued: no call after its result.
        if ended.is_cancelled() {
            let ended = ProbeError::new("the wait ended before this call started");
            return (Err(ended), None);
        }
        // The probe cancelled its own token in an earlier call: this call
        // gets a fresh one.
        if ctx.cancel.is_cancelled() {
            ctx.cancel = ended.child();
        }
        ctx.sample = self.call.sample;
        ctx.elapsed = self.call.elapsed;
        ctx.budget = self.call.budget;
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| probe.sample(ctx)))
            .unwrap_or_else(|panic| Err(panicked(panic.as_ref())));
        // Asked after the first call (where the wait starts), after calls
        // that read something and after calls that moved the probe all the
        // same (a file rotated or truncated): most samples of a quiet file
        // do neither, and need no copy of where it stands.
        let read = matches!(&result, Ok(seen) if !seen.text.is_empty());
        let moved = || {
            std::panic::catch_unwind(AssertUnwindSafe(|| probe.moved_without_reading()))
                .unwrap_or(false)
        };
        let resume = (self.ask_resume && (read || self.call.sample == 1 || moved()))
            .then(|| std::panic::catch_unwind(AssertUnwindSafe(|| probe.resume_point())))
            .and_then(Result::ok)
            .flatten()
            .map(Box::new);
        (result, resume)
    }
}

thread_local! {
    /// The process this thread runs in, read at its first call (a thread
    /// starts in its process; only a fork during a call moves it): one
    /// `getpid` a call, after it, instead of two.
    static THREAD_PROCESS: u32 = std::process::id();
}

/// Ends a child that a probe forked and then returned in (a host's fork
/// and exec whose exec failed, its error returned): the child has only
/// this thread, an engine worker, and no engine around it, so nothing
/// would take the answer or give the worker other work, and its copies of
/// the queues may be held for good by threads that stayed in the parent.
/// It leaves at once with status 1, running none of the parent's exit code
/// (`_exit`): its copies of the host's buffers and exit handlers are the
/// parent's.
#[cfg(unix)]
fn forked_child_ends() -> ! {
    // SAFETY: ends this process, touching nothing of its memory.
    unsafe { libc::_exit(1) }
}

/// No process is forked on other systems.
#[cfg(not(unix))]
fn forked_child_ends() {}

/// The probe error for a probe call that panicked.
pub(crate) fn panicked(panic: &(dyn std::any::Any + Send)) -> ProbeError {
    ProbeError::new(format!("probe panicked: {}", panic_message(panic)))
}

/// What a panic said.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}
