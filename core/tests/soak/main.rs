//! The soak and fault suite (issue 19): many waits at once whose host
//! probes answer, never match, hang, fail, panic or flood, with cancels
//! and wakes at random times, beside built-in probes whose targets are
//! replaced, truncated or killed under them, or that hang and flood.
//!
//! Every wait must end by its deadline (plus a generous margin) with an
//! outcome its behaviour allows, no probe may be called after its
//! result, and once the hung calls are released the threads, open
//! descriptors, resident memory and child processes come back to what
//! they were before.
//!
//! `SOAK_WAITS` sets the number of waits (600 by default; `scripts/soak.sh`
//! runs 10,000 in release mode) and `SOAK_SEED` replays a run (the seed
//! is printed). Alone in its test binary so the process is its own.
#![cfg(unix)] // tmux, process groups and /proc: Unix.

mod builtin;
mod gate;
mod host_probe;
mod resources;
mod rng;
#[path = "../support/mod.rs"]
mod support;

use builtin::{CommandKind, FileTarget};
use gate::Gate;
use host_probe::{Behaviour, HostProbe, PANIC_MESSAGE};
use resources::{LoadWatch, Usage};
use rng::Rng;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use waitfor::{
    Condition, Engine, ErrorPolicy, Outcome, Pattern, Spec, WaitControl, WaitHandle, WaitOptions,
    WaitResult,
};

/// How far past its deadline a result may arrive before the wait counts
/// as hung.
const MARGIN: Duration = Duration::from_secs(5);
/// How long threads, descriptors and memory get to come back: extra
/// workers leave after some seconds idle.
const SETTLE: Duration = Duration::from_secs(30);
/// The output cap of host-probe waits.
const CAP: usize = 4096;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Host(Behaviour),
    Command(CommandKind),
    /// A `file` wait whose file is replaced and truncated under it.
    File,
    /// A tmux pane wait whose server is killed mid-wait.
    Tmux,
}

/// The random mix of host and command waits, in percent.
const MIX: &[(u64, Kind)] = &[
    (28, Kind::Host(Behaviour::MatchNow)),
    (16, Kind::Host(Behaviour::NeverMatch)),
    (10, Kind::Host(Behaviour::HangUntilCancelled)),
    (6, Kind::Host(Behaviour::HangForever)),
    (4, Kind::Host(Behaviour::HangLater)),
    (7, Kind::Host(Behaviour::Fail)),
    (7, Kind::Host(Behaviour::FailTolerated)),
    (7, Kind::Host(Behaviour::Panic)),
    (7, Kind::Host(Behaviour::Oversized)),
    (4, Kind::Command(CommandKind::Echo)),
    (2, Kind::Command(CommandKind::Sleep)),
    (2, Kind::Command(CommandKind::Flood)),
];

impl Kind {
    /// The outcomes this kind allows when not cancelled, and words the
    /// result's error must hold (one of them).
    fn expected(self) -> (&'static [Outcome], Option<&'static [&'static str]>) {
        use Behaviour::*;
        match self {
            Kind::Host(MatchNow | FailTolerated)
            | Kind::Command(CommandKind::Echo)
            | Kind::File => (&[Outcome::Matched], None),
            Kind::Host(NeverMatch | HangLater) => (&[Outcome::Timeout], None),
            Kind::Host(HangUntilCancelled | HangForever) => {
                (&[Outcome::ProbeError], Some(&["no sample completed"]))
            }
            // The command is given the wait's time left and killed when it
            // is spent, on a loaded machine before the engine abandons the
            // call at the deadline: the same ending either way.
            Kind::Command(CommandKind::Sleep) => {
                (&[Outcome::ProbeError], Some(&["no sample completed"]))
            }
            Kind::Host(Fail) => (&[Outcome::ProbeError], Some(&["soak: refused"])),
            Kind::Host(Panic) => (&[Outcome::ProbeError], Some(&["panicked"])),
            Kind::Host(Oversized) | Kind::Command(CommandKind::Flood) => {
                (&[Outcome::Error], Some(&["exceeds the cap"]))
            }
            Kind::Tmux => (&[Outcome::Gone, Outcome::ProbeError], None),
        }
    }

    /// Whether the probe's first call answers at once: such a wait keeps
    /// its schedule whatever other waits' probes do.
    fn healthy(self) -> bool {
        use Behaviour::*;
        !matches!(
            self,
            Kind::Host(HangUntilCancelled | HangForever) | Kind::Command(CommandKind::Sleep)
        )
    }

    fn max_wait(self, rng: &mut Rng) -> Duration {
        use Behaviour::*;
        match self {
            Kind::Host(HangUntilCancelled | HangForever) => rng.millis(100, 1500),
            Kind::Host(NeverMatch | HangLater) => rng.millis(300, 1500),
            Kind::Command(CommandKind::Sleep) => rng.millis(200, 800),
            Kind::Host(_) | Kind::Command(_) => rng.millis(2000, 4000),
            Kind::File | Kind::Tmux => rng.millis(8000, 10000),
        }
    }
}

/// One wait as drawn from the seed.
struct Plan {
    /// Unique from 1 (0 is the warm-up's): names a file wait's directory.
    number: usize,
    kind: Kind,
    max_wait: Duration,
    interval: Duration,
    cancel_at: Option<Duration>,
    wakes: Vec<Duration>,
    /// Seeds the file churn, the tmux kill time.
    seed: u64,
}

fn plan(rng: &mut Rng, waits: usize) -> Vec<Plan> {
    let files = (waits / 100).clamp(2, 16);
    let tmux = 2;
    (0..waits.max(files + tmux + 1))
        .map(|i| {
            let kind = if i < files {
                Kind::File
            } else if i < files + tmux {
                Kind::Tmux
            } else {
                draw(rng)
            };
            let max_wait = kind.max_wait(rng);
            let within = |rng: &mut Rng| rng.millis(0, max_wait.as_millis() as u64);
            let cancel_at = rng.chance(10).then(|| within(rng));
            let wakes = if rng.chance(20) {
                (0..1 + rng.below(3)).map(|_| within(rng)).collect()
            } else {
                Vec::new()
            };
            Plan {
                number: i + 1,
                kind,
                max_wait,
                interval: rng.millis(10, 50),
                cancel_at,
                wakes,
                seed: rng.next(),
            }
        })
        .rev() // the built-in waits start last, with the load in full swing
        .collect()
}

fn draw(rng: &mut Rng) -> Kind {
    let mut roll = rng.below(MIX.iter().map(|(w, _)| w).sum());
    for (weight, kind) in MIX {
        if roll < *weight {
            return *kind;
        }
        roll -= weight;
    }
    unreachable!("the roll is below the sum of the weights")
}

/// A started wait.
struct Running {
    plan: Plan,
    handle: WaitHandle,
    started: Instant,
    /// When `on_done` ran.
    arrived: Arc<Mutex<Option<Instant>>>,
    /// Calls of a host probe.
    calls: Option<Arc<AtomicU64>>,
}

impl Running {
    fn deadline(&self) -> Instant {
        self.started + self.plan.max_wait
    }
}

/// Threads the test itself started for its built-in targets.
#[derive(Default)]
struct Helpers(Vec<JoinHandle<()>>);

fn start(
    engine: &Engine,
    plan: Plan,
    gate: &Arc<Gate>,
    root: &Path,
    helpers: &mut Helpers,
) -> Running {
    let arrived = Arc::new(Mutex::new(None));
    let on_done = {
        let arrived = arrived.clone();
        move |_: &WaitResult| *arrived.lock().unwrap() = Some(Instant::now())
    };
    let options = WaitOptions::default().on_done(on_done);
    let mut calls = None;
    let started = Instant::now();
    let handle = match plan.kind {
        Kind::Host(behaviour) => {
            let counter = Arc::new(AtomicU64::new(0));
            calls = Some(counter.clone());
            let probe = HostProbe {
                behaviour,
                calls: counter,
                gate: gate.clone(),
            };
            let mut spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
                .interval(plan.interval)
                .max_wait(plan.max_wait)
                .output_cap(CAP);
            if behaviour == Behaviour::FailTolerated {
                spec = spec.on_probe_error(ErrorPolicy::Tolerate(10));
            }
            engine.start_with(spec, Some(Box::new(probe)), options)
        }
        Kind::Command(kind) => {
            let spec = builtin::command_spec(kind, plan.max_wait);
            engine.start_with(spec, None, options.policy(builtin::command_policy()))
        }
        Kind::File => {
            let target = FileTarget::new(root, plan.number);
            let spec = target.spec(plan.max_wait);
            let handle = engine.start_with(spec, None, options.policy(target.policy()));
            let ended = {
                let arrived = arrived.clone();
                move || arrived.lock().unwrap().is_some()
            };
            let give_up = started + plan.max_wait;
            helpers.0.push(target.churn(plan.seed, give_up, ended));
            handle
        }
        Kind::Tmux => {
            let server = support::Server::start(80, 24);
            let spec = builtin::tmux_spec(&server, plan.max_wait);
            let handle = engine.start_with(spec, None, options);
            let delay = Rng::new(plan.seed).millis(300, 1500);
            helpers.0.push(builtin::kill_later(server, delay));
            handle
        }
    }
    .unwrap_or_else(|e| panic!("{:?} did not start: {e}", plan.kind));
    Running {
        plan,
        handle,
        started,
        arrived,
        calls,
    }
}

/// Applies every wait's cancel and wakes at their times, from one thread.
fn drive_controls(running: &[Running]) -> JoinHandle<()> {
    let mut events: Vec<(Instant, WaitControl, bool)> = Vec::new();
    for r in running {
        let control = r.handle.control();
        if let Some(at) = r.plan.cancel_at {
            events.push((r.started + at, control.clone(), true));
        }
        for at in &r.plan.wakes {
            events.push((r.started + *at, control.clone(), false));
        }
    }
    events.sort_by_key(|(at, _, _)| *at);
    std::thread::spawn(move || {
        for (at, control, cancel) in events {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            if cancel {
                control.cancel();
            } else {
                control.wake();
            }
        }
    })
}

/// Failed checks, by check.
#[derive(Default)]
struct Failures(BTreeMap<&'static str, Vec<String>>);

impl Failures {
    fn add(&mut self, check: &'static str, message: String) {
        self.0.entry(check).or_default().push(message);
    }

    fn report(&self) -> String {
        let mut out = String::new();
        for (check, messages) in &self.0 {
            out += &format!("\n{check}: {} waits, e.g.", messages.len());
            for m in messages.iter().take(5) {
                out += &format!("\n  {m}");
            }
        }
        out
    }
}

/// Checks one result against what its wait's plan allows.
fn check_outcome(index: usize, r: &Running, result: &WaitResult, failures: &mut Failures) {
    let (allowed, error_words) = r.plan.kind.expected();
    let cancelled = r.plan.cancel_at.is_some() && result.outcome == Outcome::Cancelled;
    let error = result.error.as_deref().unwrap_or("");
    let error_ok = error_words.is_none_or(|words| words.iter().any(|w| error.contains(w)));
    if cancelled || allowed.contains(&result.outcome) && error_ok {
        return;
    }
    let message = format!(
        "#{index} {:?} ended `{}` after {} ms and {} samples (deadline {} ms; allowed {allowed:?}{}), error {:?}",
        r.plan.kind,
        result.outcome.as_str(),
        result.elapsed_ms,
        result.samples,
        r.plan.max_wait.as_millis(),
        if r.plan.cancel_at.is_some() { " or cancelled" } else { "" },
        result.error,
    );
    if r.plan.kind.healthy() {
        failures.add("healthy wait starved (its probe answers at once)", message);
    } else {
        failures.add("wrong outcome", message);
    }
}

/// Keeps the deliberate panics of [`Behaviour::Panic`] off stderr.
fn quiet_deliberate_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied());
        if message != Some(PANIC_MESSAGE) {
            default(info);
        }
    }));
}

/// Starts the process-wide helpers (the file watch, the engine's workers
/// and delivery threads, a tmux client) before the baseline is taken.
fn warm_up(engine: &Engine, root: &Path) {
    let target = FileTarget::new(root, 0);
    let short = Duration::from_millis(200);
    let waits = [
        engine.start_with(
            target.spec(short),
            None,
            WaitOptions::default().policy(target.policy()),
        ),
        engine.start_with(
            builtin::command_spec(CommandKind::Echo, short),
            None,
            WaitOptions::default().policy(builtin::command_policy()),
        ),
    ];
    let server = support::Server::start(80, 24);
    let pane = engine.start_with(
        builtin::tmux_spec(&server, short),
        None,
        WaitOptions::default(),
    );
    for handle in waits.into_iter().chain([pane]) {
        let handle = handle.unwrap();
        handle.wait_timeout(MARGIN).expect("a warm-up wait ended");
        handle.wait_released(MARGIN);
    }
}

/// Usage once the allocator gave back what it caches: tells memory the
/// allocator keeps from memory something still holds.
fn trimmed_usage() -> Usage {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
    Usage::now()
}

/// The 99th percentile and the most of sorted durations.
fn tail(sorted: &[Duration]) -> (Duration, Duration) {
    let p99 = sorted.get(sorted.len() * 99 / 100).copied();
    (
        p99.unwrap_or_default(),
        sorted.last().copied().unwrap_or_default(),
    )
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn soak() {
    quiet_deliberate_panics();
    let waits = env_number("SOAK_WAITS").unwrap_or(600) as usize;
    let seed = env_number("SOAK_SEED").unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.unwrap().as_nanos() as u64
    });
    println!("soak: {waits} waits, seed {seed} (SOAK_SEED={seed} replays it)");
    let root = std::env::temp_dir().join(format!("waitfor-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let engine = Engine::new();
    warm_up(&engine, &root);
    let before = Usage::now();
    let began = Instant::now();
    let load = LoadWatch::start();

    let gate = Arc::new(Gate::default());
    let mut helpers = Helpers::default();
    let running: Vec<Running> = plan(&mut Rng::new(seed), waits)
        .into_iter()
        .map(|plan| start(&engine, plan, &gate, &root, &mut helpers))
        .collect();
    let controls = drive_controls(&running);

    let mut failures = Failures::default();
    // Outcome counts by kind of wait.
    let mut outcomes: BTreeMap<String, BTreeMap<&'static str, usize>> = BTreeMap::new();
    let mut late = Vec::new();
    let mut calls_at_result = Vec::new();
    let mut peak = Usage::without_heap();
    for (index, r) in running.iter().enumerate() {
        let patience = (r.deadline() + MARGIN).saturating_duration_since(Instant::now());
        let result = r.handle.wait_timeout(patience);
        calls_at_result.push(r.calls.as_ref().map(|c| c.load(Ordering::SeqCst)));
        if index % 100 == 0 {
            let now = Usage::without_heap();
            peak.threads = peak.threads.max(now.threads);
            peak.fds = peak.fds.max(now.fds);
            peak.rss_bytes = peak.rss_bytes.max(now.rss_bytes);
            peak.children = peak.children.max(now.children);
        }
        let Some(result) = result else {
            failures.add(
                "hung: no result by deadline + 5 s",
                format!(
                    "#{index} {:?} (deadline {} ms)",
                    r.plan.kind,
                    r.plan.max_wait.as_millis()
                ),
            );
            let by_kind = outcomes.entry(format!("{:?}", r.plan.kind)).or_default();
            *by_kind.entry("none (hung)").or_default() += 1;
            continue;
        };
        let by_kind = outcomes.entry(format!("{:?}", r.plan.kind)).or_default();
        *by_kind.entry(result.outcome.as_str()).or_default() += 1;
        let arrived = r.arrived.lock().unwrap().unwrap_or_else(Instant::now);
        late.push(arrived.saturating_duration_since(r.deadline()));
        check_outcome(index, r, &result, &mut failures);
    }

    // Release every hung call; each probe must then be dropped, and none
    // may have been called after its wait's result.
    let load = load.finish();
    gate.open();
    for (index, r) in running.iter().enumerate() {
        if !r.handle.wait_released(MARGIN) {
            failures.add(
                "probe never released after the hung calls were",
                format!("#{index} {:?}", r.plan.kind),
            );
        }
        let (Some(at_result), Some(calls)) = (calls_at_result[index], &r.calls) else {
            continue;
        };
        let now = calls.load(Ordering::SeqCst);
        if now != at_result {
            failures.add(
                "probe called after its result",
                format!(
                    "#{index} {:?}: {at_result} calls at the result, {now} later",
                    r.plan.kind
                ),
            );
        }
    }
    controls.join().unwrap();
    for helper in helpers.0 {
        helper.join().unwrap();
    }
    let ran_for = began.elapsed();
    drop(running);
    let _ = std::fs::remove_dir_all(&root);

    let (after, excess) = Usage::settle(&before, SETTLE);
    if !excess.is_empty() {
        failures.add(
            "resources not back to baseline within 10% (+ slack)",
            format!("{} after {} s", excess.join(", "), SETTLE.as_secs()),
        );
    }
    late.sort();
    let (p99, max) = tail(&late);
    println!(
        "soak: {waits} waits ended in {:.1} s (seed {seed})",
        ran_for.as_secs_f64()
    );
    println!("  outcomes by kind of wait:");
    for (kind, counts) in &outcomes {
        let counts: Vec<String> = counts.iter().map(|(o, n)| format!("{o} {n}")).collect();
        println!("    {kind}: {}", counts.join(", "));
    }
    println!(
        "  past the deadline: p99 {:.1} ms, max {:.1} ms",
        p99.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (floor_p99, floor_max) = tail(&load.oversleeps);
    println!(
        "  machine: up to {} tasks runnable at once on {cores} cores; a thread sleeping \
         10 ms at a time woke p99 {:.1} ms, max {:.1} ms late",
        load.most_runnable,
        floor_p99.as_secs_f64() * 1e3,
        floor_max.as_secs_f64() * 1e3
    );
    println!("  before: {before}\n  peak:   {peak}\n  after:  {after}");
    println!("  after, allocator caches trimmed: {}", trimmed_usage());
    let failed: Vec<String> = failures
        .0
        .iter()
        .map(|(c, m)| format!("{c} ({})", m.len()))
        .collect();
    println!(
        "  failed checks: {}",
        if failed.is_empty() {
            "none".to_string()
        } else {
            failed.join("; ")
        }
    );
    assert!(failures.0.is_empty(), "seed {seed}:{}", failures.report());
}
