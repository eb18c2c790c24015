//! A forked child can wait: `Engine::global()` starts a fresh engine in a
//! child, whose parent's scheduler thread did not come along.
#![cfg(unix)]

mod support;

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

/// Runs `child` in a forked child and says whether it answered true; a
/// child still running after 30 s is killed, and its answer is no.
fn in_forked_child(child: impl FnOnce() -> bool) -> bool {
    support::fork::in_forked_child(Duration::from_secs(30), child)
}

#[test]
fn a_forked_child_waits_on_an_engine_of_its_own() {
    assert!(matches_on_its_second_sample(), "the parent's wait");
    assert!(
        in_forked_child(matches_on_its_second_sample),
        "the child's wait did not match on its second sample"
    );
    assert!(
        matches_on_its_second_sample(),
        "the parent's wait after the fork"
    );
}

/// A child has none of the threads that would end its parent's wait:
/// waiting for it there returns at once saying so, instead of for good.
#[test]
fn a_forked_child_waiting_for_its_parents_wait_hears_why_at_once() {
    let never = probe_fn(|_| Ok(Observation::text("")));
    let spec =
        Spec::new(Condition::Matches(Pattern::literal("x"))).max_wait(Duration::from_secs(60));
    let handle = Engine::global().start(spec, never).unwrap();
    let refused = |r: &waitfor::WaitResult| {
        r.outcome == Outcome::Error && r.error.as_deref().is_some_and(|e| e.contains("forked"))
    };
    assert!(in_forked_child(|| {
        handle
            .wait_timeout(Duration::from_secs(60))
            .is_some_and(|r| refused(&r))
            && !handle.wait_released(Duration::from_secs(60))
    }));
    let control = handle.control();
    assert!(in_forked_child(move || refused(&handle.wait())));
    control.cancel();
}

/// A wait that ended before the fork has its result in the child too.
#[test]
fn a_forked_child_gets_a_result_its_parent_had_before_the_fork() {
    let ready = probe_fn(|_| Ok(Observation::text("x")));
    let spec =
        Spec::new(Condition::Matches(Pattern::literal("x"))).max_wait(Duration::from_secs(60));
    let (told, done) = std::sync::mpsc::channel();
    let options = waitfor::WaitOptions::default().on_done(move |_| {
        let _ = told.send(());
    });
    let handle = Engine::global()
        .start_with(spec, Some(Box::new(ready)), options)
        .unwrap();
    done.recv_timeout(Duration::from_secs(30))
        .expect("the wait ended");
    // The slot is filled just after `on_done`: a child forked a moment
    // later has the result (each child looks at its own copy).
    let deadline = Instant::now() + Duration::from_secs(30);
    let matched = || {
        handle
            .wait_timeout(Duration::ZERO)
            .is_some_and(|r| r.outcome == Outcome::Matched)
    };
    while !in_forked_child(matched) {
        assert!(
            Instant::now() < deadline,
            "no child got the parent's result"
        );
    }
    assert!(matched(), "the parent's own result");
}

/// The CPU time this process has used so far.
fn cpu_used() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// A child that cancels its copy of a parent's wait touches nothing of
/// the parent's: the command the parent's wait runs goes on, and the
/// parent's engine keeps sleeping while it does (a cancel that reached
/// the parent's run through the descriptors they share would wake it
/// for good, spinning a core until the command ended).
#[test]
fn a_forked_child_cancelling_its_parents_wait_leaves_the_parent_alone() {
    let dir = std::env::temp_dir().join(format!("waitfor-fork-cancel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let started = dir.join("started");
    let script = format!("echo > {}; exec sleep 30", started.display());
    let spec = Spec::from_json(
        &serde_json::json!({
            "probe": {"command": {"argv": ["sh", "-c", script]}},
            "until": {"matches": "never"},
            "max_wait_ms": 60_000,
        })
        .to_string(),
    )
    .unwrap();
    let policy = waitfor::Policy::default().grants(waitfor::grants::Grants::all());
    let handle = Engine::global()
        .start_with(spec, None, waitfor::WaitOptions::default().policy(policy))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let control = handle.control();
    assert!(in_forked_child(move || {
        control.cancel();
        true
    }));
    // A window to measure in, not a synchronisation: the run sleeps in
    // `poll` throughout unless something woke it for good.
    let before = cpu_used();
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_used() - before;
    assert!(
        handle.wait_timeout(Duration::ZERO).is_none(),
        "the parent's wait ended"
    );
    handle.control().cancel();
    assert_eq!(handle.wait().outcome, Outcome::Cancelled);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        used < Duration::from_millis(300),
        "the parent used {used:?} of CPU in 2 s while its command slept"
    );
}

/// A probe that forks and returns in the child (a host's fork and exec
/// whose exec failed, its error returned) leaves that child on an engine
/// worker, the only thread it has, with no engine around it: the child
/// ends there, at once, with status 1, instead of waiting for work that
/// never comes (and running no other wait's probe calls).
#[test]
fn a_probe_returning_in_a_child_it_forked_ends_that_child() {
    let (forked, child) = std::sync::mpsc::channel();
    let probe = probe_fn(move |_| {
        // SAFETY: the child returns to the engine's worker, whose handling
        // of it is what this test checks.
        let pid = unsafe { libc::fork() };
        if pid > 0 {
            let _ = forked.send(pid);
        }
        Err(waitfor::ProbeError::new("exec failed"))
    });
    let spec =
        Spec::new(Condition::Matches(Pattern::literal("x"))).max_wait(Duration::from_secs(60));
    let handle = Engine::global().start(spec, probe).unwrap();
    let pid = child.recv_timeout(Duration::from_secs(30)).unwrap();
    handle.control().cancel();
    let (exited, exit) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: waits for the test's own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        let _ = exited.send(status);
    });
    // Generous: the child ends as soon as its probe returns.
    let Ok(status) = exit.recv_timeout(Duration::from_secs(30)) else {
        // SAFETY: our own child, which must not outlive the test (the
        // thread above reaps it).
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("the forked child still runs on the engine's worker");
    };
    assert!(libc::WIFEXITED(status), "status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 1);
}
