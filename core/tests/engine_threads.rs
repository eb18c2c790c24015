//! The real engine on real threads: deadlines that hold whatever the probe
//! does, controls from other threads, panics, progress.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use waitfor::{
    probe_fn, Condition, Engine, Observation, Outcome, Pattern, Probe, ProbeContext, ProbeError,
    Spec, WaitOptions,
};

fn ready_spec(interval: Duration, max_wait: Duration) -> Spec {
    Spec::new(Condition::Matches(Pattern::literal("ready")))
        .interval(interval)
        .max_wait(max_wait)
}

/// Polls `check` until it holds or a generous deadline passes.
fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::yield_now();
    }
}

/// A probe whose second call blocks until it is cancelled; it counts its
/// calls and says when it is dropped.
struct HangsOnSecondCall {
    calls: Arc<AtomicU64>,
    saw_cancel: Arc<AtomicBool>,
    dropped: Arc<AtomicBool>,
}

impl Probe for HangsOnSecondCall {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            return Ok(Observation::text("starting"));
        }
        // "Never" returns: only the engine's cancel token releases it.
        while !ctx.cancel.wait_timeout(Duration::from_secs(3600)) {}
        self.saw_cancel.store(true, Ordering::SeqCst);
        Ok(Observation::text("ready"))
    }
}

impl Drop for HangsOnSecondCall {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_hung_probe_is_abandoned_at_the_deadline_and_no_call_starts_after() {
    let calls = Arc::new(AtomicU64::new(0));
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let probe = HangsOnSecondCall {
        calls: calls.clone(),
        saw_cancel: saw_cancel.clone(),
        dropped: dropped.clone(),
    };
    let started = Instant::now();
    let result = Engine::global()
        .wait(
            ready_spec(Duration::from_millis(10), Duration::from_millis(300)),
            probe,
        )
        .unwrap();
    let took = started.elapsed();
    assert_eq!(result.outcome, Outcome::Timeout);
    assert_eq!(result.samples, 1);
    assert_eq!(result.probe.abandoned, 1);
    assert!(
        took >= Duration::from_millis(300),
        "returned early: {took:?}"
    );
    assert!(
        took < Duration::from_secs(10),
        "deadline did not hold: {took:?}"
    );
    // The hung call is told through its token, and once the probe is gone
    // no call can ever start again: two calls, no more.
    eventually("the abandoned call sees its cancel token", || {
        saw_cancel.load(Ordering::SeqCst)
    });
    eventually("the probe is dropped", || dropped.load(Ordering::SeqCst));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_hung_probe_never_delays_another_wait() {
    let hung: Vec<_> = (0..8)
        .map(|_| {
            let probe = probe_fn(|ctx| {
                while !ctx.cancel.wait_timeout(Duration::from_secs(3600)) {}
                Ok(Observation::text(""))
            });
            Engine::global()
                .start(
                    ready_spec(Duration::from_millis(10), Duration::from_secs(60)),
                    probe,
                )
                .unwrap()
        })
        .collect();
    let quick = Engine::global()
        .wait(
            ready_spec(Duration::from_millis(10), Duration::from_secs(30)),
            probe_fn(|_| Ok(Observation::text("ready"))),
        )
        .unwrap();
    assert_eq!(quick.outcome, Outcome::Matched);
    for handle in hung {
        handle.control().cancel();
        let result = handle.wait();
        assert_eq!(result.outcome, Outcome::Cancelled);
        assert_eq!(result.probe.abandoned, 1);
    }
}

#[test]
fn cancel_from_another_thread() {
    // Told once the engine has taken in the first sample (a progress
    // report), not merely once the probe was called.
    let (first_sample, seen) = mpsc::channel();
    let options = WaitOptions::default().on_progress(move |_| {
        let _ = first_sample.send(());
    });
    let probe = probe_fn(|_| Ok(Observation::text("not yet")));
    let handle = Engine::global()
        .start_with(
            ready_spec(Duration::from_secs(10), Duration::from_secs(60)),
            Some(Box::new(probe)),
            options,
        )
        .unwrap();
    let control = handle.control();
    seen.recv().unwrap();
    std::thread::spawn(move || control.cancel()).join().unwrap();
    let result = handle.wait();
    assert_eq!(result.outcome, Outcome::Cancelled);
    assert_eq!(result.samples, 1);
}

#[test]
fn wake_from_another_thread_samples_at_once() {
    let (sampled, seen) = mpsc::channel();
    let calls = Arc::new(AtomicU64::new(0));
    let counter = calls.clone();
    let probe = probe_fn(move |_| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let _ = sampled.send(());
        Ok(Observation::text(if n == 0 { "starting" } else { "ready" }))
    });
    // The interval is far longer than the test's patience: only a wake
    // can end this wait in time.
    let handle = Engine::global()
        .start(
            ready_spec(Duration::from_secs(600), Duration::from_secs(1200)),
            probe,
        )
        .unwrap();
    seen.recv().unwrap();
    let control = handle.control();
    std::thread::spawn(move || control.wake()).join().unwrap();
    let result = handle
        .wait_timeout(Duration::from_secs(60))
        .expect("the wake did not take a sample");
    assert_eq!(result.outcome, Outcome::Matched);
    assert!(result.woken);
    assert_eq!(result.samples, 2);
}

#[test]
fn a_panicking_probe_is_a_probe_error() {
    let probe = probe_fn(|_| -> Result<Observation, ProbeError> { panic!("probe bug") });
    let result = Engine::global()
        .wait(
            ready_spec(Duration::from_millis(10), Duration::from_secs(30)),
            probe,
        )
        .unwrap();
    assert_eq!(result.outcome, Outcome::ProbeError);
    assert_eq!(
        result.probe.last_error.as_deref(),
        Some("probe panicked: probe bug")
    );
    // The engine is still healthy afterwards.
    let ok = Engine::global()
        .wait(
            ready_spec(Duration::from_millis(10), Duration::from_secs(30)),
            probe_fn(|_| Ok(Observation::text("ready"))),
        )
        .unwrap();
    assert_eq!(ok.outcome, Outcome::Matched);
}

#[test]
fn tolerated_errors_then_success_on_real_threads() {
    let calls = Arc::new(AtomicU64::new(0));
    let counter = calls.clone();
    let probe = probe_fn(move |_| match counter.fetch_add(1, Ordering::SeqCst) {
        0 | 1 => Err(ProbeError::new("connection refused")),
        _ => Ok(Observation::text("ready")),
    });
    let spec = ready_spec(Duration::from_millis(10), Duration::from_secs(30))
        .on_probe_error(waitfor::ErrorPolicy::Tolerate(2));
    let result = Engine::global().wait(spec, probe).unwrap();
    assert_eq!(result.outcome, Outcome::Matched);
    assert_eq!(result.probe.errors, 2);
    assert_eq!(
        result.probe.last_error.as_deref(),
        Some("connection refused")
    );
}

#[test]
fn progress_is_reported_and_done_is_called_once() {
    let progress = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let calls = Arc::new(AtomicU64::new(0));
    let (p, d, c) = (progress.clone(), done.clone(), calls.clone());
    let probe = probe_fn(move |_| {
        let n = c.fetch_add(1, Ordering::SeqCst);
        Ok(Observation::text(if n < 5 { "working" } else { "ready" }))
    });
    let mut spec = ready_spec(Duration::from_millis(10), Duration::from_secs(30));
    spec.progress_every = Duration::from_millis(1);
    let options = WaitOptions::default()
        .on_progress(move |report| {
            assert_eq!(report.last_line.as_deref(), Some("working"));
            p.fetch_add(1, Ordering::SeqCst);
        })
        .on_done(move |result| {
            assert_eq!(result.outcome, Outcome::Matched);
            d.fetch_add(1, Ordering::SeqCst);
        });
    let handle = Engine::global()
        .start_with(spec, Some(Box::new(probe)), options)
        .unwrap();
    assert_eq!(handle.wait().outcome, Outcome::Matched);
    assert_eq!(done.load(Ordering::SeqCst), 1);
    eventually("progress reports arrive", || {
        progress.load(Ordering::SeqCst) >= 1
    });
}

#[test]
fn a_spec_with_a_builtin_probe_and_a_host_probe_is_refused() {
    let spec =
        Spec::from_json(r#"{"probe": {"file": {"path": "/tmp/x"}}, "until": {"matches": "a"}}"#)
            .unwrap();
    let err = Engine::global()
        .start_with(
            spec,
            Some(Box::new(probe_fn(|_| Ok(Observation::text(""))))),
            WaitOptions::default(),
        )
        .err()
        .unwrap();
    assert_eq!(err.rule, waitfor::Rule::Conflict);
    let spec = Spec::from_json(r#"{"until": {"matches": "a"}}"#).unwrap();
    let err = Engine::global()
        .run(spec, WaitOptions::default())
        .err()
        .unwrap();
    assert_eq!(err.rule, waitfor::Rule::MissingField);
}

#[test]
fn wait_released_tells_when_an_abandoned_call_has_returned() {
    let (inside, entered) = mpsc::channel();
    let (finish, may_finish) = mpsc::channel::<()>();
    let probe = probe_fn(move |ctx| {
        let _ = inside.send(());
        // Outlives the wait's deadline: returns only when the test says.
        may_finish.recv().unwrap();
        assert!(ctx.cancel.is_cancelled());
        Ok(Observation::text(""))
    });
    let handle = Engine::global()
        .start(
            ready_spec(Duration::from_millis(10), Duration::from_millis(50)),
            probe,
        )
        .unwrap();
    entered.recv().unwrap();
    let result = handle
        .wait_timeout(Duration::from_secs(30))
        .expect("the deadline held");
    assert_eq!(result.probe.abandoned, 1);
    assert!(
        !handle.wait_released(Duration::from_millis(1)),
        "released while a call still runs"
    );
    finish.send(()).unwrap();
    assert!(handle.wait_released(Duration::from_secs(30)));
}

#[test]
fn a_panicking_done_callback_breaks_nothing() {
    let spec = || ready_spec(Duration::from_millis(10), Duration::from_secs(30));
    let ready = || Box::new(probe_fn(|_| Ok(Observation::text("ready")))) as Box<dyn Probe>;
    let options = WaitOptions::default().on_done(|_| panic!("host bug in on_done"));
    let first = Engine::global()
        .start_with(spec(), Some(ready()), options)
        .unwrap();
    let result = first
        .wait_timeout(Duration::from_secs(30))
        .expect("the handle still hears");
    assert_eq!(result.outcome, Outcome::Matched);
    let second = Engine::global()
        .start_with(spec(), Some(ready()), WaitOptions::default())
        .unwrap();
    let result = second
        .wait_timeout(Duration::from_secs(30))
        .expect("later results are delivered");
    assert_eq!(result.outcome, Outcome::Matched);
}

#[test]
fn the_host_hears_on_a_delivery_thread_once_the_probe_is_closed() {
    /// Ready on its second call.
    struct ClosedOnDrop(Arc<AtomicBool>);
    impl Probe for ClosedOnDrop {
        fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
            Ok(Observation::text(if ctx.sample < 2 {
                "starting"
            } else {
                "ready"
            }))
        }
    }
    impl Drop for ClosedOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let closed = Arc::new(AtomicBool::new(false));
    let seen = closed.clone();
    let (tx, heard) = mpsc::channel();
    let options = WaitOptions::default().on_done(move |_| {
        let thread = std::thread::current().name().map(str::to_string);
        drop(tx.send((thread, seen.load(Ordering::SeqCst))));
    });
    let spec = ready_spec(Duration::from_millis(10), Duration::from_secs(30));
    let probe = Box::new(ClosedOnDrop(closed));
    let handle = Engine::global()
        .start_with(spec, Some(probe), options)
        .unwrap();
    assert_eq!(handle.wait().outcome, Outcome::Matched);
    // Closing a probe may take a while: never on the scheduler, and
    // always before the host hears.
    assert_eq!(
        heard.recv().unwrap(),
        (Some("waitfor-delivery".to_string()), true)
    );
}
