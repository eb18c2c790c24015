//! Probes whose calls need a host lock (Python's interpreter lock) while
//! the host holds it: the calls wait for it in runs, and the pool does not
//! grow a thread per call (a binary of its own: it counts the process's
//! worker threads).

use std::sync::atomic::{AtomicU64, Ordering};
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

struct Scripted(Arc<Interpreter>);

impl Probe for Scripted {
    fn sample(&mut self, _: &ProbeContext) -> Result<Observation, ProbeError> {
        Ok(Observation::text("ready"))
    }

    fn host_lock(&self) -> Option<Arc<dyn HostLock>> {
        Some(self.0.clone())
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
    let engine = Engine::new();
    let spec = || {
        Spec::new(Condition::Matches(Pattern::literal("ready"))).max_wait(Duration::from_secs(60))
    };
    // The host's own thread holds the lock, as a busy main thread does.
    let busy = interpreter.lock.lock().unwrap();
    let waits: Vec<_> = (0..200)
        .map(|_| engine.start(spec(), Scripted(interpreter.clone())).unwrap())
        .collect();
    // The scenario, not a synchronisation: the host stays busy for many
    // starvation windows while the calls queue.
    std::thread::sleep(Duration::from_millis(300));
    let workers_while_held = worker_threads();
    drop(busy);
    for wait in waits {
        assert_eq!(wait.wait().outcome, Outcome::Matched);
    }
    assert!(workers_while_held <= 4, "{workers_while_held} workers");
    let holds = interpreter.holds.load(Ordering::SeqCst);
    assert!(holds < 50, "the lock was taken {holds} times for 200 calls");
}
