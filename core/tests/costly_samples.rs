//! A sample whose output is costly for its wait's patterns to search is
//! read on a worker: the search never holds the scheduler thread, so other
//! waits keep their deadlines, and the costly wait's own deadline holds too.

use std::time::{Duration, Instant};
use waitfor::{probe_fn, Condition, Engine, Observation, Outcome, Pattern, Spec};

/// About 150 KB of word characters from several scripts (Latin, Greek,
/// Cyrillic, CJK, mathematical letters), one line: under the patterns
/// below, the automata's cache cannot hold the states this text needs, and
/// one sample's search takes about a second.
fn unicode_words() -> String {
    let ranges = [
        0x41..0x5b,
        0x3b1..0x3c9,
        0x430..0x44f,
        0x4e00..0x4e40,
        0x1d400..0x1d420,
    ];
    let chars: Vec<char> = ranges
        .into_iter()
        .flatten()
        .filter_map(char::from_u32)
        .collect();
    // A fixed sequence, any spread over the alphabet does.
    let mut state: u32 = 1;
    (0..60_000)
        .map(|_| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            chars[(state >> 8) as usize % chars.len()]
        })
        .collect()
}

/// Eight case-insensitive patterns that never match the text.
fn costly_patterns() -> Condition {
    let patterns = ['#', '%', '&', '~', '=', '<', '>', '@']
        .into_iter()
        .map(|c| Pattern::regex(format!(r"\w{{38}}{c}\w{{2}}")).case_insensitive())
        .collect();
    Condition::Patterns(patterns)
}

/// A wait on the costly patterns whose probe answers `text` at once.
fn start_costly(engine: &Engine, text: &str, limit: Duration) -> waitfor::WaitHandle {
    let spec = Spec::new(costly_patterns())
        .interval(Duration::from_millis(10))
        .max_wait(limit);
    let text = text.to_string();
    engine
        .start(spec, probe_fn(move |_| Ok(Observation::text(text.clone()))))
        .unwrap()
}

#[test]
fn a_costly_search_holds_neither_other_waits_nor_its_own_deadline() {
    let engine = Engine::new();
    let text = unicode_words();
    let started = Instant::now();
    // Searching keeps going for the whole time of the quick waits below.
    let long_limit = Duration::from_secs(3);
    let long = start_costly(&engine, &text, long_limit);
    // Quick waits, one after another, while the costly ones search.
    let quick_limit = Duration::from_millis(200);
    let mut latest = Duration::ZERO;
    while started.elapsed() < Duration::from_secs(2) {
        let spec = Spec::new(Condition::Matches(Pattern::literal("never")))
            .interval(Duration::from_millis(20))
            .max_wait(quick_limit);
        let began = Instant::now();
        let result = engine
            .wait(spec, probe_fn(|_| Ok(Observation::text("x"))))
            .unwrap();
        assert_eq!(result.outcome, Outcome::Timeout, "{result:?}");
        latest = latest.max(began.elapsed().saturating_sub(quick_limit));
    }
    // Searched on the scheduler thread, they ended 0.6-2.2 s late.
    assert!(
        latest < Duration::from_millis(300),
        "a quick wait ended {latest:?} past its deadline"
    );

    let long = long.wait();
    let past = started.elapsed().saturating_sub(long_limit);
    assert_eq!(long.outcome, Outcome::Timeout, "{long:?}");
    assert!(
        past < Duration::from_millis(300),
        "the costly wait ended {past:?} past its deadline"
    );
}
