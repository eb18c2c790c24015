//! Probe calls that hang hold their own worker threads, never another
//! wait's: healthy waits keep their schedule while hundreds of calls are
//! blocked. (A test binary of its own: it counts the process's threads.)

use std::time::{Duration, Instant};
use waitfor::{probe_fn, CancelToken, Condition, Engine, Observation, Outcome, Pattern, Spec};

const BLOCKED: usize = 1000;
const HEALTHY: usize = 200;

fn ready_spec(max_wait: Duration) -> Spec {
    Spec::new(Condition::Matches(Pattern::literal("ready")))
        .interval(Duration::from_millis(50))
        .max_wait(max_wait)
}

fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Threads:")).unwrap();
    line["Threads:".len()..].trim().parse().unwrap()
}

#[test]
fn healthy_waits_match_while_hundreds_of_calls_hang() {
    let engine = Engine::new();
    let release = CancelToken::new();
    let blocked: Vec<_> = (0..BLOCKED)
        .map(|_| {
            let release = release.clone();
            let probe = probe_fn(move |_| {
                release.wait_timeout(Duration::from_secs(120));
                Ok(Observation::text("ready"))
            });
            engine
                .start(ready_spec(Duration::from_secs(120)), probe)
                .unwrap()
        })
        .collect();
    let started = Instant::now();
    let healthy: Vec<_> = (0..HEALTHY)
        .map(|_| {
            let probe = probe_fn(|_| Ok(Observation::text("ready")));
            engine
                .start(ready_spec(Duration::from_secs(20)), probe)
                .unwrap()
        })
        .collect();
    for handle in healthy {
        let result = handle.wait_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(result.outcome, Outcome::Matched, "{result:?}");
    }
    let took = started.elapsed();
    // Without a worker of their own they wait for hung calls: seconds.
    assert!(
        took < Duration::from_secs(2),
        "healthy waits took {took:?} with {BLOCKED} calls blocked"
    );
    // A thread per blocked call and per healthy call at most, and a few
    // of the engine's and the test harness's own.
    let now = threads();
    assert!(now <= BLOCKED + HEALTHY + 32, "{now} threads");
    release.cancel();
    for handle in blocked {
        let result = handle.wait_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(result.outcome, Outcome::Matched, "{result:?}");
    }
}
