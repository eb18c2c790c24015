//! Probes: where observations come from.

mod callback;
mod command;
mod deferred;
mod file;
mod file_watch;
mod reply;
mod waker;

pub use callback::{probe_fn, FnProbe};
pub(crate) use command::starved_notice;
pub use command::CommandProbe;
pub use deferred::AsyncProbe;
pub use file::FileProbe;
#[doc(hidden)]
pub use file_watch::hooks as file_watch_hooks;
pub(crate) use reply::Answer;
pub use reply::Reply;
pub(crate) use waker::Inbox;
pub use waker::Waker;

pub use crate::observation::{Observation, ProbeMode};

use crate::cancel::CancelToken;
use std::time::Duration;

/// What a probe call is told about itself.
#[derive(Debug, Clone)]
pub struct ProbeContext {
    /// 1 for the first call of a wait, 2 for the next, ...
    pub sample: u64,
    /// Time since the wait began.
    pub elapsed: Duration,
    /// Time left before the deadline: the call is abandoned after this.
    pub budget: Duration,
    /// Cancelled when the result is no longer wanted (deadline, cancel).
    /// The probe's own: cancelling it ends no wait (only the host's
    /// [`WaitControl::cancel`](crate::WaitControl::cancel) does), and the
    /// next call gets a token not cancelled.
    pub cancel: CancelToken,
    /// Largest observation the wait accepts, in bytes; a probe may stop
    /// reading one byte past it.
    pub output_cap: usize,
}

/// A failed probe call. The engine counts it and applies the spec's
/// error policy; the last one is reported in the result.
///
/// Its message is at most [`ProbeError::MAX_MESSAGE_BYTES`]: a longer one
/// is cut (see [`ProbeError::new`]). A probe's error text may come from
/// anywhere (an exception that quotes a whole response, a tool's error
/// result, a C host's buffer): it goes into the result twice
/// (`probe.last_error` and `error`) and to the agent, so it is bounded
/// like an answer is by the output cap, but by a fixed bound, the same for
/// every probe and binding, since an error is not an observation.
///
/// ```
/// let err = waitfor::ProbeError::new("connection refused");
/// assert_eq!(err.to_string(), "connection refused");
/// assert!(!err.refused);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ProbeError {
    /// What went wrong.
    pub message: String,
    /// The probe refuses the wait for good (see [`ProbeError::refused`]).
    pub refused: bool,
}

impl ProbeError {
    /// The longest message a probe error keeps, in bytes, its cut mark
    /// included: 4 KiB. A binding reads no more of a host's error text than
    /// this and one more character (or byte), so a huge exception message
    /// costs the cut's worth, not its size.
    pub const MAX_MESSAGE_BYTES: usize = 4096;

    /// What ends a message that was cut to [`ProbeError::MAX_MESSAGE_BYTES`].
    pub const CUT_MARK: &'static str = " ... [cut: the message is longer than 4096 bytes]";

    /// An error with this message; the spec's `on_probe_error` decides
    /// whether the wait goes on.
    ///
    /// A message longer than [`ProbeError::MAX_MESSAGE_BYTES`] is cut: its
    /// first bytes (to the end of a character) then
    /// [`ProbeError::CUT_MARK`], that many bytes in all.
    ///
    /// ```
    /// use waitfor::ProbeError;
    /// let err = ProbeError::new("x".repeat(1 << 20));
    /// assert_eq!(err.message.len(), ProbeError::MAX_MESSAGE_BYTES);
    /// assert!(err.message.ends_with(ProbeError::CUT_MARK));
    /// ```
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: Self::bounded(message.into()),
            refused: false,
        }
    }

    /// `message`, cut as [`ProbeError::new`] cuts it (unchanged when it is
    /// within [`ProbeError::MAX_MESSAGE_BYTES`]). The engine applies it
    /// again to every error it records, so an error built field by field
    /// is bounded too.
    pub fn bounded(mut message: String) -> String {
        if message.len() <= Self::MAX_MESSAGE_BYTES {
            return message;
        }
        let mut end = Self::MAX_MESSAGE_BYTES - Self::CUT_MARK.len();
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push_str(Self::CUT_MARK);
        // A huge message's allocation is not kept for a few KiB.
        message.shrink_to_fit();
        message
    }

    /// An error no retry can mend (a path outside the host's grants, a
    /// directory or device where a file was asked for, a resume token that
    /// does not fit): the wait ends with it at once, whatever
    /// `on_probe_error` tolerates, instead of retrying to its deadline.
    ///
    /// ```
    /// let err = waitfor::ProbeError::refused("/etc is a directory, not a regular file");
    /// assert!(err.refused);
    /// ```
    pub fn refused(message: impl Into<String>) -> Self {
        Self {
            refused: true,
            ..Self::new(message)
        }
    }
}

/// A source of observations. The engine calls [`Probe::sample`] on a worker
/// thread, one call at a time per wait, never after the wait returned.
///
/// ```
/// use waitfor::{Observation, Probe, ProbeContext, ProbeError};
/// struct Counter(u32);
/// impl Probe for Counter {
///     fn sample(&mut self, _ctx: &ProbeContext) -> Result<Observation, ProbeError> {
///         self.0 += 1;
///         Ok(Observation::text(format!("count {}", self.0)))
///     }
/// }
/// ```
pub trait Probe: Send + 'static {
    /// Takes one observation. Return within `ctx.budget`; a call still
    /// running at the deadline is abandoned and its token cancelled.
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError>;

    /// Snapshot or stream (default snapshot).
    fn mode(&self) -> ProbeMode {
        ProbeMode::Snapshot
    }

    /// A name for logs and the `probe_tool` span attribute.
    fn name(&self) -> &str {
        "callback"
    }

    /// Receives the wait's [`Waker`] before the first call. A probe with a
    /// push source (a file watch, a tmux control client) keeps it and
    /// calls [`Waker::wake`] when something changed, so the next sample is
    /// taken at once instead of at the next poll. Keep this cheap: start
    /// the push source in the first [`Probe::sample`] call.
    fn watch(&mut self, _waker: Waker) {}

    /// Where a later wait could continue from, if this probe can resume
    /// (a file offset, a cursor). Asked when the wait ends, and for a
    /// stream probe of a wait with the fresh view also after its first
    /// call, each call that read something and each call that
    /// [moved it without reading](Probe::moved_without_reading) (so the
    /// token is where the wait stopped reading, whatever a call in flight
    /// at its end reads).
    fn resume_point(&self) -> Option<crate::resume::ResumeToken> {
        None
    }

    /// Whether the last [`Probe::sample`] call moved where the probe
    /// stands (its [`Probe::resume_point`]) although it returned no text:
    /// a followed file rotated, truncated or created. The engine then asks
    /// for the resume point after that call too: a token from before it
    /// would not fit where the probe reads now. False by default.
    ///
    /// ```
    /// use waitfor::{probe_fn, Observation, Probe};
    /// let probe = probe_fn(|_| Ok(Observation::text("")));
    /// assert!(!probe.moved_without_reading());
    /// ```
    fn moved_without_reading(&self) -> bool {
        false
    }

    /// The host lock every call of this probe needs, if any (see
    /// [`HostLock`]). Asked once, when the wait starts.
    fn host_lock(&self) -> Option<std::sync::Arc<dyn HostLock>> {
        None
    }

    /// What the probe has to say about how its wait ended, if anything
    /// (see [`EndNotices`]). Asked once, when the wait starts.
    fn end_notices(&self) -> Option<EndNotices> {
        None
    }

    /// What tells the engine, without calling the probe, that a sample
    /// now would return an empty text and leave the probe as it is (see
    /// [`Unchanged`]); only built-in probes make one. Asked once, when
    /// the wait starts. A probe that wraps a built-in one and forwards
    /// this has its own `sample` skipped whenever the engine answers.
    ///
    /// ```
    /// use waitfor::probes::FileProbe;
    /// use waitfor::Probe;
    /// assert!(FileProbe::new("/tmp/app.log").unchanged().is_some());
    /// assert!(waitfor::probe_fn(|_| Ok(waitfor::Observation::text(""))).unchanged().is_none());
    /// ```
    fn unchanged(&self) -> Option<Unchanged> {
        None
    }
}

/// A built-in probe's push source saying "nothing new since the last
/// read": while it holds, the engine answers the wait's samples itself
/// with an empty text, as the probe would, without a worker's call. The
/// `file` probe's holds while its file watch is trusted, nothing was
/// signalled since its last real read, and that read is less than a
/// second old (the safety read is a real call).
///
/// ```
/// use waitfor::probes::FileProbe;
/// use waitfor::Probe;
/// let unchanged = FileProbe::new("/tmp/app.log").unchanged();
/// assert!(unchanged.is_some());
/// ```
#[derive(Clone)]
pub struct Unchanged(std::sync::Arc<file_watch::Quiet>);

impl Unchanged {
    /// Whether a sample at `now` would read nothing new.
    pub(crate) fn holds(&self, now: std::time::Instant) -> bool {
        self.0.holds(now)
    }
}

/// The notices a probe adds to its wait's result
/// ([`WaitResult::notices`](crate::WaitResult::notices)), from the result
/// the engine built. Called once, as the wait ends, possibly while a call
/// of the probe is still in flight (so it reads what it shares with the
/// probe, never the probe itself).
///
/// ```
/// use std::sync::Arc;
/// use waitfor::{Condition, EndNotices, Engine, Observation, Outcome, Pattern, Probe, ProbeContext, ProbeError, Spec};
/// use std::time::Duration;
/// struct Quiet;
/// impl Probe for Quiet {
///     fn sample(&mut self, _: &ProbeContext) -> Result<Observation, ProbeError> {
///         Ok(Observation::text(""))
///     }
///     fn end_notices(&self) -> Option<EndNotices> {
///         Some(Arc::new(|result| match result.outcome {
///             Outcome::Timeout => vec!["nothing was ever written".to_string()],
///             _ => Vec::new(),
///         }))
///     }
/// }
/// let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
///     .interval(Duration::from_millis(10))
///     .max_wait(Duration::from_millis(50));
/// let result = Engine::global().wait(spec, Quiet).unwrap();
/// assert_eq!(result.notices, ["nothing was ever written"]);
/// ```
pub type EndNotices =
    std::sync::Arc<dyn Fn(&crate::WaitResult) -> Vec<String> + Send + Sync + 'static>;

/// A lock the host's code needs to run, shared by many probes: Python's
/// interpreter lock. While another thread holds it (a host whose main
/// thread runs Python code), taking it costs milliseconds, so the engine
/// makes such calls in runs: the calls that need one lock queue together,
/// and a worker that took the lock makes every queued call before it lets
/// go. A call may let go of the lock while it blocks (as Python's
/// `time.sleep` does); one that hangs holds its worker, and another takes
/// the queue.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use waitfor::{HostLock, Observation, Probe, ProbeContext, ProbeError};
/// /// Stands in for an interpreter lock.
/// struct Interpreter(Mutex<()>);
/// impl HostLock for Interpreter {
///     fn hold(&self, calls: &mut dyn FnMut()) {
///         let _held = self.0.lock().unwrap();
///         calls();
///     }
/// }
/// struct Scripted(Arc<Interpreter>);
/// impl Probe for Scripted {
///     fn sample(&mut self, _: &ProbeContext) -> Result<Observation, ProbeError> {
///         Ok(Observation::text("ready"))
///     }
///     fn host_lock(&self) -> Option<Arc<dyn HostLock>> {
///         Some(self.0.clone())
///     }
/// }
/// ```
pub trait HostLock: Send + Sync + 'static {
    /// Calls `calls` once, holding the lock; when the lock cannot be had
    /// any more (the interpreter is exiting), calls it without.
    fn hold(&self, calls: &mut dyn FnMut());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{probe_fn, Condition, Engine, Outcome, Pattern, Spec};

    /// A message within the bound is kept as is; a longer one is cut to
    /// the bound, mark included, at a character boundary.
    #[test]
    fn a_probe_error_keeps_at_most_max_message_bytes() {
        let max = ProbeError::MAX_MESSAGE_BYTES;
        assert!(ProbeError::CUT_MARK.contains(&max.to_string()));
        let exact = "x".repeat(max);
        assert_eq!(ProbeError::new(exact.clone()).message, exact);
        for message in ["x".repeat(max + 1), "é".repeat(max), "€".repeat(1 << 20)] {
            for err in [
                ProbeError::new(message.clone()),
                ProbeError::refused(message.clone()),
            ] {
                assert!(err.message.len() <= max, "{}", err.message.len());
                assert!(err.message.len() > max - 4 - ProbeError::CUT_MARK.len());
                assert!(err.message.ends_with(ProbeError::CUT_MARK));
                let kept = &err.message[..err.message.len() - ProbeError::CUT_MARK.len()];
                assert!(message.starts_with(kept));
            }
        }
    }

    /// The wait's result holds the bounded message, in `probe.last_error`
    /// and `error`, also for an error built field by field (no `new`).
    #[test]
    fn a_wait_reports_a_huge_probe_error_bounded() {
        let huge = "é".repeat(1 << 20);
        let spec = Spec::new(Condition::Matches(Pattern::literal("never")))
            .max_wait(std::time::Duration::from_secs(30));
        for literal in [false, true] {
            let huge = huge.clone();
            let probe = probe_fn(move |_| {
                Err::<Observation, _>(if literal {
                    ProbeError {
                        message: huge.clone(),
                        refused: false,
                    }
                } else {
                    ProbeError::new(huge.clone())
                })
            });
            let result = Engine::global().wait(spec.clone(), probe).unwrap();
            assert_eq!(result.outcome, Outcome::ProbeError);
            let last = result.probe.last_error.unwrap();
            let max = ProbeError::MAX_MESSAGE_BYTES;
            assert!(
                last.len() <= max && last.len() > max - 4,
                "literal: {literal}"
            );
            assert!(last.ends_with(ProbeError::CUT_MARK));
            let error = result.error.unwrap();
            assert_eq!(error, format!("probe failed: {last}"));
        }
    }
}
