//! A cancel token shared between a wait and the probe calls it makes.

use crate::sync::{Condvar, Mutex};
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
    /// Read without the lock: probes and bindings ask once per call.
    cancelled: AtomicBool,
    /// Held to set `cancelled` and to sleep on `changed`, so no sleeper
    /// misses the change.
    lock: Mutex<()>,
    changed: Condvar,
}

impl CancelToken {
    /// A token that is not cancelled yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the token; every clone sees it. Cancelling twice is harmless.
    pub fn cancel(&self) {
        let _held = self.inner.lock.lock();
        self.inner.cancelled.store(true, Ordering::Release);
        self.inner.changed.notify_all();
    }

    /// Whether [`CancelToken::cancel`] was called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
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
        let mut held = self.inner.lock.lock();
        while !self.is_cancelled() {
            match deadline {
                Some(deadline) => {
                    if self.inner.changed.wait_until(&mut held, deadline) {
                        return self.is_cancelled();
                    }
                }
                None => self.inner.changed.wait(&mut held),
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
