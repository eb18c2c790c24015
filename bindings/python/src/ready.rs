//! A one-shot flag a thread sleeps on until it is set, a timeout passes,
//! or (on Linux) a signal handler runs on that thread.
//!
//! A thread blocked in `result()` must notice Ctrl-C; a sleep a signal
//! ends lets it sleep long instead of waking every few milliseconds to
//! look (each wake-up costs tens of µs of CPU on a virtual machine).

use std::time::Duration;

/// Whether a signal handled on the sleeping thread ends its sleep at once;
/// elsewhere the sleeper has to look for signals now and then.
pub const WAKES_ON_SIGNAL: bool = cfg!(target_os = "linux");

/// Set once; threads sleep in [`Ready::wait`] until it is.
#[derive(Default)]
pub struct Ready {
    #[cfg(target_os = "linux")]
    word: std::sync::atomic::AtomicU32,
    #[cfg(not(target_os = "linux"))]
    set: (crate::sync::Mutex<bool>, std::sync::Condvar),
}

#[cfg(target_os = "linux")]
impl Ready {
    /// Sets the flag and wakes every sleeper.
    pub fn set(&self) {
        use rustix::thread::futex;
        use std::sync::atomic::Ordering;
        self.word.store(1, Ordering::Release);
        // A wake fails only for a word that is not one (never here).
        let _ = futex::wake(&self.word, futex::Flags::PRIVATE, u32::MAX);
    }

    /// Sleeps until the flag is set, `timeout` passes or a signal handler
    /// ran on this thread (or spuriously); whether it is set.
    ///
    /// The sleep is a futex wait, not a condition variable's: the standard
    /// library's waits go back to sleep when a signal interrupts them, and
    /// this one must not (Python's handlers are installed without
    /// `SA_RESTART`, and a timed futex wait is never restarted, so a signal
    /// ends it with `EINTR`).
    pub fn wait(&self, timeout: Duration) -> bool {
        use rustix::thread::futex;
        use std::sync::atomic::Ordering;
        if self.word.load(Ordering::Acquire) != 0 {
            return true;
        }
        let longest = futex::Timespec {
            tv_sec: futex::Secs::MAX,
            tv_nsec: 0,
        };
        let timeout = futex::Timespec::try_from(timeout).unwrap_or(longest);
        // Set meanwhile (`EAGAIN`), woken, timed out or interrupted: the
        // word says which matters.
        let _ = futex::wait(&self.word, futex::Flags::PRIVATE, 0, Some(&timeout));
        self.word.load(Ordering::Acquire) != 0
    }
}

#[cfg(not(target_os = "linux"))]
impl Ready {
    /// Sets the flag and wakes every sleeper.
    pub fn set(&self) {
        *self.set.0.lock() = true;
        self.set.1.notify_all();
    }

    /// Sleeps until the flag is set or `timeout` passes; whether it is set.
    pub fn wait(&self, timeout: Duration) -> bool {
        let mut set = self.set.0.lock();
        if !*set {
            set = self
                .set
                .1
                .wait_timeout(set, timeout)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        *set
    }
}
