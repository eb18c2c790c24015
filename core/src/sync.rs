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
use std::sync::PoisonError;
use std::time::{Duration, Instant};

pub use std::sync::MutexGuard;

/// A mutual-exclusion lock (`std::sync::Mutex` without poisoning).
///
/// ```
/// let count = waitfor::sync::Mutex::new(0);
/// *count.lock() += 1;
/// assert_eq!(*count.lock(), 1);
/// ```
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

/// A condition variable for [`Mutex`].
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use waitfor::sync::{Condvar, Mutex};
/// let pair = Arc::new((Mutex::new(false), Condvar::new()));
/// let other = pair.clone();
/// std::thread::spawn(move || {
///     *other.0.lock() = true;
///     other.1.notify_all();
/// });
/// let mut ready = pair.0.lock();
/// while !*ready {
///     pair.1.wait_for(&mut ready, Duration::from_millis(100));
/// }
/// ```
#[derive(Default, Debug)]
pub struct Condvar(std::sync::Condvar);

impl Condvar {
    /// A condition variable nobody waits on.
    pub const fn new() -> Self {
        Self(std::sync::Condvar::new())
    }

    /// Wakes one waiter.
    pub fn notify_one(&self) {
        self.0.notify_one();
    }

    /// Wakes every waiter.
    pub fn notify_all(&self) {
        self.0.notify_all();
    }

    /// Releases `guard`'s lock until woken (or spuriously), then takes it
    /// again.
    pub fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        in_place(guard, |g| {
            self.0.wait(g).unwrap_or_else(PoisonError::into_inner)
        });
    }

    /// As [`Condvar::wait`], until `deadline` at the latest; whether the
    /// deadline passed.
    pub fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, deadline: Instant) -> bool {
        self.wait_for(guard, deadline.saturating_duration_since(Instant::now()))
    }

    /// As [`Condvar::wait`], for `timeout` at the most; whether it passed.
    pub fn wait_for<T>(&self, guard: &mut MutexGuard<'_, T>, timeout: Duration) -> bool {
        let mut timed_out = false;
        in_place(guard, |g| {
            let (g, result) = self
                .0
                .wait_timeout(g, timeout)
                .unwrap_or_else(PoisonError::into_inner);
            timed_out = result.timed_out();
            g
        });
        timed_out
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
