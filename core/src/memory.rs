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
/// 0.5 MiB of 1,000 workers behind). Every request gets its whole delay:
/// one made while a trim waits moves that trim later, up to twice the
/// delay after the first request, and one that the trim came too soon
/// for gets one more.
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
        LAST_ASK.store(monotonic_nanos(), SeqCst);
        if TRIMMING.swap(true, SeqCst) {
            return;
        }
        // Not a `Once`: a child forked while another thread ran it would
        // wait for that thread for good.
        if !FORGET_TRIM_IN_CHILD.swap(true, SeqCst) {
            // SAFETY: the handler only stores to an atomic.
            unsafe { libc::pthread_atfork(None, None, Some(forget_trim)) };
        }
        let delay = GIVE_BACK_DELAY.as_nanos() as u64;
        let trim = move || {
            let mut round_began = monotonic_nanos();
            loop {
                let due = trim_due(LAST_ASK.load(SeqCst), round_began, delay);
                let now = monotonic_nanos();
                if now < due {
                    std::thread::sleep(std::time::Duration::from_nanos(due - now));
                    continue;
                }
                // SAFETY: malloc_trim only releases free pages, under the
                // allocator's own locks.
                unsafe { libc::malloc_trim(0) };
                TRIMMING.store(false, SeqCst);
                // A request this trim came too soon for, or one that saw
                // TRIMMING still set, is left to this thread.
                if served(LAST_ASK.load(SeqCst), now, delay) || TRIMMING.swap(true, SeqCst) {
                    return;
                }
                round_began = monotonic_nanos();
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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

/// When the trim of a round that began at `round_began` is due: a delay
/// after the last request, but no later than two delays into the round, so
/// that requests that never stop still get trims.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
fn trim_due(last_ask: u64, round_began: u64, delay: u64) -> u64 {
    last_ask
        .saturating_add(delay)
        .min(round_began.saturating_add(delay.saturating_mul(2)))
}

/// Whether a trim begun at `trimmed_at` came a whole delay after every
/// request up to the last, made at `last_ask`.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
fn served(last_ask: u64, trimmed_at: u64, delay: u64) -> bool {
    last_ask.saturating_add(delay) <= trimmed_at
}

/// When the last trim was asked for ([`monotonic_nanos`]).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
static LAST_ASK: AtomicU64 = AtomicU64::new(0);
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

/// The monotonic clock in nanoseconds: a number an atomic holds, with no
/// lock or lazily set epoch a forked child could find held.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn monotonic_nanos() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    (now.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(now.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DELAY: u64 = 500;

    #[test]
    fn a_request_made_while_a_trim_waits_gets_its_whole_delay() {
        // Asked at 0, the round begins; asked again at 300.
        assert_eq!(trim_due(0, 0, DELAY), 500);
        assert_eq!(trim_due(300, 0, DELAY), 800);
        assert!(served(300, 800, DELAY));
        assert!(
            !served(300, 500, DELAY),
            "the first request's time is too soon for the second"
        );
    }

    #[test]
    fn requests_that_never_stop_still_get_a_trim_every_two_delays() {
        assert_eq!(trim_due(950, 0, DELAY), 1000);
        // That trim came too soon for the last request: one more round.
        assert!(!served(950, 1000, DELAY));
        assert_eq!(trim_due(950, 1000, DELAY), 1450);
        assert!(served(950, 1450, DELAY));
    }

    #[test]
    fn times_at_the_clock_s_end_saturate() {
        assert_eq!(trim_due(u64::MAX, 0, DELAY), 2 * DELAY);
        assert_eq!(trim_due(u64::MAX, u64::MAX, DELAY), u64::MAX);
        assert!(served(u64::MAX - 1, u64::MAX, 0));
    }
}
