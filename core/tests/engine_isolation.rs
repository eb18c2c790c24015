//! No input can take the engine down: spec values at the ends of their
//! ranges, and host code that panics on the engine's own threads, end
//! their own wait at most; the next wait on the same engine still works.

use std::sync::mpsc;
use std::time::Duration;
use waitfor::{
    probe_fn, Condition, Engine, Observation, Outcome, Pattern, Policy, Probe, ProbeContext,
    ProbeError, ProbeMode, ResumeToken, Spec, ViewKind, WaitOptions, WaitResult,
};

/// Longer than any wait here takes on a loaded machine; a wait still
/// running then means the engine stopped.
const PATIENCE: Duration = Duration::from_secs(20);

fn result_of(engine: &Engine, spec: Spec, probe: impl Probe, policy: Policy) -> WaitResult {
    let options = WaitOptions::default().policy(policy);
    let handle = engine
        .start_with(spec, Some(Box::new(probe)), options)
        .expect("a valid spec");
    handle
        .wait_timeout(PATIENCE)
        .expect("the wait never ended: the engine stopped")
}

/// A wait with an instant probe that matches, on the same engine.
fn assert_still_healthy(engine: &Engine) {
    let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
        .interval(Duration::from_millis(10))
        .max_wait(Duration::from_secs(10));
    let result = result_of(
        engine,
        spec,
        probe_fn(|_| Ok(Observation::text("ready"))),
        Policy::default(),
    );
    assert_eq!(result.outcome, Outcome::Matched);
}

#[test]
fn backoff_factors_that_overflow_a_duration_end_at_the_deadline() {
    let engine = Engine::new();
    for (factor, max_interval_ms) in [
        ("1e20", "60000"),
        ("1e308", "60000"),
        ("1e20", "9223372036854775807"),
        ("1.5", "9223372036854775807"),
    ] {
        let spec = Spec::from_json(&format!(
            r#"{{"until": {{"matches": "ready"}}, "interval_ms": 10, "max_wait_ms": 300,
                "backoff": {{"factor": {factor}, "max_interval_ms": {max_interval_ms}}}}}"#
        ))
        .unwrap();
        let result = result_of(
            &engine,
            spec,
            probe_fn(|_| Ok(Observation::text("starting"))),
            Policy::default(),
        );
        assert_eq!(result.outcome, Outcome::Timeout, "factor {factor}");
    }
    assert_still_healthy(&engine);
}

#[test]
fn the_longest_time_limits_saturate() {
    let engine = Engine::new();
    let longest = Policy::default().max_wait_ceiling(Duration::MAX);
    let from_json = Spec::from_json(
        r#"{"until": {"quiet_for_ms": 9223372036854775807}, "max_wait_ms": 9223372036854775807,
            "interval_ms": 9223372036854775806, "progress_every_ms": 9223372036854775807}"#,
    )
    .unwrap();
    let native = Spec::new(Condition::Matches(Pattern::literal("ready")))
        .interval(Duration::MAX / 2)
        .max_wait(Duration::MAX);
    for spec in [from_json, native] {
        let (sampled, first_sample) = mpsc::channel();
        let probe = probe_fn(move |_| {
            let _ = sampled.send(());
            Ok(Observation::text("starting"))
        });
        let handle = engine
            .start_with(
                spec,
                Some(Box::new(probe)),
                WaitOptions::default().policy(longest.clone()),
            )
            .unwrap();
        // The scheduler has armed the timers of a wait that sleeps
        // "forever" and slept until then.
        first_sample.recv_timeout(PATIENCE).unwrap();
        handle.control().cancel();
        let result = handle.wait_timeout(PATIENCE).expect("the engine stopped");
        assert_eq!(result.outcome, Outcome::Cancelled);
    }
    assert_still_healthy(&engine);
}

/// A stream probe whose `resume_point` (host code the scheduler thread
/// calls as the wait ends) panics.
struct PanicsWhenAskedWhereToResume;

impl Probe for PanicsWhenAskedWhereToResume {
    fn sample(&mut self, _ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        Ok(Observation::text("ready\n"))
    }

    fn mode(&self) -> ProbeMode {
        ProbeMode::Stream
    }

    fn resume_point(&self) -> Option<ResumeToken> {
        panic!("resume point bug")
    }
}

#[test]
fn a_panic_on_the_scheduler_thread_ends_only_its_own_wait() {
    let engine = Engine::new();
    let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
        .view(ViewKind::Fresh)
        .max_wait(Duration::from_secs(10));
    let result = result_of(
        &engine,
        spec,
        PanicsWhenAskedWhereToResume,
        Policy::default(),
    );
    assert_eq!(result.outcome, Outcome::Error);
    let error = result.error.unwrap_or_default();
    assert!(error.contains("resume point bug"), "{error}");
    assert_still_healthy(&engine);
}

/// A probe whose drop (host code run as the wait ends) panics.
struct PanicsWhenDropped;

impl Probe for PanicsWhenDropped {
    fn sample(&mut self, _ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        Ok(Observation::text("ready"))
    }
}

impl Drop for PanicsWhenDropped {
    fn drop(&mut self) {
        panic!("drop bug")
    }
}

#[test]
fn a_probe_that_panics_when_dropped_still_lets_the_host_hear() {
    let engine = Engine::new();
    let spec =
        Spec::new(Condition::Matches(Pattern::literal("ready"))).max_wait(Duration::from_secs(10));
    let result = result_of(&engine, spec, PanicsWhenDropped, Policy::default());
    assert_eq!(result.outcome, Outcome::Matched);
    assert_still_healthy(&engine);
}

/// A progress callback slower than the samples does not queue a report
/// per sample for the result to wait behind: a newer report replaces the
/// one not yet delivered. Queued, 100 reports of 50 ms each held a 1 s
/// wait's result for 5 s.
/// A progress callback that blocks holds no result: neither its own
/// wait's (a 20 s callback held a 1 s wait's result 19 s) nor another
/// wait's that shared its delivery lane. Results have lanes of their own.
#[test]
fn a_blocked_progress_callback_holds_no_result() {
    let (release, blocked) = mpsc::channel::<()>();
    let blocked = std::sync::Mutex::new(blocked);
    let (began, first_report) = mpsc::channel::<()>();
    let options = WaitOptions::default().on_progress(move |_| {
        let _ = began.send(());
        let _ = blocked
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(120));
    });
    let spec = || {
        let mut spec = Spec::new(Condition::Matches(Pattern::literal("never")))
            .interval(Duration::from_millis(10))
            .max_wait(Duration::from_millis(300));
        spec.progress_every = Duration::from_millis(1);
        spec
    };
    let never = || Some(Box::new(probe_fn(|_| Ok(Observation::text("x")))) as Box<dyn Probe>);
    let reporting = Engine::global()
        .start_with(spec(), never(), options)
        .unwrap();
    first_report
        .recv_timeout(PATIENCE)
        .expect("the first report began");
    // Waits take lanes by id: four others, so some shared its lane.
    let others: Vec<_> = (0..4)
        .map(|_| {
            Engine::global()
                .start_with(spec(), never(), WaitOptions::default())
                .unwrap()
        })
        .collect();
    for handle in others.iter().chain([&reporting]) {
        let result = handle.wait_timeout(PATIENCE).expect("held by the callback");
        assert_eq!(result.outcome, Outcome::Timeout);
    }
    drop(release);
}

/// A wait's ending reaches delivery before its cancel token's hooks run:
/// a hook that blocks (it runs on the hook thread) holds no result of its turn,
/// its own wait's included. The token is cancelled by the time the
/// host hears.
#[test]
fn a_blocking_cancel_hook_holds_no_result_of_its_turn() {
    use std::sync::{Arc, Mutex};
    let (release, blocked) = mpsc::channel::<()>();
    let blocked = Arc::new(Mutex::new(blocked));
    let (hooked, hook_registered) = mpsc::channel::<waitfor::CancelToken>();
    let probe = probe_fn(move |ctx| {
        let blocked = blocked.clone();
        let hook = ctx.cancel.on_cancel(move || {
            let _ = blocked
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(120));
        });
        let _ = hooked.send(ctx.cancel.clone());
        ctx.cancel.wait_timeout(Duration::from_secs(120));
        drop(hook);
        Ok(Observation::text(""))
    });
    // An engine of its own: the hook holds its hook thread until
    // released.
    let engine = Engine::new();
    let spec = Spec::new(Condition::Matches(Pattern::literal("never")))
        .interval(Duration::from_millis(10))
        .max_wait(Duration::from_millis(100));
    let handle = engine.start(spec, probe).unwrap();
    let token = hook_registered
        .recv_timeout(PATIENCE)
        .expect("the call began");
    let result = handle.wait_timeout(PATIENCE);
    let told = token.is_cancelled();
    drop(release);
    let result = result.expect("the result was held by the cancel hook");
    // Its deadline, with no sample completed.
    assert_eq!(result.outcome, Outcome::ProbeError, "{:?}", result.error);
    assert!(told, "the host heard before the call's token was cancelled");
}

/// A probe's cancel hook is host code: when the engine ends its wait (a
/// match here), the hook runs on a thread of the engine's other than the
/// scheduler, so a hook that blocks stalls no other wait's samples or
/// deadline.
#[test]
fn a_blocking_cancel_hook_of_an_ended_wait_stalls_no_other_wait() {
    use std::sync::{Arc, Mutex};
    let (release, blocked) = mpsc::channel::<()>();
    let blocked = Arc::new(Mutex::new(blocked));
    let (ran, ran_on) = mpsc::channel::<Option<String>>();
    let (keep, kept) = mpsc::channel::<waitfor::CancelHook>();
    let probe = probe_fn(move |ctx| {
        let (blocked, ran) = (blocked.clone(), ran.clone());
        let hook = ctx.cancel.on_cancel(move || {
            let _ = ran.send(std::thread::current().name().map(String::from));
            let _ = blocked
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(120));
        });
        // Kept registered past the call: it runs when the wait ends.
        let _ = keep.send(hook);
        Ok(Observation::text("ready"))
    });
    // An engine of its own: on the scheduler, the hook would hold it.
    let engine = Engine::new();
    let ready =
        Spec::new(Condition::Matches(Pattern::literal("ready"))).max_wait(Duration::from_secs(60));
    let hooked = result_of(&engine, ready, probe, Policy::default());
    let thread = ran_on.recv_timeout(PATIENCE);
    // Started while the hook blocks.
    let never = Spec::new(Condition::Matches(Pattern::literal("never")))
        .interval(Duration::from_millis(10))
        .max_wait(Duration::from_millis(200));
    let other = engine
        .start(never, probe_fn(|_| Ok(Observation::text(""))))
        .unwrap()
        .wait_timeout(PATIENCE);
    drop(release);
    drop(kept);
    assert_eq!(hooked.outcome, Outcome::Matched);
    let other = other.expect("the other wait never ended: the hook held the scheduler");
    assert_eq!(other.outcome, Outcome::Timeout);
    assert!(other.samples >= 1);
    let thread = thread.expect("the hook ran");
    assert_ne!(thread.as_deref(), Some("waitfor-scheduler"));
}

#[test]
fn a_slow_progress_callback_does_not_hold_the_result_past_its_deadline() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let reports = Arc::new(AtomicU64::new(0));
    let last_samples = Arc::new(AtomicU64::new(0));
    let (counted, last) = (reports.clone(), last_samples.clone());
    let options = WaitOptions::default().on_progress(move |p| {
        counted.fetch_add(1, Ordering::SeqCst);
        last.store(p.samples, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(50));
    });
    let mut spec = Spec::new(Condition::Matches(Pattern::literal("never")))
        .interval(Duration::from_millis(10))
        .max_wait(Duration::from_secs(1));
    spec.progress_every = Duration::from_millis(1);
    let started = std::time::Instant::now();
    let result = Engine::global()
        .start_with(
            spec,
            Some(Box::new(probe_fn(|_| Ok(Observation::text("x"))))),
            options,
        )
        .unwrap()
        .wait();
    // Generous for a loaded machine: queued, it took 5 s.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(result.outcome, Outcome::Timeout);
    // Fewer reports than samples, the later ones the newest.
    let reported = reports.load(Ordering::SeqCst);
    assert!(reported >= 1 && reported < result.samples, "{reported}");
    assert!(last_samples.load(Ordering::SeqCst) > 1);
}
