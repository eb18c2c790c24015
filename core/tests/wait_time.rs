//! Everything a wait does counts against its deadline and runs off the
//! host's thread: a spec whose patterns take seconds to compile still
//! returns at its time limit, and starting it returns at once.

use std::time::{Duration, Instant};
use waitfor::{probe_fn, Condition, Engine, Observation, Outcome, Pattern, Spec};

/// 60 patterns of about 60 KiB each (issue 19.7): `regex` ones are
/// alternations of 6,000 words, literal ones long runs of text.
fn huge_patterns(regex: bool) -> Vec<Pattern> {
    (0..60)
        .map(|i| {
            if regex {
                let words: Vec<String> = (0..6000).map(|j| format!("w{i}x{j}")).collect();
                Pattern::regex(words.join("|"))
            } else {
                Pattern::literal(format!("{i}:{}", "word salad ".repeat(5500)))
            }
        })
        .collect()
}

/// The same spec built in code and read from JSON (as the C ABI, the
/// command line and the bindings read theirs); what is timed is reading
/// the JSON and starting.
fn huge_specs(regex: bool) -> [Box<dyn FnOnce() -> Spec>; 2] {
    let native = Spec::new(Condition::Patterns(huge_patterns(regex)))
        .interval(Duration::from_millis(10))
        .max_wait(Duration::from_millis(50));
    let texts: Vec<String> = huge_patterns(regex).into_iter().map(|p| p.text).collect();
    let json = serde_json::json!({
        "regex": regex,
        "until": {"patterns": texts},
        "interval_ms": 10,
        "max_wait_ms": 50,
    })
    .to_string();
    [
        Box::new(move || native),
        Box::new(move || Spec::from_json(&json).unwrap()),
    ]
}

#[test]
fn patterns_that_take_seconds_to_compile_end_at_the_deadline() {
    for make_spec in [false, true].into_iter().flat_map(huge_specs) {
        let called = Instant::now();
        let spec = make_spec();
        let handle = Engine::global()
            .start(spec, probe_fn(|_| Ok(Observation::text("nothing"))))
            .unwrap();
        let start_took = called.elapsed();
        let result = handle.wait();
        let took = called.elapsed();
        // Generous bounds: compiling these takes seconds (tens in a debug
        // build) on the caller's thread.
        assert!(
            start_took < Duration::from_secs(1),
            "start took {start_took:?}"
        );
        assert!(took < Duration::from_secs(2), "the wait took {took:?}");
        // Most compiles are still running at the deadline (a timeout); one
        // that reaches the size limit as the deadline falls may be taken
        // first, in the same turn (its error). Either tells of the compile.
        assert!(
            matches!(result.outcome, Outcome::Timeout | Outcome::Error),
            "{result:?}"
        );
        let error = result.error.unwrap_or_default();
        assert!(error.contains("compiled"), "{error}");
        assert!(
            (50..2000).contains(&result.elapsed_ms),
            "elapsed_ms {} for a wait that took {took:?}",
            result.elapsed_ms
        );
    }
}

/// 120 waits at once, each with its own pattern that compiles to the size
/// limit (issue 19.6/19.7): compiles take turns, one per core, so the
/// scheduler keeps the CPU it needs to end every wait at its time limit,
/// and a wait whose limit passed before its compile began is not compiled.
#[test]
fn a_burst_of_costly_patterns_ends_every_wait_on_time() {
    let limit = Duration::from_millis(200);
    let started = Instant::now();
    let handles: Vec<_> = (0..120)
        .map(|i| {
            let spec = Spec::new(Condition::Matches(Pattern::regex(format!(
                r"\w{{150}}N{i}"
            ))))
            .interval(Duration::from_millis(10))
            .max_wait(limit);
            Engine::global()
                .start(spec, probe_fn(|_| Ok(Observation::text("nothing"))))
                .unwrap()
        })
        .collect();
    for handle in handles {
        let result = handle.wait();
        assert!(
            matches!(result.outcome, Outcome::Timeout | Outcome::Error),
            "{result:?}"
        );
    }
    // Generous: without turns, this burst ended seconds late.
    let took = started.elapsed();
    assert!(
        took < limit + Duration::from_secs(1),
        "the burst took {took:?}"
    );
    // The engine is free again: a healthy wait matches at once.
    let healthy = Spec::new(Condition::Matches(Pattern::literal("ready")));
    let result = Engine::global()
        .wait(healthy, probe_fn(|_| Ok(Observation::text("ready"))))
        .unwrap();
    assert_eq!(result.outcome, Outcome::Matched);
}
