//! Answers that come in one after another wake the scheduler a few times
//! per round of samples, not once per answer: a host lock's lane making
//! its queued calls in a row (Python probes), or a host loop answering
//! async calls one by one (Node, asyncio). (A binary of its own: it
//! counts the switches of the process's scheduler threads.)

use crossbeam_channel::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use waitfor::{
    AsyncProbe, Condition, Engine, HostLock, Observation, Outcome, Pattern, Probe, ProbeContext,
    ProbeError, Reply, Spec, WaitHandle,
};

/// Stands in for an interpreter lock: the lane takes it once for a run of
/// calls.
#[derive(Default)]
struct Interpreter(Mutex<()>);

impl HostLock for Interpreter {
    fn hold(&self, calls: &mut dyn FnMut()) {
        let _held = self.0.lock().unwrap();
        calls();
    }
}

/// What one call costs the host (a Python or JavaScript probe's work).
const CALL: Duration = Duration::from_micros(100);

fn work() {
    let until = Instant::now() + CALL;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Works, then answers "not yet", holding the host's lock.
struct Busy(Arc<Interpreter>);

impl Probe for Busy {
    fn sample(&mut self, _: &ProbeContext) -> Result<Observation, ProbeError> {
        work();
        Ok(Observation::text("not yet"))
    }

    fn host_lock(&self) -> Option<Arc<dyn HostLock>> {
        Some(self.0.clone())
    }
}

/// The scheduler thread's voluntary switches: each is a sleep it was
/// woken from.
fn scheduler_sleeps() -> u64 {
    let tasks = std::fs::read_dir("/proc/self/task").unwrap();
    tasks
        .filter_map(|task| {
            let path = task.ok()?.path();
            let name = std::fs::read_to_string(path.join("comm")).ok()?;
            (name.trim() == "waitfor-schedul").then_some(())?;
            let status = std::fs::read_to_string(path.join("status")).ok()?;
            let line = status
                .lines()
                .find(|l| l.starts_with("voluntary_ctxt_switches:"))?;
            line.split(':').nth(1)?.trim().parse::<u64>().ok()
        })
        .sum()
}

/// Hands its calls to the host loop.
struct Queued(Sender<Reply>);

impl AsyncProbe for Queued {
    fn begin(&mut self, _: &ProbeContext, reply: Reply) {
        self.0.send(reply).unwrap();
    }
}

/// 100 waits sampling every 50 ms for a second, started by `start`: the
/// scheduler's wake-ups per sample taken.
fn wake_ups_per_sample(start: impl Fn(Spec) -> WaitHandle) -> f64 {
    let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
        .interval(Duration::from_millis(50))
        .max_wait(Duration::from_secs(1));
    let before = scheduler_sleeps();
    let waits: Vec<_> = (0..100).map(|_| start(spec.clone())).collect();
    let samples: u64 = waits
        .into_iter()
        .map(|wait| {
            let result = wait.wait();
            assert_eq!(result.outcome, Outcome::Timeout);
            result.samples
        })
        .sum();
    (scheduler_sleeps() - before) as f64 / samples as f64
}

// One test: the two engines' schedulers are told apart from other
// threads by name only.
#[test]
fn a_run_of_answers_wakes_the_scheduler_a_few_times_not_once_each() {
    let interpreter = Arc::new(Interpreter::default());
    let engine = Engine::new();
    let lane = wake_ups_per_sample(|spec| engine.start(spec, Busy(interpreter.clone())).unwrap());
    eprintln!("a lane's answers: {lane:.3} scheduler wake-ups per sample");

    let engine = Engine::new();
    let (calls, queued) = crossbeam_channel::unbounded::<Reply>();
    let host_loop = std::thread::spawn(move || {
        for reply in queued {
            work();
            reply.send(Ok(Observation::text("not yet")));
        }
    });
    let replies = wake_ups_per_sample(|spec| {
        let probe = Queued(calls.clone());
        engine.start_async(spec, probe, Default::default()).unwrap()
    });
    eprintln!("a host loop's replies: {replies:.3} scheduler wake-ups per sample");
    drop((calls, engine));
    host_loop.join().unwrap();

    // Woken by each answer, the scheduler slept 0.7-0.8 times per sample;
    // letting a round's answers gather, 0.03-0.2 (the more, the busier the
    // machine).
    assert!(
        lane < 0.4,
        "a lane's answers: {lane:.3} wake-ups per sample"
    );
    assert!(
        replies < 0.4,
        "a host loop's replies: {replies:.3} wake-ups per sample"
    );
}
