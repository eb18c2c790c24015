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

/// Returns the allocator's free memory to the system (glibc only; other
/// allocators return large blocks themselves), soon and on a thread of its
/// own: a trim takes up to milliseconds, and programs are dropped on the
/// scheduler's and delivery's threads, sometimes sixty at once. Requests
/// made while a trim runs are served by one more trim.
pub(crate) fn give_back_freed_memory() {
    #[cfg(test)]
    GIVE_BACKS_ASKED.set(GIVE_BACKS_ASKED.get() + 1);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        static WANTED: AtomicBool = AtomicBool::new(false);
        static TRIMMING: AtomicBool = AtomicBool::new(false);
        WANTED.store(true, SeqCst);
        if TRIMMING.swap(true, SeqCst) {
            return;
        }
        let trim = || loop {
            while WANTED.swap(false, SeqCst) {
                // SAFETY: malloc_trim only releases free pages, under the
                // allocator's own locks.
                unsafe { libc::malloc_trim(0) };
            }
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
