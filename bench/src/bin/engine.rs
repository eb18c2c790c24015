//! The engine's performance goals (issue 2), each beside a peer measured
//! in the same run. Run: `cargo run --release -p waitfor-bench --bin engine`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use waitfor::{probe_fn, Condition, Engine, Observation, Pattern, ProbeMode, Spec, WaitOptions};
use waitfor_bench::{
    header, ms, percentile, process_cpu, resident_bytes, threads, us, Better, Row,
};

/// Prints a row whose two figures are durations shown by `show`, lower
/// being better.
fn time_row(
    measure: &str,
    ours: Duration,
    peer_name: &str,
    peer: Duration,
    show: fn(Duration) -> String,
    (goal, met): (&str, Option<bool>),
) {
    Row {
        measure,
        ours: ours.as_secs_f64(),
        ours_text: show(ours),
        peer_name,
        peer: peer.as_secs_f64(),
        peer_text: show(peer),
        better: Better::Lower,
        goal,
        met,
    }
    .print();
}

/// CPU time per second of wall time, as a share of one core.
fn share_of_a_core(d: Duration) -> String {
    format!("{:.1}% of a core", d.as_secs_f64() * 100.0)
}

/// A row with no goal.
const NO_GOAL: (&str, Option<bool>) = ("", None);

fn spec(interval: Duration, max_wait: Duration) -> Spec {
    Spec::new(Condition::Matches(Pattern::literal("ready")))
        .interval(interval)
        .max_wait(max_wait)
}

/// CPU per sample: 200 waits at 10 ms, 100 samples each, against 200
/// threads running the same poll loop.
fn overhead_per_sample() {
    const WAITS: u64 = 200;
    const SAMPLES: u64 = 100;
    let cpu = process_cpu();
    let handles: Vec<_> = (0..WAITS)
        .map(|_| {
            let mut n = 0;
            let probe = probe_fn(move |_| {
                n += 1;
                Ok(Observation::text(if n < SAMPLES { "no" } else { "ready" }))
            });
            Engine::global()
                .start(
                    spec(Duration::from_millis(10), Duration::from_secs(60)),
                    probe,
                )
                .unwrap()
        })
        .collect();
    for h in handles {
        h.wait();
    }
    let ours = (process_cpu() - cpu) / (WAITS * SAMPLES) as u32;
    let cpu = process_cpu();
    let threads: Vec<_> = (0..WAITS)
        .map(|_| {
            std::thread::spawn(|| {
                for n in 1..=SAMPLES {
                    let text = if n < SAMPLES { "no" } else { "ready" };
                    if std::hint::black_box(text).contains("ready") {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let peer = (process_cpu() - cpu) / (WAITS * SAMPLES) as u32;
    time_row(
        "engine: CPU per sample, trivial probe (200 waits x 100 samples)",
        ours,
        "thread + sleep loop",
        peer,
        us,
        ("<= 2 µs", Some(ours <= Duration::from_micros(2))),
    );
}

/// CPU per waiting second at a 50 ms interval.
fn cpu_while_waiting() {
    let window = Duration::from_secs(4);
    let cpu = process_cpu();
    let probe = probe_fn(|_| Ok(Observation::text("no")));
    Engine::global()
        .wait(spec(Duration::from_millis(50), window), probe)
        .unwrap();
    let ours = (process_cpu() - cpu).div_f64(window.as_secs_f64());
    let cpu = process_cpu();
    let started = Instant::now();
    std::thread::spawn(move || {
        while started.elapsed() < window {
            std::hint::black_box("no").contains("ready");
            std::thread::sleep(Duration::from_millis(50));
        }
    })
    .join()
    .unwrap();
    let peer = (process_cpu() - cpu).div_f64(window.as_secs_f64());
    time_row(
        "engine: CPU per waiting second, 50 ms interval",
        ours,
        "thread + sleep loop",
        peer,
        ms,
        ("<= 1.2x the sleep loop", Some(ours <= peer.mul_f64(1.2))),
    );
}

/// How late a wait whose probe hangs returns after its deadline.
fn deadline_overshoot() {
    const WAITS: usize = 200;
    let limit = Duration::from_millis(100);
    let done = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..WAITS)
        .map(|_| {
            let probe = probe_fn(|ctx| {
                while !ctx.cancel.wait_timeout(Duration::from_secs(3600)) {}
                Ok(Observation::text(""))
            });
            let started = Instant::now();
            let done = done.clone();
            let options = WaitOptions::default().on_done(move |_| {
                done.lock()
                    .unwrap()
                    .push(started.elapsed().saturating_sub(limit));
            });
            Engine::global()
                .start_with(
                    spec(Duration::from_millis(10), limit),
                    Some(Box::new(probe)),
                    options,
                )
                .unwrap()
        })
        .collect();
    for h in handles {
        h.wait();
    }
    let mut ours = done.lock().unwrap().clone();
    let (tx, rx) = mpsc::channel();
    let peers: Vec<_> = (0..WAITS)
        .map(|_| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let (_keep, never) = mpsc::channel::<()>();
                let started = Instant::now();
                let _ = never.recv_timeout(limit);
                tx.send(started.elapsed().saturating_sub(limit)).unwrap();
            })
        })
        .collect();
    for p in peers {
        p.join().unwrap();
    }
    drop(tx);
    let mut peer: Vec<Duration> = rx.iter().collect();
    let (o, p) = (percentile(&mut ours, 99.0), percentile(&mut peer, 99.0));
    time_row(
        "engine: deadline overshoot with a hung probe, p99 (200 waits)",
        o,
        "recv_timeout in 200 threads",
        p,
        ms,
        (
            "<= the peer + 0.3 ms",
            Some(o <= p + Duration::from_micros(300)),
        ),
    );
}

/// From `wake()` to the result in the host's hands.
fn wake_to_result() {
    const ROUNDS: usize = 200;
    let mut ours = Vec::new();
    for _ in 0..ROUNDS {
        let (first, seen) = mpsc::channel();
        let mut n = 0;
        let probe = probe_fn(move |_| {
            n += 1;
            if n == 1 {
                let _ = first.send(());
            }
            Ok(Observation::text(if n == 1 { "no" } else { "ready" }))
        });
        let handle = Engine::global()
            .start(
                spec(Duration::from_secs(60), Duration::from_secs(120)),
                probe,
            )
            .unwrap();
        seen.recv().unwrap();
        // Let the scheduler take the first answer before waking.
        while handle.wait_timeout(Duration::from_millis(1)).is_some() {}
        let woke = Instant::now();
        handle.control().wake();
        handle.wait();
        ours.push(woke.elapsed());
    }
    // The floor: one hand-off to a thread asleep in `recv` as long as the
    // engine's were before `wake()`. (Sent to a thread just started, the
    // message finds it awake: that measures no wake-up.)
    let (go, wait_go) = mpsc::channel::<Instant>();
    let (back, got) = mpsc::channel();
    let sleeper = std::thread::spawn(move || {
        for sent in wait_go {
            back.send(sent.elapsed()).unwrap();
        }
    });
    let mut peer = Vec::new();
    for _ in 0..ROUNDS {
        std::thread::sleep(Duration::from_millis(1));
        go.send(Instant::now()).unwrap();
        peer.push(got.recv().unwrap());
    }
    drop(go);
    sleeper.join().unwrap();
    let (o, p) = (percentile(&mut ours, 50.0), percentile(&mut peer, 50.0));
    time_row(
        "engine: wake() to result, p50",
        o,
        "one hand-off to a sleeping thread",
        p,
        us,
        ("<= 3x the hand-off", Some(o <= p * 3)),
    );
}

/// Options whose end adds the time since `since` (set when the condition
/// turns true) to `reactions`.
fn records_reaction(
    reactions: &Arc<Mutex<Vec<Duration>>>,
    since: &Arc<Mutex<Instant>>,
) -> WaitOptions {
    let (reactions, since) = (reactions.clone(), since.clone());
    WaitOptions::default().on_done(move |_| {
        let at = *since.lock().unwrap();
        reactions.lock().unwrap().push(at.elapsed());
    })
}

/// 10,000 waits at 100 ms: memory, threads, CPU, reaction p99.
fn ten_thousand_waits() {
    const WAITS: usize = 10_000;
    let interval = Duration::from_millis(100);
    let steady = Duration::from_secs(3);
    // libwaitfor
    let go = Arc::new(AtomicBool::new(false));
    let reactions = Arc::new(Mutex::new(Vec::with_capacity(WAITS)));
    let flipped_at = Arc::new(Mutex::new(Instant::now()));
    let rss = resident_bytes();
    let handles: Vec<_> = (0..WAITS)
        .map(|_| {
            let go = go.clone();
            let probe = probe_fn(move |_| {
                Ok(Observation::text(if go.load(Ordering::Relaxed) {
                    "ready"
                } else {
                    "no"
                }))
            });
            let options = records_reaction(&reactions, &flipped_at);
            Engine::global()
                .start_with(
                    spec(interval, Duration::from_secs(60)),
                    Some(Box::new(probe)),
                    options,
                )
                .unwrap()
        })
        .collect();
    std::thread::sleep(interval * 2);
    let cpu = process_cpu();
    std::thread::sleep(steady);
    let ours_cpu = (process_cpu() - cpu).div_f64(steady.as_secs_f64());
    let ours_rss = resident_bytes().saturating_sub(rss);
    // Every thread but main is the engine's at this point.
    let engine_threads = threads() - 1;
    *flipped_at.lock().unwrap() = Instant::now();
    go.store(true, Ordering::Relaxed);
    for h in handles {
        h.wait();
    }
    let mut ours_reaction = reactions.lock().unwrap().clone();
    // Peer: a thread per wait, polling with sleep.
    let go = Arc::new(AtomicBool::new(false));
    let flipped_ns = Arc::new(AtomicU64::new(0));
    let base = Instant::now();
    let (rss, thr) = (resident_bytes(), threads());
    let (tx, rx) = mpsc::channel();
    let peers: Vec<_> = (0..WAITS)
        .map(|_| {
            let (go, flipped_ns, tx) = (go.clone(), flipped_ns.clone(), tx.clone());
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || loop {
                    if go.load(Ordering::Relaxed) {
                        let at = base + Duration::from_nanos(flipped_ns.load(Ordering::Relaxed));
                        tx.send(at.elapsed()).unwrap();
                        return;
                    }
                    std::thread::sleep(interval);
                })
                .unwrap()
        })
        .collect();
    std::thread::sleep(interval * 2);
    let cpu = process_cpu();
    std::thread::sleep(steady);
    let peer_cpu = (process_cpu() - cpu).div_f64(steady.as_secs_f64());
    let (peer_rss, peer_thr) = (resident_bytes().saturating_sub(rss), threads() - thr);
    flipped_ns.store(base.elapsed().as_nanos() as u64, Ordering::Relaxed);
    go.store(true, Ordering::Relaxed);
    for p in peers {
        p.join().unwrap();
    }
    drop(tx);
    let mut peer_reaction: Vec<Duration> = rx.iter().collect();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    Row {
        measure: "engine, 10k waits at 100 ms: extra memory",
        ours: mib(ours_rss),
        ours_text: format!("{:.1} MiB", mib(ours_rss)),
        peer_name: "thread per wait",
        peer: mib(peer_rss),
        peer_text: format!("{:.1} MiB", mib(peer_rss)),
        better: Better::Lower,
        goal: "<= 64 MiB",
        met: Some(ours_rss <= 64 << 20),
    }
    .print();
    Row {
        measure: "engine, 10k waits at 100 ms: engine threads (scheduler, delivery, workers)",
        ours: engine_threads as f64,
        ours_text: engine_threads.to_string(),
        peer_name: "thread per wait",
        peer: peer_thr as f64,
        peer_text: peer_thr.to_string(),
        better: Better::Lower,
        goal: "<= 8",
        met: Some(engine_threads <= 8),
    }
    .print();
    time_row(
        "engine, 10k waits at 100 ms: CPU",
        ours_cpu,
        "thread per wait",
        peer_cpu,
        share_of_a_core,
        (
            "<= 25% of a core",
            Some(ours_cpu <= Duration::from_millis(250)),
        ),
    );
    let (o, p) = (
        percentile(&mut ours_reaction, 99.0),
        percentile(&mut peer_reaction, 99.0),
    );
    time_row(
        "engine, 10k waits at 100 ms: reaction p99",
        o,
        "thread per wait",
        p,
        ms,
        ("<= 105 ms", Some(o <= Duration::from_millis(105))),
    );
}

/// Cost per sample of a 256 KiB snapshot growing by 1 KiB, against
/// rescanning the whole observation with the same patterns (as a naive
/// poll loop does), split into its two parts: the continuity check (is
/// the new snapshot the old one plus more? one comparison of the old
/// bytes, whose floor is a bare `memcmp`) and the matching proper (a scan
/// of the new bytes, measured alone on a stream of the same output).
fn incremental_matching() {
    const SAMPLES: usize = 200;
    // What an agent passes: success patterns and failure markers, any case.
    let patterns = ["build succeeded", "all tests passed"];
    let stops = ["error:", "FAILED", "Traceback", "panicked at"];
    let spec = Spec::new(Condition::Patterns(
        patterns
            .iter()
            .map(|p| Pattern::literal(*p).case_insensitive())
            .collect(),
    ))
    .stop(
        stops
            .iter()
            .map(|p| Pattern::literal(*p).case_insensitive()),
    )
    .max_wait(Duration::from_secs(3600))
    .output_cap(1 << 20);
    let mut snapshots = waitfor::simulate::Sampler::new(&spec, ProbeMode::Snapshot).unwrap();
    let stream_spec = spec.clone().view(waitfor::ViewKind::Fresh);
    let mut stream = waitfor::simulate::Sampler::new(&stream_spec, ProbeMode::Stream).unwrap();
    let rescan: Vec<regex::Regex> = patterns
        .iter()
        .chain(&stops)
        .map(|p| {
            regex::RegexBuilder::new(&regex::escape(p))
                .case_insensitive(true)
                .build()
                .unwrap()
        })
        .collect();
    let line = "compiling module with some ordinary build output here\n";
    let mut text = line.repeat(256 * 1024 / line.len());
    let chunk = line.repeat(1024 / line.len());
    assert!(stream.feed(Observation::text(text.clone())).is_none());
    let (mut ours, mut matching, mut floor, mut peer) = (vec![], vec![], vec![], vec![]);
    let mut last = text.clone();
    for _ in 0..SAMPLES {
        text.push_str(&chunk);
        let observation = Observation::text(text.clone());
        let started = Instant::now();
        assert!(snapshots.feed(observation).is_none());
        ours.push(started.elapsed());
        let observation = Observation::text(chunk.clone());
        let started = Instant::now();
        assert!(stream.feed(observation).is_none());
        matching.push(started.elapsed());
        let started = Instant::now();
        std::hint::black_box(text.as_bytes()[..last.len()] == *last.as_bytes());
        floor.push(started.elapsed());
        last.clone_from(&text);
        let started = Instant::now();
        assert!(rescan
            .iter()
            .all(|r| std::hint::black_box(r.find(&text)).is_none()));
        peer.push(started.elapsed());
    }
    let [o, m, f, p] =
        [&mut ours, &mut matching, &mut floor, &mut peer].map(|v| percentile(v, 50.0));
    time_row(
        "engine, 256 KiB snapshot, 1 KiB new per sample, 6 patterns any case: cost per sample p50",
        o,
        "rescan whole",
        p,
        us,
        ("<= 1/20 of the peer", Some(o * 20 <= p)),
    );
    time_row(
        "engine, 256 KiB snapshot, 1 KiB new per sample: of which matching, the scan of the new bytes (the same output as a stream)",
        m,
        "rescan whole",
        p,
        us,
        ("<= 10 µs", Some(m <= Duration::from_micros(10))),
    );
    time_row(
        "engine, 256 KiB snapshot, 1 KiB new per sample: the continuity check's floor, one memcmp of the old 256 KiB",
        f,
        "rescan whole",
        p,
        us,
        NO_GOAL,
    );
}

/// What 10,000 file waits at 50 ms on one file cost and how fast they
/// react to one append, one run of them.
struct FileRun {
    cpu: Duration,
    reads_per_sec: f64,
    reactions: Vec<Duration>,
}

fn file_waits_run(watch: bool) -> FileRun {
    const WAITS: u64 = 10_000;
    let interval = Duration::from_millis(50);
    let steady = Duration::from_secs(3);
    waitfor::probes::file_watch::set_enabled(watch);
    let dir =
        std::env::temp_dir().join(format!("waitfor-bench-file-{}-{watch}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("shared.log");
    std::fs::write(&path, "ready from before\n").unwrap();
    let reads = Arc::new(AtomicU64::new(0));
    let reactions = Arc::new(Mutex::new(Vec::with_capacity(WAITS as usize)));
    let appended_at = Arc::new(Mutex::new(Instant::now()));
    let handles: Vec<_> = (0..WAITS)
        .map(|_| {
            let probe = waitfor::probes::FileProbe::new(&path).count_reads(reads.clone());
            let options = records_reaction(&reactions, &appended_at);
            Engine::global()
                .start_with(
                    spec(interval, Duration::from_secs(120)).view(waitfor::ViewKind::Fresh),
                    Some(Box::new(probe)),
                    options,
                )
                .unwrap()
        })
        .collect();
    while reads.load(Ordering::Relaxed) < WAITS {
        std::thread::sleep(interval);
    }
    std::thread::sleep(interval * 2);
    let (cpu, read) = (process_cpu(), reads.load(Ordering::Relaxed));
    std::thread::sleep(steady);
    let cpu = (process_cpu() - cpu).div_f64(steady.as_secs_f64());
    let reads_per_sec = (reads.load(Ordering::Relaxed) - read) as f64 / steady.as_secs_f64();
    *appended_at.lock().unwrap() = Instant::now();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"ready\n"))
        .unwrap();
    for h in handles {
        h.wait();
    }
    let reactions = reactions.lock().unwrap().clone();
    let _ = std::fs::remove_dir_all(&dir);
    waitfor::probes::file_watch::set_enabled(true);
    FileRun {
        cpu,
        reads_per_sec,
        reactions,
    }
}

/// One file wait at 50 ms, 50 rounds: from an append to the result.
fn one_file_wait_reactions(watch: bool) -> Vec<Duration> {
    waitfor::probes::file_watch::set_enabled(watch);
    let dir = std::env::temp_dir().join(format!("waitfor-bench-one-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("one.log");
    let reactions = (0..50)
        .map(|_| {
            let reads = Arc::new(AtomicU64::new(0));
            let probe = waitfor::probes::FileProbe::new(&path).count_reads(reads.clone());
            let spec = spec(Duration::from_millis(50), Duration::from_secs(60))
                .view(waitfor::ViewKind::Fresh);
            let handle = Engine::global().start(spec, probe).unwrap();
            while reads.load(Ordering::Relaxed) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            let appended = Instant::now();
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, b"ready\n"))
                .unwrap();
            handle.wait();
            appended.elapsed()
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    waitfor::probes::file_watch::set_enabled(true);
    reactions
}

/// 10,000 file waits at 50 ms on one file: with the file watch against
/// the same waits polling (the watch turned off).
fn file_waits() {
    let (mut o, mut q) = (
        one_file_wait_reactions(true),
        one_file_wait_reactions(false),
    );
    let (o, q) = (percentile(&mut o, 50.0), percentile(&mut q, 50.0));
    time_row(
        "engine, one file wait at 50 ms: reaction to an append, p50 (50 rounds)",
        o,
        "the same wait polling",
        q,
        ms,
        NO_GOAL,
    );
    let mut watched = file_waits_run(true);
    let mut polled = file_waits_run(false);
    time_row(
        "engine, 10k file waits at 50 ms, one file: CPU",
        watched.cpu,
        "the same waits polling",
        polled.cpu,
        share_of_a_core,
        NO_GOAL,
    );
    Row {
        measure: "engine, 10k file waits at 50 ms, one file: reads of the file per second",
        ours: watched.reads_per_sec,
        ours_text: format!("{:.0}", watched.reads_per_sec),
        peer_name: "the same waits polling",
        peer: polled.reads_per_sec,
        peer_text: format!("{:.0}", polled.reads_per_sec),
        better: Better::Lower,
        goal: "",
        met: None,
    }
    .print();
    for p in [0.0, 50.0, 99.0] {
        let (o, q) = (
            percentile(&mut watched.reactions, p),
            percentile(&mut polled.reactions, p),
        );
        time_row(
            &format!("engine, 10k file waits at 50 ms, one file: reaction to one append, p{p}"),
            o,
            "the same waits polling",
            q,
            ms,
            NO_GOAL,
        );
    }
}

fn main() {
    let only = std::env::args().nth(1);
    let run = |name: &str| only.as_deref().is_none_or(|o| o == name);
    header();
    // The single-wait rows go first, before 10,000 peer threads have come
    // and gone; the hung-probe run goes last: it leaves extra workers
    // idle for a while, which would count against the 10k run.
    if run("overhead") {
        overhead_per_sample();
    }
    if run("idle") {
        cpu_while_waiting();
    }
    if run("wake") {
        wake_to_result();
    }
    if run("many") {
        ten_thousand_waits();
    }
    if run("matching") {
        incremental_matching();
    }
    if run("file") {
        file_waits();
    }
    if run("deadline") {
        deadline_overshoot();
    }
}
