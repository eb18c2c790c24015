//! 1,000 waits at once cost timer entries, not threads. Alone in its test
//! binary so the thread count is this test's own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use waitfor::{probe_fn, Condition, Engine, Observation, Outcome, Pattern, Spec};

mod threads;
use threads::thread_count;

#[test]
fn a_thousand_concurrent_waits_finish_on_few_threads() {
    let before = thread_count();
    let max_seen = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..1000)
        .map(|i| {
            let mut calls = 0;
            let seen = max_seen.clone();
            let probe = probe_fn(move |_| {
                calls += 1;
                seen.fetch_max(thread_count() as u64, Ordering::Relaxed);
                Ok(Observation::text(if calls < 3 {
                    format!("wait {i}")
                } else {
                    format!("ready {i}")
                }))
            });
            let spec = Spec::new(Condition::Matches(Pattern::literal(format!("ready {i}"))))
                .interval(Duration::from_millis(20))
                .max_wait(Duration::from_secs(120));
            Engine::global().start(spec, probe).unwrap()
        })
        .collect();
    for handle in handles {
        let result = handle.wait();
        assert_eq!(result.outcome, Outcome::Matched);
        assert_eq!(result.samples, 3);
    }
    // The scheduler, a couple of workers, and at worst a few more added
    // while the loaded machine starved the pool: far from 1,000.
    let extra = max_seen.load(Ordering::Relaxed) as usize - before;
    assert!(extra <= 32, "{extra} extra threads for 1,000 waits");
}
