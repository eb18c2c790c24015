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
        use std::sync::atomic::Ordering;
        self.word.store(1, Ordering::Release);
        // SAFETY: the word lives as long as `self`; FUTEX_WAKE only reads
        // its address.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            );
        }
    }

    /// Sleeps until the flag is set, `timeout` passes or a signal handler
    /// ran on this thread (or spuriously); whether it is set.
    pub fn wait(&self, timeout: Duration) -> bool {
        use std::sync::atomic::Ordering;
        if self.word.load(Ordering::Acquire) != 0 {
            return true;
        }
        let timeout = libc::timespec {
            tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
            // Below 1e9: fits a c_long everywhere.
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: the word and the timespec outlive the call; FUTEX_WAIT
        // sleeps only while the word is still 0, and returns on a wake, the
        // timeout or a signal (EINTR: Python's handlers are installed
        // without SA_RESTART, and a timed futex wait is not restarted).
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                0u32,
                &timeout as *const libc::timespec,
            );
        }
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
