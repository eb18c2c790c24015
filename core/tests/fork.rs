//! A forked child can wait: `Engine::global()` starts a fresh engine in a
//! child, whose parent's scheduler thread did not come along.
#![cfg(unix)]

use std::time::{Duration, Instant};
use waitfor::{probe_fn, Condition, Engine, Observation, Outcome, Pattern, Spec};

/// A wait that matches on its second sample; whether it did.
fn matches_on_its_second_sample() -> bool {
    let mut polls = ["", "x"].into_iter();
    let probe = probe_fn(move |_| Ok(Observation::text(polls.next().unwrap_or_default())));
    let spec = Spec::new(Condition::Matches(Pattern::literal("x")))
        .interval(Duration::from_millis(10))
        .max_wait(Duration::from_secs(10));
    Engine::global()
        .wait(spec, probe)
        .is_ok_and(|r| (r.outcome, r.samples) == (Outcome::Matched, 2))
}

#[test]
fn a_forked_child_waits_on_an_engine_of_its_own() {
    assert!(matches_on_its_second_sample(), "the parent's wait");
    // SAFETY: the child only waits and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = if matches_on_its_second_sample() { 0 } else { 2 };
        // SAFETY: ends the child without running the parent's exit code.
        unsafe { libc::_exit(code) };
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut status = 0;
    // SAFETY: waits for our own child without blocking.
    while unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == 0 {
        if Instant::now() > deadline {
            // SAFETY: our own child, which must not outlive the test.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the forked child's wait never ended");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child's wait did not match on its second sample"
    );
    assert!(
        matches_on_its_second_sample(),
        "the parent's wait after the fork"
    );
}
