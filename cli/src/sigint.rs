//! Ctrl-C: the first SIGINT asks the wait to cancel; the handler resets
//! itself (`SA_RESETHAND` on Unix; the C runtime's `signal` always does on
//! Windows), so a second Ctrl-C ends the program at once.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs the handler.
#[cfg(unix)]
pub fn install() {
    // SAFETY: a zeroed sigaction is valid; the handler only stores to an
    // atomic, which is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
}

/// Installs the handler.
#[cfg(windows)]
pub fn install() {
    // SAFETY: the handler only stores to an atomic; the C runtime resets
    // SIGINT to its default before calling it.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

/// Whether SIGINT arrived since [`install`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
