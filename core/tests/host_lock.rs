//! Probes whose calls need a host lock (Python's interpreter lock) while
//! the host holds it: the calls wait for it in runs, and the pool does not
//! grow a thread per call (a binary of its own: it counts the process's
//! worker threads). (While waits start, their compiles queued behind
//! workers waiting for the lock still add workers, one per compile at
//! most: see docs/ARCHITECTURE.md.)

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use waitfor::{
    Condition, Engine, HostLock, Observation, Outcome, Pattern, Probe, ProbeContext, ProbeError,
    Spec,
};

/// Stands in for an interpreter lock; counts how often it was taken.
#[derive(Default)]
struct Interpreter {
    lock: Mutex<()>,
    holds: AtomicU64,
}

impl HostLock for Interpreter {
    fn hold(&self, calls: &mut dyn FnMut()) {
        let _held = self.lock.lock().unwrap();
        self.holds.fetch_add(1, Ordering::SeqCst);
        calls();
    }
}

/// Counts its calls; "ready" once the host says so.
struct Scripted {
    interpreter: Arc<Interpreter>,
    calls: Arc<AtomicU64>,
    ready: Arc<AtomicBool>,
}

impl Probe for Scripted {
    fn sample(&mut self, _: &ProbeContext) -> Result<Observation, ProbeError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let text = if self.ready.load(Ordering::SeqCst) {
            "ready"
        } else {
            "not yet"
        };
        Ok(Observation::text(text))
    }

    fn host_lock(&self) -> Option<Arc<dyn HostLock>> {
        Some(self.interpreter.clone())
    }
}

fn worker_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "waitfor-worker")
        .count()
}

#[test]
fn calls_waiting_for_a_held_host_lock_run_in_a_few_runs_without_new_workers() {
    let interpreter = Arc::new(Interpreter::default());
    let (calls, ready) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let engine = Engine::new();
    let spec = || {
        Spec::new(Condition::Matches(Pattern::literal("ready")))
            .interval(Duration::from_millis(10))
            .max_wait(Duration::from_secs(60))
    };
    let waits: Vec<_> = (0..200)
        .map(|_| {
            let probe = Scripted {
                interpreter: interpreter.clone(),
                calls: calls.clone(),
                ready: ready.clone(),
            };
            engine.start(spec(), probe).unwrap()
        })
        .collect();
    // Every wait is sampling.
    while calls.load(Ordering::SeqCst) < 400 {
        std::thread::sleep(Duration::from_millis(5));
    }
    // The host's own thread now holds the lock, as a busy main thread
    // does, for many starvation windows while the calls come due.
    let holds_before = interpreter.holds.load(Ordering::SeqCst);
    let calls_before = calls.load(Ordering::SeqCst);
    let busy = interpreter.lock.lock().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let workers_while_held = worker_threads();
    drop(busy);
    // Once it lets go, the calls that queued are made in a few runs.
    while calls.load(Ordering::SeqCst) < calls_before + 200 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let runs = interpreter.holds.load(Ordering::SeqCst) - holds_before;
    ready.store(true, Ordering::SeqCst);
    for wait in waits {
        assert_eq!(wait.wait().outcome, Outcome::Matched);
    }
    assert!(workers_while_held <= 4, "{workers_while_held} workers");
    assert!(runs < 100, "the lock was taken {runs} times for 200 calls");
}
