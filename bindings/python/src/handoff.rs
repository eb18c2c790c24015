//! Getting the interpreter lock to an engine thread that waits for it.
//!
//! CPython hands its lock to a waiting thread once the waiter has slept a
//! whole switch interval (5 ms) without being woken. A host thread that
//! lets go of the lock and takes it back often (any short I/O call) wakes
//! the waiter each time, which restarts its interval: a lone waiter can
//! wait hundreds of milliseconds. So an engine thread about to wait asks
//! the main thread, through a pending call (which the interpreter runs on
//! the main thread between two bytecodes, at the latest when that thread
//! takes the lock back), to step aside until a waiting engine thread has
//! the lock, or a switch interval at most.
//!
//! Atomics, not a lock: a process may fork at any moment.

use pyo3::Python;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Engine threads about to take or waiting for the lock.
static WAITING: AtomicUsize = AtomicUsize::new(0);
/// How often a waiting engine thread took it.
static TOOK: AtomicU64 = AtomicU64::new(0);
/// Whether a pending call asking the main thread to step aside is queued.
static ASKED: AtomicBool = AtomicBool::new(false);

/// The longest the main thread steps aside: a switch interval.
const STEP_ASIDE: Duration = Duration::from_millis(5);
/// How often the main thread, stepping aside, looks whether it can go on.
const LOOK: Duration = Duration::from_micros(50);

/// Called before this thread waits for the lock.
pub fn waiting() {
    WAITING.fetch_add(1, Ordering::SeqCst);
    if !ASKED.swap(true, Ordering::SeqCst) {
        // SAFETY: Py_AddPendingCall needs neither the lock nor a thread
        // state; `step_aside` lives for the process.
        let queued =
            unsafe { pyo3::ffi::Py_AddPendingCall(Some(step_aside), std::ptr::null_mut()) };
        if queued != 0 {
            ASKED.store(false, Ordering::SeqCst);
        }
    }
}

/// Called once this thread has the lock (`took`), or will not take it.
pub fn done_waiting(took: bool) {
    if took {
        TOOK.fetch_add(1, Ordering::SeqCst);
    }
    WAITING.fetch_sub(1, Ordering::SeqCst);
}

/// In a forked child, whose only thread is the one that forked: no engine
/// thread waits, and no pending call is queued for it.
pub fn forget() {
    WAITING.store(0, Ordering::SeqCst);
    ASKED.store(false, Ordering::SeqCst);
}

/// The pending call: on the main thread, holding the lock, lets go of it
/// until a waiting engine thread took it (or a switch interval passed).
extern "C" fn step_aside(_: *mut c_void) -> c_int {
    ASKED.store(false, Ordering::SeqCst);
    // At exit no engine thread takes the lock any more.
    if WAITING.load(Ordering::SeqCst) == 0 || crate::invoke::shutting_down() {
        return 0;
    }
    let took = TOOK.load(Ordering::SeqCst);
    // Pending calls run on the main thread, which holds the lock: attaching
    // only counts it, and detaching lets go of it until the closure ends.
    Python::try_attach(|py| {
        py.detach(|| {
            let until = Instant::now() + STEP_ASIDE;
            while TOOK.load(Ordering::SeqCst) == took && Instant::now() < until {
                std::thread::sleep(LOOK);
            }
        })
    });
    0
}
