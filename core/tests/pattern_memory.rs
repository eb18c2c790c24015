//! Memory held by large patterns goes back to the system once their waits
//! end (a binary of its own: it measures the process's resident size).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::time::{Duration, Instant};
use waitfor::{probe_fn, Condition, Engine, Observation, Pattern, Spec};

fn resident_mib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    (pages * 4096) >> 20
}

#[test]
fn large_patterns_give_their_memory_back_when_their_waits_end() {
    // Start the engine's threads before the baseline.
    let ready = probe_fn(|_| Ok(Observation::text("ready")));
    let spec = Spec::new(Condition::Matches(Pattern::literal("ready")));
    Engine::global().wait(spec, ready).unwrap();
    let baseline = resident_mib();
    // Three waits with 20 stop patterns of 60 KiB: about 16 MiB of
    // automata each (within a wait's limit), freed by threads whose arenas
    // glibc would otherwise keep. Each matches at its first sample, once
    // its patterns compiled.
    for i in 0..3 {
        let stop = (0..20).map(|j| Pattern::regex(format!("{i}-{j}:") + &"[a-y]z".repeat(10_000)));
        let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
            .stop(stop)
            .max_wait(Duration::from_secs(600));
        let probe = probe_fn(|_| Ok(Observation::text("ready")));
        let result = Engine::global().wait(spec, probe).unwrap();
        assert_eq!(result.outcome, waitfor::Outcome::Matched);
    }
    // Given back on a thread of its own, soon: a generous bound, far below
    // the 50 MiB kept without it.
    let until = Instant::now() + Duration::from_secs(60);
    while resident_mib() > baseline + 24 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        resident_mib() <= baseline + 24,
        "{} MiB resident after the waits, {baseline} MiB before",
        resident_mib()
    );
}
