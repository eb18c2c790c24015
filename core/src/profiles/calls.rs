//! The cap on profile calls in flight in one process.
//!
//! Each call is bounded on its own (its ceiling, its output cap); this
//! bounds how many run at once, so agents making calls by the thousand
//! cannot grow the host's memory without end. A call over the cap is
//! refused at once ([`ToolError::TooManyCalls`]); calls already running
//! are not touched.

use super::tool::ToolError;
use crate::sync::Mutex;

/// How many profile calls may be in flight in a process unless the host
/// sets another cap ([`set_max_calls`]).
///
/// ```
/// assert_eq!(waitfor::profiles::DEFAULT_MAX_CALLS, 1024);
/// ```
pub const DEFAULT_MAX_CALLS: usize = 1024;

/// The cap and the calls in flight, and the process they count: a forked
/// child has none of its parent's calls (their waits never run there).
struct Counts {
    cap: usize,
    in_flight: usize,
    pid: u32,
}

static COUNTS: Mutex<Counts> = Mutex::new(Counts {
    cap: DEFAULT_MAX_CALLS,
    in_flight: 0,
    pid: 0,
});

/// The counts of this process (after a fork, the child's, empty).
fn counts() -> crate::sync::MutexGuard<'static, Counts> {
    let mut counts = COUNTS.lock();
    let pid = std::process::id();
    if counts.pid != pid {
        counts.pid = pid;
        counts.in_flight = 0;
    }
    counts
}

/// Sets how many profile calls may be in flight in this process
/// ([`DEFAULT_MAX_CALLS`] by default) and gives the cap it replaces.
/// Calls running stay; while more than `cap` run, new calls are refused
/// until enough of them end. `0` refuses every call.
///
/// ```
/// use waitfor::profiles::{max_calls, set_max_calls, DEFAULT_MAX_CALLS};
/// let before = set_max_calls(4096);
/// assert_eq!(max_calls(), 4096);
/// set_max_calls(before);
/// # assert_eq!(max_calls(), DEFAULT_MAX_CALLS);
/// ```
pub fn set_max_calls(cap: usize) -> usize {
    std::mem::replace(&mut counts().cap, cap)
}

/// How many profile calls may be in flight in this process.
///
/// ```
/// assert!(waitfor::profiles::max_calls() > 0);
/// ```
pub fn max_calls() -> usize {
    counts().cap
}

/// How many profile calls are in flight in this process: prepared and
/// not yet ended (a call's place is given back when its wait ends,
/// however it ends, before the host hears the end).
///
/// ```
/// assert_eq!(waitfor::profiles::calls_in_flight(), 0);
/// ```
pub fn calls_in_flight() -> usize {
    counts().in_flight
}

/// A profile call's place among the calls in flight, given back when
/// dropped. [`Prepared::slot`](super::Prepared::slot) holds it; a host
/// running a prepared call itself hands it to the wait with
/// [`WaitOptions::hold`](crate::WaitOptions::hold), which drops it when
/// the wait ends.
///
/// ```
/// use waitfor::profiles::{calls_in_flight, prepare, Host};
/// let args = serde_json::json!({"probe": {"tool": "t", "args": {}}, "until": {"matches": "x"}});
/// let prepared = prepare("wait_for", &args, &Host::default()).unwrap();
/// assert_eq!(calls_in_flight(), 1);
/// drop(prepared);
/// assert_eq!(calls_in_flight(), 0);
/// ```
#[derive(Debug)]
pub struct CallSlot {
    /// The process whose count holds it; `None` for a call only checked.
    counted_in: Option<u32>,
}

impl CallSlot {
    /// A place, or [`ToolError::TooManyCalls`] when the cap is reached.
    pub(crate) fn take() -> Result<Self, ToolError> {
        let mut counts = counts();
        if counts.in_flight >= counts.cap {
            return Err(ToolError::TooManyCalls { cap: counts.cap });
        }
        counts.in_flight += 1;
        Ok(Self {
            counted_in: Some(counts.pid),
        })
    }

    /// No place: for a call validated and never run ([`super::check`]).
    pub(crate) fn uncounted() -> Self {
        Self { counted_in: None }
    }
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        let Some(pid) = self.counted_in else {
            return;
        };
        let mut counts = counts();
        // A slot the parent took, dropped in a forked child, counts there
        // for nothing.
        if counts.pid == pid {
            counts.in_flight = counts.in_flight.saturating_sub(1);
        }
    }
}
