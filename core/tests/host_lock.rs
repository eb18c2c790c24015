//! Probes whose calls need a host lock (Python's interpreter lock): while
//! the host holds it, the calls wait for it in a queue, not a worker
//! each; a call that hangs after letting go of the lock (a Python probe in
//! `time.sleep`) does not stop the others. A binary of its own: it counts
//! the process's worker threads.

use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use waitfor::{
    Condition, Engine, HostLock, Observation, Outcome, Pattern, Probe, ProbeContext, ProbeError,
    Spec,
};

/// Stands in for an interpreter lock: held by one thread at a time; a
/// call may let go of it while it blocks. Counts how often it was taken.
#[derive(Default)]
struct Interpreter {
    held: Mutex<bool>,
    freed: Condvar,
    holds: AtomicU64,
}

impl Interpreter {
    fn take(&self) {
        let mut held = self.held.lock().unwrap();
        while *held {
            held = self.freed.wait(held).unwrap();
        }
        *held = true;
    }

    fn free(&self) {
        *self.held.lock().unwrap() = false;
        self.freed.notify_one();
    }
}

impl HostLock for Interpreter {
    fn hold(&self, calls: &mut dyn FnMut()) {
        self.take();
        self.holds.fetch_add(1, Ordering::SeqCst);
        calls();
        self.free();
    }
}

/// Answers "ready" at once, or, with `hang`, says it entered, lets go of
/// the lock and blocks until the test ends (as `time.sleep` in Python
/// does).
struct Scripted {
    interpreter: Arc<Interpreter>,
    hang: Option<(Sender<()>, Receiver<()>)>,
}

impl Probe for Scripted {
    fn sample(&mut self, _: &ProbeContext) -> Result<Observation, ProbeError> {
        if let Some((entered, release)) = &self.hang {
            self.interpreter.free();
            let _ = entered.send(());
            let _ = release.recv();
            self.interpreter.take();
        }
        Ok(Observation::text("ready"))
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

fn spec() -> Spec {
    Spec::new(Condition::Matches(Pattern::literal("ready"))).max_wait(Duration::from_secs(60))
}

#[test]
fn calls_waiting_for_a_held_host_lock_wait_in_a_queue_not_a_worker_each() {
    let interpreter = Arc::new(Interpreter::default());
    let engine = Engine::new();
    // The host's own thread holds the lock, as a busy main thread does.
    interpreter.take();
    let waits: Vec<_> = (0..200)
        .map(|_| {
            let probe = Scripted {
                interpreter: interpreter.clone(),
                hang: None,
            };
            engine.start(spec(), probe).unwrap()
        })
        .collect();
    // The scenario, not a synchronisation: the host stays busy for many
    // starvation windows while the calls queue.
    std::thread::sleep(Duration::from_millis(300));
    let workers_while_held = worker_threads();
    interpreter.free();
    for wait in waits {
        assert_eq!(wait.wait().outcome, Outcome::Matched);
    }
    // A worker per call: 200 (the other test's engine runs beside).
    assert!(workers_while_held <= 10, "{workers_while_held} workers");
    let holds = interpreter.holds.load(Ordering::SeqCst);
    assert!(holds < 50, "the lock was taken {holds} times for 200 calls");
}

#[test]
fn a_call_hung_after_letting_go_of_the_host_lock_does_not_stop_the_others() {
    let interpreter = Arc::new(Interpreter::default());
    let engine = Engine::new();
    let (entered_tx, entered) = crossbeam_channel::bounded::<()>(1);
    let (release, release_rx) = crossbeam_channel::bounded::<()>(0);
    let hung = engine
        .start(
            spec(),
            Scripted {
                interpreter: interpreter.clone(),
                hang: Some((entered_tx, release_rx)),
            },
        )
        .unwrap();
    entered.recv().unwrap();
    let quick: Vec<_> = (0..20)
        .map(|_| {
            let probe = Scripted {
                interpreter: interpreter.clone(),
                hang: None,
            };
            engine
                .start(spec().max_wait(Duration::from_secs(20)), probe)
                .unwrap()
        })
        .collect();
    for wait in quick {
        assert_eq!(wait.wait().outcome, Outcome::Matched);
    }
    drop(release);
    assert_eq!(hung.wait().outcome, Outcome::Matched);
}
