//! Runs a check in a forked child: for the tests of what a child inherits
//! from its parent (locks a parent's thread held, counts, an engine).
//! Shared by the integration tests (`support`) and the crate's unit tests.

use std::sync::mpsc;
use std::time::Duration;

/// Runs `child` in a forked child and says whether it answered true (a
/// panic is no); a child still running after `patience` is killed, and its
/// answer is no.
pub fn in_forked_child(patience: Duration, child: impl FnOnce() -> bool) -> bool {
    // SAFETY: the child only runs `child` and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child));
        // SAFETY: ends the child without running the parent's exit code.
        unsafe { libc::_exit(if matches!(answer, Ok(true)) { 0 } else { 2 }) };
    }
    let (exited, exit) = mpsc::channel();
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: waits for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        let _ = exited.send(status);
    });
    match exit.recv_timeout(patience) {
        Ok(status) => libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        Err(_) => {
            // SAFETY: our own child, which must not outlive the test (the
            // thread above reaps it).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            false
        }
    }
}
