//! Host probe calls run on worker threads, never on the scheduler thread;
//! probes that block for a while (a busy interpreter lock) neither grow
//! the engine without bound nor lose planned samples.
#![cfg(target_os = "linux")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use waitfor::{probe_fn, Condition, Engine, Observation, Outcome, Pattern, Spec};

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_string()
}

/// Threads of this process whose name starts with `waitfor`.
fn engine_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("waitfor"))
        .count()
}

#[test]
fn a_quick_host_probe_never_runs_on_the_scheduler_thread() {
    let threads = Arc::new(Mutex::new(Vec::new()));
    let seen = threads.clone();
    let mut n = 0;
    let probe = probe_fn(move |_| {
        n += 1;
        seen.lock().unwrap().push(thread_name());
        Ok(Observation::text(if n < 20 { "no" } else { "ready" }))
    });
    let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
        .interval(Duration::from_millis(10))
        .max_wait(Duration::from_secs(60));
    let result = Engine::new().wait(spec, probe).unwrap();
    assert_eq!((result.outcome, result.samples), (Outcome::Matched, 20));
    let threads = threads.lock().unwrap();
    assert_eq!(threads.len(), 20);
    assert!(
        threads.iter().all(|t| t == "waitfor-worker"),
        "calls ran on {threads:?}"
    );
}

#[test]
fn probes_that_wait_for_a_busy_lock_keep_the_engine_small_and_keep_their_pace() {
    // A busy host holds one lock most of the time, as a Python host's main
    // thread holds the interpreter lock; 50 waits' probes take it for a
    // moment each call, so a call is quick or blocks for a while.
    const WAITS: usize = 50;
    const INTERVAL: Duration = Duration::from_millis(20);
    const MAX_WAIT: Duration = Duration::from_secs(2);
    let engine = Engine::new();
    let lock = Arc::new(Mutex::new(()));
    let stop = Arc::new(AtomicBool::new(false));
    let host = {
        let (lock, stop) = (lock.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let held = lock.lock().unwrap();
                std::thread::sleep(Duration::from_millis(2));
                drop(held);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let handles: Vec<_> = (0..WAITS)
        .map(|_| {
            let lock = lock.clone();
            let probe = probe_fn(move |_| {
                drop(lock.lock().unwrap());
                Ok(Observation::text("not yet"))
            });
            let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
                .interval(INTERVAL)
                .max_wait(MAX_WAIT);
            engine.start(spec, probe).unwrap()
        })
        .collect();
    let mut most_threads = 0;
    let mut results = Vec::new();
    for handle in &handles {
        loop {
            most_threads = most_threads.max(engine_threads());
            if let Some(result) = handle.wait_timeout(Duration::from_millis(10)) {
                results.push(result);
                break;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    host.join().unwrap();
    let planned = (MAX_WAIT.as_millis() / INTERVAL.as_millis()) as u64;
    let mut taken = 0;
    for result in results {
        assert_eq!(result.outcome, Outcome::Timeout, "{:?}", result.error);
        taken += result.samples;
    }
    let share = taken as f64 / (planned * WAITS as u64) as f64;
    eprintln!(
        "{most_threads} engine threads at most, {:.1}% of planned samples",
        share * 100.0
    );
    // The pool grows when no call has finished for a few milliseconds
    // while calls are queued (workers.rs): on a loaded machine, workers
    // waiting for a core look stalled too, and the pool grows by as many
    // workers as calls are queued, at most one per wait (with four CPU
    // hogs here: 26 to 60 engine threads, 50 workers among them; a handful
    // when idle). So the bound that holds by construction is a worker per
    // wait, the engine's own few and this binary's other test's: a thread
    // per call would be thousands (100 calls a wait). And a wait blocked
    // now and then by the lock still takes most of its samples (half: a
    // loaded machine delays calls past their planned times, which are
    // skipped; 77% was seen with four CPU hogs).
    assert!(
        most_threads <= WAITS + 20,
        "{most_threads} engine threads for {WAITS} waits"
    );
    assert!(
        share >= 0.5,
        "{taken} of {} planned samples",
        planned * WAITS as u64
    );
}
