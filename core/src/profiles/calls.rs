//! The cap on profile calls in flight in one process.
//!
//! Each call is bounded on its own (its ceiling, its output cap); this
//! bounds how many run at once, so agents making calls by the thousand
//! cannot grow the host's memory without end. A call over the cap is
//! refused at once ([`ToolError::TooManyCalls`]); calls already running
//! are not touched.

use super::tool::ToolError;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How many profile calls may be in flight in a process unless the host
/// sets another cap ([`set_max_calls`]).
///
/// ```
/// assert_eq!(waitfor::profiles::DEFAULT_MAX_CALLS, 1024);
/// ```
pub const DEFAULT_MAX_CALLS: usize = 1024;

/// The cap on the calls in flight.
static CAP: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_CALLS);

/// The calls in flight (low 32 bits) and the process counting them (high
/// 32 bits): a forked child has none of its parent's calls (their waits
/// never run there). Atomics, not a lock: a child forked while a parent's
/// thread held a lock here would find it held for good.
static IN_FLIGHT: AtomicU64 = AtomicU64::new(0);

/// The calls in flight that `word` counts for process `pid`.
fn in_flight_of(word: u64, pid: u32) -> u32 {
    if (word >> 32) as u32 == pid {
        word as u32
    } else {
        0
    }
}

/// `in_flight` calls counted for process `pid`.
fn counted(pid: u32, in_flight: u32) -> u64 {
    (u64::from(pid) << 32) | u64::from(in_flight)
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
    CAP.swap(cap, Ordering::SeqCst)
}

/// How many profile calls may be in flight in this process.
///
/// ```
/// assert!(waitfor::profiles::max_calls() > 0);
/// ```
pub fn max_calls() -> usize {
    CAP.load(Ordering::SeqCst)
}

/// How many profile calls are in flight in this process: prepared and
/// not yet ended (a call's place is given back when its wait ends,
/// however it ends, before the host hears the end).
///
/// ```
/// assert_eq!(waitfor::profiles::calls_in_flight(), 0);
/// ```
pub fn calls_in_flight() -> usize {
    in_flight_of(IN_FLIGHT.load(Ordering::SeqCst), std::process::id()) as usize
}

/// A profile call's place among the calls in flight, given back when
/// dropped. A [`Prepared`](super::Prepared) call holds it, then its wait
/// ([`WaitOptions::hold`](crate::WaitOptions::hold), in the options
/// [`Prepared::into_parts`](super::Prepared::into_parts) gives), which
/// drops it when the wait ends.
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
        let here = std::process::id();
        let mut cap = 0;
        IN_FLIGHT
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |word| {
                let in_flight = in_flight_of(word, here);
                cap = CAP.load(Ordering::SeqCst);
                let room = (in_flight as usize) < cap && in_flight < u32::MAX;
                room.then(|| counted(here, in_flight + 1))
            })
            .map_err(|_| ToolError::TooManyCalls { cap })?;
        Ok(Self {
            counted_in: Some(here),
        })
    }

    /// No place: for a call as a profile prepares it, before
    /// [`super::prepare`] takes its place, or validated and never run
    /// ([`super::check`]), or simulated.
    pub(crate) fn uncounted() -> Self {
        Self { counted_in: None }
    }
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        let Some(pid) = self.counted_in else {
            return;
        };
        // A slot the parent took, dropped in a forked child, counts there
        // for nothing.
        if pid != std::process::id() {
            return;
        }
        let _ = IN_FLIGHT.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |word| {
            let in_flight = in_flight_of(word, pid);
            (in_flight > 0).then(|| counted(pid, in_flight - 1))
        });
    }
}
