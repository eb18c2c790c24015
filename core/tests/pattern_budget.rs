//! Plain-text patterns count against a wait's compile budget as regexes
//! do: a spec of as many literal stop strings as it may list (4,096; a
//! spec of 200,000, 2.2 MB of JSON, held hundreds of megabytes) is refused
//! with the budget's error (a binary of its own: it measures what the
//! allocator holds for the whole process).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use waitfor::limits::{MAX_COMPILED_WAIT_BYTES, MAX_PATTERNS};
use waitfor::{probe_fn, Engine, Observation, Outcome, Rule, Spec};

/// Bytes the allocator hands out, in all its arenas and mapped on their own.
fn in_use() -> usize {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let info = unsafe { libc::mallinfo2() };
    info.uordblks + info.hblkhd
}

fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Each test measures the whole process: one at a time.
static ALONE: Mutex<()> = Mutex::new(());

/// A spec whose stop list holds `count` distinct plain-text strings of
/// 200 bytes.
fn spec_json(count: usize, regex: bool) -> String {
    let pad = "x".repeat(192);
    let stop: Vec<String> = (0..count).map(|i| format!("\"s{i:07}{pad}\"")).collect();
    format!(
        r#"{{{}"until": {{"matches": "zz"}}, "stop": [{}], "max_wait_ms": 60000, "interval_ms": 10}}"#,
        if regex { r#""regex": true, "# } else { "" },
        stop.join(",")
    )
}

/// Runs `spec` to its end, and gives its result with the most bytes in use
/// above the starting point while it ran.
fn run_measured(spec: Spec) -> (waitfor::WaitResult, usize) {
    let baseline = in_use();
    let peak = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                peak.fetch_max(in_use().saturating_sub(baseline), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let probe = probe_fn(|_| Ok(Observation::text("x")));
    let result = Engine::global().wait(spec, probe).unwrap();
    done.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    (result, peak.load(Ordering::SeqCst))
}

fn start_engine() {
    let probe = probe_fn(|_| Ok(Observation::text("ready")));
    let spec = Spec::from_json(r#"{"until": {"matches": "ready"}}"#).unwrap();
    Engine::global().wait(spec, probe).unwrap();
}

#[test]
fn a_spec_of_as_many_literal_patterns_as_it_may_list_is_refused_with_the_wait_budget_error() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    start_engine();
    let many: Vec<String> = (0..200_000).map(|i| format!("s{i:07}")).collect();
    let json = serde_json::json!({"until": {"matches": "zz"}, "stop": many}).to_string();
    let err = Spec::from_json(&json).unwrap_err();
    assert_eq!((err.field.as_str(), err.rule), ("stop", Rule::OutOfRange));
    for regex in [false, true] {
        // With the `until` pattern, as many as a spec may list.
        let json = spec_json(MAX_PATTERNS - 1, regex);
        assert!(json.len() < 4 << 20, "within the input limit");
        let spec = Spec::from_json(&json).unwrap();
        drop(json);
        let started = Instant::now();
        let (result, peak) = run_measured(spec);
        eprintln!(
            "regex: {regex}: {:?} after {:?}, at most {} KiB more in use",
            result.outcome,
            started.elapsed(),
            peak >> 10
        );
        assert_eq!(result.outcome, Outcome::Error, "regex: {regex}");
        let error = result.error.unwrap();
        assert!(
            error.contains(&format!(
                "more than {} MiB compiled, the limit for one wait",
                MAX_COMPILED_WAIT_BYTES >> 20
            )),
            "{error}"
        );
        assert!(error.contains("stop["), "names the pattern: {error}");
        // Hundreds of megabytes for 200,000 before: now the spec itself
        // and what the budget allows.
        assert!(
            peak < 64 << 20,
            "regex: {regex}: {} MiB in use while compiling",
            peak >> 20
        );
    }
}

#[test]
fn many_small_patterns_give_their_memory_back_when_their_wait_ends() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    start_engine();
    // Let what earlier waits asked for be given back before the baseline.
    std::thread::sleep(Duration::from_secs(2));
    let baseline = resident_bytes();
    // Three waits of 3,000 literal stop strings each, within the budget:
    // megabytes of small programs, none large on its own, built on a
    // worker and freed when the wait's result is delivered.
    for round in 0..3 {
        let stop: Vec<String> = (0..3000).map(|i| format!("\"r{round}-{i:07}\"")).collect();
        let json = format!(
            r#"{{"until": {{"matches": "x"}}, "stop": [{}], "max_wait_ms": 60000}}"#,
            stop.join(",")
        );
        let (result, peak) = run_measured(Spec::from_json(&json).unwrap());
        assert_eq!(result.outcome, Outcome::Matched, "{:?}", result.error);
        eprintln!("round {round}: at most {} KiB more in use", peak >> 10);
    }
    let bound = baseline + (4 << 20);
    let until = Instant::now() + Duration::from_secs(30);
    while resident_bytes() > bound && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        resident_bytes() <= bound,
        "{} KiB resident after the waits, {} KiB before",
        resident_bytes() >> 10,
        baseline >> 10
    );
}
