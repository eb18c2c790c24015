//! Where a lone wait's CPU goes: context switches and CPU time per engine
//! thread for each sample, and the floor of the engine's design (a thread
//! that sleeps to the sample's time hands the call to a second thread and
//! sleeps for its answer) beside a bare thread-and-sleep loop. Run:
//! `cargo run --release -p waitfor-bench --bin wakeups`.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use waitfor::{probe_fn, Condition, Engine, Observation, Pattern, Spec};
use waitfor_bench::process_cpu;

const INTERVAL: Duration = Duration::from_millis(50);
const WINDOW: Duration = Duration::from_secs(4);

/// Per thread name: voluntary and involuntary switches, CPU time in ns.
fn thread_stats() -> BTreeMap<String, [u64; 3]> {
    let mut stats = BTreeMap::new();
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map_or("", str::trim)
                .to_string()
        };
        let schedstat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        let cpu = schedstat
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok());
        let entry = stats.entry(field("Name:")).or_insert([0; 3]);
        entry[0] += field("voluntary_ctxt_switches:").parse().unwrap_or(0);
        entry[1] += field("nonvoluntary_ctxt_switches:").parse().unwrap_or(0);
        entry[2] += cpu.unwrap_or(0);
    }
    stats
}

fn lone_wait() {
    // The engine's threads start before the count does.
    let spec = |max_wait| {
        Spec::new(Condition::Matches(Pattern::literal("ready")))
            .interval(INTERVAL)
            .max_wait(max_wait)
    };
    let ready = probe_fn(|_| Ok(Observation::text("ready")));
    Engine::global().wait(spec(WINDOW), ready).unwrap();
    let before = thread_stats();
    let probe = probe_fn(|_| Ok(Observation::text("no")));
    let samples = Engine::global().wait(spec(WINDOW), probe).unwrap().samples as f64;
    println!("one wait at 50 ms, {samples} samples; per sample:");
    println!("| thread | voluntary switches | involuntary | CPU |\n|---|---|---|---|");
    for (name, after) in thread_stats() {
        let was = before.get(&name).copied().unwrap_or([0; 3]);
        let per = |i: usize| after[i].saturating_sub(was[i]) as f64 / samples;
        if name.starts_with("waitfor") {
            println!(
                "| {name} | {:.2} | {:.2} | {:.1} µs |",
                per(0),
                per(1),
                per(2) / 1e3
            );
        }
    }
}

/// A slot one thread fills and another takes, sleeping until it is filled.
struct Slot<T> {
    value: Mutex<Option<T>>,
    filled: Condvar,
}

impl<T> Slot<T> {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            value: Mutex::new(None),
            filled: Condvar::new(),
        })
    }

    fn put(&self, value: T) {
        *self.value.lock().unwrap() = Some(value);
        self.filled.notify_one();
    }

    /// The value, or `None` at `until`.
    fn take(&self, until: Instant) -> Option<T> {
        let mut value = self.value.lock().unwrap();
        loop {
            if let Some(v) = value.take() {
                return Some(v);
            }
            let left = until.checked_duration_since(Instant::now())?;
            value = self.filled.wait_timeout(value, left).unwrap().0;
        }
    }
}

/// CPU per second of a thread that sleeps to each sample's time, hands
/// the call to a worker and sleeps until its answer: three wake-ups a
/// sample, as the engine's scheduler and worker.
fn hand_over_loop() -> Duration {
    let (calls, answers) = (Slot::<bool>::new(), Slot::<bool>::new());
    let (take, give) = (calls.clone(), answers.clone());
    let worker = std::thread::spawn(move || {
        let far = || Instant::now() + Duration::from_secs(60);
        while take.take(far()) == Some(true) {
            give.put(std::hint::black_box("no").contains("ready"));
        }
    });
    let cpu = process_cpu();
    let started = Instant::now();
    let mut next = started;
    while started.elapsed() < WINDOW {
        next += INTERVAL;
        answers.take(next);
        calls.put(true);
        answers.take(Instant::now() + Duration::from_secs(60));
    }
    let spent = process_cpu() - cpu;
    calls.put(false);
    worker.join().unwrap();
    spent.div_f64(WINDOW.as_secs_f64())
}

/// CPU per second of the same with the worker sleeping to each sample's
/// time itself, then handing the answer over: two wake-ups a sample.
fn worker_sleeps_loop() -> Duration {
    let answers = Slot::<bool>::new();
    let give = answers.clone();
    let cpu = process_cpu();
    let started = Instant::now();
    let worker = std::thread::spawn(move || {
        let (never, mut next) = (Slot::<()>::new(), started);
        while started.elapsed() < WINDOW {
            next += INTERVAL;
            never.take(next);
            give.put(std::hint::black_box("no").contains("ready"));
        }
    });
    while answers.take(started + WINDOW + INTERVAL).is_some() {}
    worker.join().unwrap();
    (process_cpu() - cpu).div_f64(WINDOW.as_secs_f64())
}

/// CPU per second of a thread polling with sleep: one wake-up a sample.
fn sleep_loop() -> Duration {
    let cpu = process_cpu();
    let started = Instant::now();
    std::thread::spawn(move || {
        while started.elapsed() < WINDOW {
            std::hint::black_box("no").contains("ready");
            std::thread::sleep(INTERVAL);
        }
    })
    .join()
    .unwrap();
    (process_cpu() - cpu).div_f64(WINDOW.as_secs_f64())
}

fn main() {
    lone_wait();
    println!("\nCPU per waiting second at 50 ms, against a sleep loop beside it:");
    println!("| sleep loop | hand-over (the design's floor) | worker sleeping to the sample |");
    println!("|---|---|---|");
    for _ in 0..3 {
        let sleep = sleep_loop();
        let show = |d: Duration| {
            let ratio = d.as_secs_f64() / sleep.as_secs_f64();
            format!("{:.2} ms ({ratio:.2}x)", d.as_secs_f64() * 1e3)
        };
        let (hand_over, worker_sleeps) = (hand_over_loop(), worker_sleeps_loop());
        println!(
            "| {} | {} | {} |",
            show(sleep),
            show(hand_over),
            show(worker_sleeps)
        );
    }
}
