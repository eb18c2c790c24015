//! Runs of probe calls an engine thread makes one after another, and what
//! a host asks to have done once such a run ends.
//!
//! The scheduler makes a turn's quick calls itself, one after another. A
//! host whose every call pays a fixed price to enter (Python's interpreter
//! lock) can enter once for the whole run and leave at its end: it checks
//! [`in_run`] and hands the leaving to [`at_run_end`]. On a worker a run is
//! a single call.

use std::cell::RefCell;
use std::panic::AssertUnwindSafe;

type Hook = Box<dyn FnOnce()>;

thread_local! {
    /// `Some` while this thread makes a run of engine calls: what to do
    /// when it ends.
    static RUN: RefCell<Option<Vec<Hook>>> = const { RefCell::new(None) };
}

/// Marks the calls this thread makes from now on as one run.
pub(crate) fn begin() {
    RUN.with(|run| {
        run.borrow_mut().get_or_insert_with(Vec::new);
    });
}

/// Ends this thread's run: runs what was asked for at its end, in order.
/// A hook that panics does not keep the others from running.
pub(crate) fn end() {
    let hooks = RUN.with(|run| run.borrow_mut().take());
    for hook in hooks.into_iter().flatten() {
        let _ = std::panic::catch_unwind(AssertUnwindSafe(hook));
    }
}

/// Whether this thread is making a run of engine probe calls: true inside
/// [`Probe::sample`](crate::Probe::sample) when the engine calls it, false
/// when a host or a test calls a probe directly.
///
/// ```
/// assert!(!waitfor::in_run());
/// ```
pub fn in_run() -> bool {
    RUN.with(|run| run.borrow().is_some())
}

/// Has `hook` run on this thread when its run of engine probe calls ends:
/// before the engine does anything else on it (sleeps, hands the scheduler
/// on, or ends the thread). Outside a run ([`in_run`] false) it runs at
/// once.
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// let ran = Rc::new(Cell::new(false));
/// let seen = ran.clone();
/// waitfor::at_run_end(move || seen.set(true));
/// assert!(ran.get()); // no run here: at once
/// ```
pub fn at_run_end(hook: impl FnOnce() + 'static) {
    let hook: Hook = Box::new(hook);
    let left = RUN.with(|run| match run.borrow_mut().as_mut() {
        Some(hooks) => {
            hooks.push(hook);
            None
        }
        None => Some(hook),
    });
    if let Some(hook) = left {
        hook();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    #[test]
    fn hooks_run_in_order_at_the_end_of_the_run_and_a_panic_stops_none() {
        let log = Rc::new(RefCell::new(Vec::new()));
        begin();
        assert!(in_run());
        for n in 0..3 {
            let log = log.clone();
            at_run_end(move || {
                log.borrow_mut().push(n);
                assert_ne!(n, 1, "a hook that panics");
            });
        }
        assert!(log.borrow().is_empty());
        end();
        assert_eq!(*log.borrow(), [0, 1, 2]);
        assert!(!in_run());
    }
}
