//! Ending the processes of dropped [`RunMark`](super::RunMark)s, off the
//! thread that dropped them.
//!
//! A sweep reads every process's environment (a few milliseconds), and
//! marks are dropped with their waits on the engine's delivery threads:
//! 800 command waits ending together held those threads for 2.6 s, and
//! every other wait's result with them. So a dropped mark is queued here,
//! and one thread ends the processes of every queued mark in one pass
//! over `/proc`, then leaves when none is left. A sweep is over once what
//! it killed has exited (up to a second: see `unix::end_marked`), not
//! once the kills are sent. The process waits for it as it exits (an
//! `atexit` handler), so what escaped a wait's command does not outlive a
//! program that exits right after its waits.
//!
//! A mark is dropped only with its probe, and a program may exit before
//! that: during a wait, or right after one whose last call was abandoned
//! at its deadline or cancel (the abandoned call still holds the probe).
//! So every mark not dropped yet is also kept in a register, and the exit
//! handler queues those too before it waits.

use crate::sync::{Condvar, Mutex};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;
use std::time::Instant;

/// Marks dropped and not swept yet, and whether the sweeping thread runs.
#[derive(Default)]
struct Sweeps {
    queued: Vec<String>,
    running: bool,
}

/// The queue, with the process that made it: a forked child has no
/// sweeping thread, and the lock may have been held at the fork.
static SWEEPS: LazyLock<(u32, Mutex<Sweeps>, Condvar)> =
    LazyLock::new(|| (std::process::id(), Mutex::default(), Condvar::new()));

/// The marks not dropped yet, with the process that made them (as
/// [`SWEEPS`]): a forked child neither sweeps its parent's marks as it
/// exits nor takes a lock that may have been held at the fork.
static LIVE: LazyLock<(u32, Mutex<HashSet<String>>)> =
    LazyLock::new(|| (std::process::id(), Mutex::default()));

/// Registers a new mark, and the exit handler that ends what carries it.
pub(super) fn track(mark: &str) {
    let (owner, live) = &*LIVE;
    if *owner != std::process::id() {
        return;
    }
    live.lock().insert(mark.to_string());
    at_exit();
}

/// Forgets a mark being dropped (its processes are ended by the sweep).
pub(super) fn untrack(mark: &str) {
    let (owner, live) = &*LIVE;
    if *owner == std::process::id() {
        live.lock().remove(mark);
    }
}

/// Registers [`finish_sweeps_at_exit`] once.
fn at_exit() {
    if !AT_EXIT.swap(true, Ordering::SeqCst) {
        // SAFETY: registers a plain function; glibc runs it at `exit`, or
        // when this library is unloaded.
        unsafe { libc::atexit(finish_sweeps_at_exit) };
    }
}

/// Ends the processes that carry `mark` soon, on the sweeping thread (at
/// once, on this thread, in a forked child).
pub(super) fn end_soon(var: &'static str, mark: String) {
    let (owner, sweeps, _) = &*SWEEPS;
    if *owner != std::process::id() {
        return super::unix::end_marked(var, &[mark]);
    }
    let mut state = sweeps.lock();
    state.queued.push(mark);
    if state.running {
        return;
    }
    state.running = true;
    drop(state);
    at_exit();
    let spawned = std::thread::Builder::new()
        .name("waitfor-sweep".into())
        .spawn(move || sweep(var));
    if spawned.is_err() {
        sweep(var);
    }
}

/// Sweeps until no mark is queued.
fn sweep(var: &str) {
    let (_, sweeps, swept) = &*SWEEPS;
    loop {
        let marks = std::mem::take(&mut sweeps.lock().queued);
        if !marks.is_empty() {
            super::unix::end_marked(var, &marks);
        }
        let mut state = sweeps.lock();
        if state.queued.is_empty() {
            state.running = false;
            swept.notify_all();
            return;
        }
    }
}

/// Whether [`finish_sweeps_at_exit`] is registered.
static AT_EXIT: AtomicBool = AtomicBool::new(false);

/// Queues the marks still held as if dropped, then waits (a while) for
/// the sweeps of every mark. The process groups of runs still going are
/// killed first, so that none of their members starts another marked
/// process after the pass over `/proc`.
extern "C" fn finish_sweeps_at_exit() {
    let (owner, live) = &*LIVE;
    if *owner == std::process::id() {
        let marks: Vec<String> = live.lock().iter().cloned().collect();
        if !marks.is_empty() {
            super::unix::kill_live_groups();
        }
        for mark in marks {
            end_soon(super::MARK_VAR, mark);
        }
    }
    wait_for_sweeps(Some(Instant::now() + super::EXIT_PATIENCE));
}

/// Waits until the processes of every mark dropped so far are ended: each
/// one killed has exited by then (is gone, or a zombie), unless it could
/// not exit within a second (stuck in uninterruptible sleep). The process
/// does so as it exits.
///
/// ```
/// waitfor::process::finish_sweeps();
/// ```
pub fn finish_sweeps() {
    wait_for_sweeps(None);
}

/// Waits until no sweep runs, or `until`.
fn wait_for_sweeps(until: Option<Instant>) {
    let (owner, sweeps, swept) = &*SWEEPS;
    if *owner != std::process::id() {
        return;
    }
    let mut state = sweeps.lock();
    while state.running {
        match until {
            None => swept.wait(&mut state),
            Some(until) if swept.wait_until(&mut state, until) => return,
            Some(_) => {}
        }
    }
}
