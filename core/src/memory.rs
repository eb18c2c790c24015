//! Giving freed memory back to the system.
//!
//! glibc keeps what threads free in per-thread arenas for reuse: megabytes
//! freed by an ended wait (a large pattern's automata) or by threads that
//! left (workers grown for hung calls) would stay in the process's resident
//! size for good. The few places that free that much ask for a trim here.

#[cfg(test)]
thread_local! {
    /// Give-backs this thread asked for (for tests).
    pub(crate) static GIVE_BACKS_ASKED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How long after it is asked for a trim runs, so that what the asking
/// code frees right after asking is free by then: the rest of a failed
/// compile, or the thread caches that a grown pool's workers free as they
/// exit, after the last of them asked (a trim run at once left about
/// 0.5 MiB of 1,000 workers behind). Requests made while a trim waits are
/// served by it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const GIVE_BACK_DELAY: std::time::Duration = std::time::Duration::from_millis(500);

/// Returns the allocator's free memory to the system (glibc only; other
/// allocators return large blocks themselves), half a second later
/// and on a thread of its own: a trim takes up to milliseconds, and
/// programs are dropped on the scheduler's and delivery's threads,
/// sometimes sixty at once. Requests made while a trim runs are served by
/// one more trim.
pub(crate) fn give_back_freed_memory() {
    #[cfg(test)]
    GIVE_BACKS_ASKED.set(GIVE_BACKS_ASKED.get() + 1);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        WANTED.store(true, SeqCst);
        if TRIMMING.swap(true, SeqCst) {
            return;
        }
        // Not a `Once`: a child forked while another thread ran it would
        // wait for that thread for good.
        if !FORGET_TRIM_IN_CHILD.swap(true, SeqCst) {
            // SAFETY: the handler only stores to an atomic.
            unsafe { libc::pthread_atfork(None, None, Some(forget_trim)) };
        }
        let trim = || loop {
            std::thread::sleep(GIVE_BACK_DELAY);
            WANTED.store(false, SeqCst);
            // SAFETY: malloc_trim only releases free pages, under the
            // allocator's own locks.
            unsafe { libc::malloc_trim(0) };
            TRIMMING.store(false, SeqCst);
            // A request that came after the last trim but saw TRIMMING
            // still set left it to this thread.
            if !WANTED.load(SeqCst) || TRIMMING.swap(true, SeqCst) {
                return;
            }
        };
        let spawned = std::thread::Builder::new()
            .name("waitfor-give-back".into())
            .spawn(trim);
        if spawned.is_err() {
            TRIMMING.store(false, SeqCst);
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

/// A trim was asked for since the last one began.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
static WANTED: AtomicBool = AtomicBool::new(false);
/// A give-back thread runs (or is being started).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
static TRIMMING: AtomicBool = AtomicBool::new(false);
/// `forget_trim` is registered to run in forked children.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
static FORGET_TRIM_IN_CHILD: AtomicBool = AtomicBool::new(false);

/// In a forked child: the parent's give-back thread is not there, so no
/// trim runs; left set, `TRIMMING` would keep the child from ever asking
/// for one.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn forget_trim() {
    TRIMMING.store(false, SeqCst);
}
