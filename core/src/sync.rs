//! Locks and condition variables that stay usable in a forked child.
//!
//! `parking_lot` parks threads through one process-wide table whose
//! buckets it locks while a thread parks or wakes another. A process that
//! forks while one of its threads holds such a bucket lock (an engine
//! thread waking another at that moment) leaves the child a bucket nobody
//! will ever unlock, and the child's first wait on it hangs (a child could
//! also inherit that table half grown). The standard library's locks keep
//! their state in the lock itself, so a child only inherits the state of
//! locks the parent's threads held, which a fresh engine in the child
//! never touches. These wrappers give them `parking_lot`'s shape: `lock()`
//! without poisoning (a thread that panicked holding a lock does not make
//! it unusable: every holder here leaves the data consistent at each
//! step) and condition waits on `&mut` guards.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::PoisonError;
use std::time::{Duration, Instant};

pub use std::sync::MutexGuard;

/// A mutual-exclusion lock (`std::sync::Mutex` without poisoning).
#[derive(Default, Debug)]
pub struct Mutex<T>(std::sync::Mutex<T>);

impl<T> Mutex<T> {
    /// A lock holding `value`.
    pub const fn new(value: T) -> Self {
        Self(std::sync::Mutex::new(value))
    }

    /// Waits for the lock.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The lock, if nobody holds it now.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        match self.0.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// A condition variable for [`Mutex`]. Notifying it costs no system call
/// while nobody waits (the standard library's makes one each time; the
/// engine notifies at every wait's end, mostly with nobody waiting).
///
/// As with any condition variable, change what waiters look at while
/// holding the mutex they wait with; then a notify after it is never lost.
#[derive(Default, Debug)]
pub struct Condvar {
    inner: std::sync::Condvar,
    /// Threads in a wait on it. Counted under the waiter's mutex: a
    /// notifier that changed the state under that mutex and then reads 0
    /// knows nobody went to sleep before its change.
    waiters: AtomicUsize,
}

impl Condvar {
    /// A condition variable nobody waits on.
    pub const fn new() -> Self {
        Self {
            inner: std::sync::Condvar::new(),
            waiters: AtomicUsize::new(0),
        }
    }

    /// Wakes one waiter.
    pub fn notify_one(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.inner.notify_one();
        }
    }

    /// Wakes every waiter.
    pub fn notify_all(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.inner.notify_all();
        }
    }

    /// Releases `guard`'s lock until woken (or spuriously), then takes it
    /// again.
    pub fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        self.waiting(|| {
            in_place(guard, |g| {
                self.inner.wait(g).unwrap_or_else(PoisonError::into_inner)
            });
        });
    }

    /// Runs `wait` counted as a waiter.
    fn waiting<R>(&self, wait: impl FnOnce() -> R) -> R {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let woken = wait();
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        woken
    }

    /// As [`Condvar::wait`], until `deadline` at the latest; whether the
    /// deadline passed.
    pub fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, deadline: Instant) -> bool {
        self.wait_for(guard, deadline.saturating_duration_since(Instant::now()))
    }

    /// As [`Condvar::wait`], for `timeout` at the most; whether it passed.
    pub fn wait_for<T>(&self, guard: &mut MutexGuard<'_, T>, timeout: Duration) -> bool {
        self.waiting(|| {
            let mut timed_out = false;
            in_place(guard, |g| {
                let (g, result) = self
                    .inner
                    .wait_timeout(g, timeout)
                    .unwrap_or_else(PoisonError::into_inner);
                timed_out = result.timed_out();
                g
            });
            timed_out
        })
    }
}

/// Replaces the guard behind `slot` with what `f` makes of it.
fn in_place<'a, T>(
    slot: &mut MutexGuard<'a, T>,
    f: impl FnOnce(MutexGuard<'a, T>) -> MutexGuard<'a, T>,
) {
    // SAFETY: the guard is moved out of `slot` and a guard is written back
    // before `slot` is used again. Should `f` unwind (the standard library
    // panics only on a condition variable used with two mutexes, a bug),
    // the process aborts instead of dropping the moved-out guard twice.
    unsafe {
        let guard = std::ptr::read(slot);
        let guard = std::panic::catch_unwind(AssertUnwindSafe(|| f(guard)))
            .unwrap_or_else(|_| std::process::abort());
        std::ptr::write(slot, guard);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Two threads hand a counter back and forth 20,000 times, each
    /// notifying after its change under the lock: a notify skipped while a
    /// waiter was on its way to sleep would hang this (caught by the
    /// generous per-wait bound).
    #[test]
    fn a_notify_after_a_change_under_the_lock_is_never_lost() {
        const TURNS: u64 = 20_000;
        let shared = Arc::new((Mutex::new(0u64), Condvar::new()));
        let take_turns = |shared: Arc<(Mutex<u64>, Condvar)>, parity: u64| {
            move || {
                let (count, changed) = &*shared;
                let mut count = count.lock();
                while *count < TURNS {
                    if *count % 2 == parity {
                        *count += 1;
                        changed.notify_all();
                    } else {
                        assert!(
                            !changed.wait_for(&mut count, Duration::from_secs(20)),
                            "a wake-up was lost at turn {}",
                            *count
                        );
                    }
                }
            }
        };
        let other = std::thread::spawn(take_turns(shared.clone(), 1));
        take_turns(shared.clone(), 0)();
        other.join().unwrap();
        assert_eq!(shared.1.waiters.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn waits_that_time_out_are_no_longer_counted() {
        let lock = Mutex::new(());
        let changed = Condvar::new();
        let mut held = lock.lock();
        assert!(changed.wait_for(&mut held, Duration::from_millis(1)));
        assert_eq!(changed.waiters.load(Ordering::SeqCst), 0);
        // Nobody waits: a notify is a no-op.
        changed.notify_one();
        changed.notify_all();
    }
}
