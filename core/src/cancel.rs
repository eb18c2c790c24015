//! A cancel token shared between a wait and the probe calls it makes.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tells a probe call that its result is no longer wanted: the wait was
/// cancelled, reached its deadline, or abandoned the call.
///
/// Cloning gives another handle to the same token. Any thread may cancel it;
/// probes either poll [`CancelToken::is_cancelled`] or block in
/// [`CancelToken::wait_timeout`] instead of sleeping.
///
/// ```
/// use waitfor::CancelToken;
/// let token = CancelToken::new();
/// let seen_by_probe = token.clone();
/// token.cancel();
/// assert!(seen_by_probe.is_cancelled());
/// ```
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cancelled: Mutex<bool>,
    changed: Condvar,
    /// The same as `cancelled`, read without the lock: probes and bindings
    /// ask once per call.
    flag: AtomicBool,
}

impl CancelToken {
    /// A token that is not cancelled yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the token; every clone sees it. Cancelling twice is harmless.
    pub fn cancel(&self) {
        let mut cancelled = self.inner.cancelled.lock();
        *cancelled = true;
        self.inner.flag.store(true, Ordering::Release);
        self.inner.changed.notify_all();
    }

    /// Whether [`CancelToken::cancel`] was called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.inner.flag.load(Ordering::Acquire)
    }

    /// Blocks until the token is cancelled or `timeout` passes; returns
    /// whether it was cancelled. A probe sleeps in this instead of
    /// `thread::sleep`, so a cancelled wait releases it at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// let token = waitfor::CancelToken::new();
    /// assert!(!token.wait_timeout(Duration::from_millis(1)));
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut cancelled = self.inner.cancelled.lock();
        while !*cancelled {
            match deadline {
                Some(deadline) => {
                    if self
                        .inner
                        .changed
                        .wait_until(&mut cancelled, deadline)
                        .timed_out()
                    {
                        return *cancelled;
                    }
                }
                None => self.inner.changed.wait(&mut cancelled),
            }
        }
        true
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
