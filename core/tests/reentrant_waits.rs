//! Host code the engine runs (a probe, an async probe's `begin`, a cancel
//! hook, `on_progress`, `on_done`) that starts waits of its own and waits
//! for them: no wait deadlocks, and no other wait is held up. Where the
//! result could need the very thread that would wait for it (the
//! scheduler, where `begin` runs; a delivery thread, where `on_done` runs),
//! the wait is refused at once.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use waitfor::{
    probe_fn, AsyncProbe, Condition, Engine, Observation, Outcome, Pattern, ProbeContext, Reply,
    Spec, WaitHandle, WaitOptions,
};

/// Longer than any ending in these tests takes, unless it deadlocked.
const STUCK: Duration = Duration::from_secs(60);

/// An engine of the test's own: one that deadlocks leaves the others be.
fn engine() -> &'static Engine {
    Box::leak(Box::new(Engine::new()))
}

fn ready_spec() -> Spec {
    Spec::new(Condition::Matches(Pattern::literal("ready")))
        .interval(Duration::from_millis(10))
        .max_wait(Duration::from_secs(20))
}

fn ready() -> impl waitfor::Probe {
    probe_fn(|_| Ok(Observation::text("ready")))
}

/// Runs `f` on a thread of its own; its value, or a panic if it had not
/// returned after [`STUCK`].
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(STUCK).expect("deadlocked")
}

/// Waits that end on both delivery threads, all matched.
fn others_end(engine: &'static Engine) {
    let others: Vec<_> = (0..8)
        .map(|_| engine.start(ready_spec(), ready()).unwrap())
        .collect();
    for other in others {
        assert_eq!(other.wait().outcome, Outcome::Matched);
    }
}

fn refused(result: &waitfor::WaitResult) {
    assert_eq!(result.outcome, Outcome::Error, "{result:?}");
    let error = result.error.as_deref().unwrap_or_default();
    assert!(error.contains("wait from another thread"), "{error}");
}

#[test]
fn a_probe_may_wait_for_a_wait_of_its_own() {
    let engine = engine();
    let result = within(move || {
        let outer = probe_fn(move |_| {
            let inner = engine.wait(ready_spec(), ready()).unwrap();
            Ok(Observation::text(format!("{:?}", inner.outcome)))
        });
        let spec = Spec::new(Condition::Matches(Pattern::literal("Matched")));
        engine.wait(spec, outer).unwrap()
    });
    assert_eq!(result.outcome, Outcome::Matched);
}

#[test]
fn on_done_waiting_for_another_wait_is_refused_and_cancels_it() {
    let engine = engine();
    let (inner, inner_ended, outer) = within(move || {
        let (tx, rx) = mpsc::channel();
        let (ended_tx, ended) = mpsc::channel();
        let options = WaitOptions::default().on_done(move |_| {
            let hangs = probe_fn(|ctx| {
                ctx.cancel.wait_timeout(STUCK);
                Ok(Observation::text("ready"))
            });
            let told = WaitOptions::default().on_done(move |r| {
                let _ = ended_tx.send(r.outcome);
            });
            let inner = engine.start_with(ready_spec(), Some(Box::new(hangs)), told);
            let _ = tx.send(inner.unwrap().wait());
        });
        let outer = engine
            .start_with(ready_spec(), Some(Box::new(ready())), options)
            .unwrap();
        let inner = rx.recv().unwrap();
        (inner, ended.recv().unwrap(), outer.wait().outcome)
    });
    refused(&inner);
    assert_eq!(
        inner_ended,
        Outcome::Cancelled,
        "no one is left to wait for it"
    );
    assert_eq!(outer, Outcome::Matched);
    within(move || others_end(engine));
}

#[test]
fn on_done_waiting_for_its_own_wait_is_refused() {
    let engine = engine();
    let own = within(move || {
        let own: Arc<Mutex<Option<WaitHandle>>> = Arc::default();
        let (tx, rx) = mpsc::channel();
        let options = WaitOptions::default().on_done({
            let own = own.clone();
            move |_| {
                let handle = own.lock().unwrap().take().expect("the handle is in place");
                let _ = tx.send(handle.wait());
            }
        });
        // The probe answers once the handle is in place.
        let (placed, is_placed) = mpsc::channel::<()>();
        let is_placed = Mutex::new(is_placed);
        let probe = probe_fn(move |_| {
            let _ = is_placed.lock().unwrap().recv();
            Ok(Observation::text("ready"))
        });
        let handle = engine.start_with(ready_spec(), Some(Box::new(probe)), options);
        *own.lock().unwrap() = Some(handle.unwrap());
        drop(placed);
        rx.recv().unwrap()
    });
    refused(&own);
    within(move || others_end(engine));
}

/// An async probe whose `begin` (on the scheduler thread) waits for a
/// wait of its own.
struct WaitsInBegin(&'static Engine, mpsc::Sender<waitfor::WaitResult>);

impl AsyncProbe for WaitsInBegin {
    fn begin(&mut self, _ctx: &ProbeContext, reply: Reply) {
        let inner = self.0.wait(ready_spec(), ready()).unwrap();
        let _ = self.1.send(inner);
        reply.send(Ok(Observation::text("ready")));
    }
}

#[test]
fn an_async_probe_waiting_in_begin_is_refused() {
    let engine = engine();
    let (outer, inner) = within(move || {
        let (tx, rx) = mpsc::channel();
        let probe = WaitsInBegin(engine, tx);
        let handle = engine.start_async(ready_spec(), probe, WaitOptions::default());
        (handle.unwrap().wait().outcome, rx.recv().unwrap())
    });
    assert_eq!(outer, Outcome::Matched);
    refused(&inner);
    within(move || others_end(engine));
}

/// An ended wait's cancel hooks run on the hook lane, not the scheduler: a hook
/// there may wait for a wait of its own like a probe.
#[test]
fn a_cancel_hook_of_an_ended_wait_may_wait_for_a_wait_of_its_own() {
    let engine = engine();
    let (outer, inner) = within(move || {
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(Some(tx));
        // Kept here: the probe may be dropped before its token's hooks run.
        let hooks = Arc::new(Mutex::new(Vec::new()));
        let kept = hooks.clone();
        let probe = probe_fn(move |ctx: &ProbeContext| {
            if let Some(tx) = tx.lock().unwrap().take() {
                let hook = ctx.cancel.on_cancel(move || {
                    let _ = tx.send(engine.wait(ready_spec(), ready()).unwrap());
                });
                hooks.lock().unwrap().push(hook);
            }
            Ok(Observation::text("not yet"))
        });
        let spec = ready_spec().max_wait(Duration::from_millis(300));
        let outer = engine.wait(spec, probe).unwrap().outcome;
        let inner = rx.recv().unwrap();
        drop(kept);
        (outer, inner)
    });
    assert_eq!(outer, Outcome::Timeout);
    assert_eq!(inner.outcome, Outcome::Matched, "{inner:?}");
    within(move || others_end(engine));
}

#[test]
fn on_progress_may_wait_for_its_own_wait() {
    let engine = engine();
    let (from_progress, from_host) = within(move || {
        let own: Arc<Mutex<Option<WaitHandle>>> = Arc::default();
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let options = WaitOptions::default().on_progress({
            let own = own.clone();
            move |_| {
                if let Some(handle) = own.lock().unwrap().take() {
                    let _ = tx.lock().unwrap().send(handle.wait().outcome);
                }
            }
        });
        let spec = Spec {
            progress_every: Duration::from_millis(10),
            ..ready_spec().max_wait(Duration::from_millis(500))
        };
        let not_yet = probe_fn(|_| Ok(Observation::text("not yet")));
        let handle = engine.start_with(spec, Some(Box::new(not_yet)), options);
        *own.lock().unwrap() = Some(handle.unwrap());
        let from_progress = rx.recv().unwrap();
        (
            from_progress,
            engine.wait(ready_spec(), ready()).unwrap().outcome,
        )
    });
    assert_eq!(from_progress, Outcome::Timeout);
    assert_eq!(from_host, Outcome::Matched);
}
