//! Probes: where observations come from.

mod callback;
mod command;
mod deferred;
mod file;
mod file_watch;
mod reply;
mod waker;

pub use callback::{probe_fn, FnProbe};
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
    pub cancel: CancelToken,
    /// Largest observation the wait accepts, in bytes; a probe may stop
    /// reading one byte past it.
    pub output_cap: usize,
}

/// A failed probe call. The engine counts it and applies the spec's
/// error policy; the last one is reported in the result.
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
    /// An error with this message; the spec's `on_probe_error` decides
    /// whether the wait goes on.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            refused: false,
        }
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
    /// call and each call that read something (so the token is where the
    /// wait stopped reading, whatever a call in flight at its end reads).
    fn resume_point(&self) -> Option<crate::resume::ResumeToken> {
        None
    }

    /// The host lock every call of this probe needs, if any (see
    /// [`HostLock`]). Asked once, when the wait starts.
    fn host_lock(&self) -> Option<std::sync::Arc<dyn HostLock>> {
        None
    }
}

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
