//! What searching with one wait's patterns takes is bounded, as their
//! programs are: past [`MAX_WAIT_SCRATCH_BYTES`] they search without lazy
//! DFAs (a binary of its own: it measures what the allocator holds for
//! the whole process).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::sync::mpsc;
use std::time::Duration;
use waitfor::limits::{MAX_COMPILED_WAIT_BYTES, MAX_WAIT_SCRATCH_BYTES};
use waitfor::{probe_fn, Condition, Engine, Observation, Outcome, Pattern, Spec, WaitOptions};

/// Bytes the allocator hands out, in all its arenas and mapped on their own.
fn in_use() -> usize {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let info = unsafe { libc::mallinfo2() };
    info.uordblks + info.hblkhd
}

/// `len` random `a`s and `b`s (xorshift, fixed seed): every run of 15
/// letters turns up, so each pattern below needs thousands of DFA states.
fn random_ab(len: usize) -> String {
    let mut x: u64 = 88_172_645_463_325_252;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x >> 63 == 0 {
                'a'
            } else {
                'b'
            }
        })
        .collect()
}

#[test]
fn searching_with_many_dfa_heavy_patterns_takes_bounded_memory() {
    let ready = probe_fn(|_| Ok(Observation::text("ready")));
    let spec = Spec::new(Condition::Matches(Pattern::literal("ready")));
    Engine::global().wait(spec, ready).unwrap();
    // Small programs (a few KiB) whose lazy DFAs fill their caches, each
    // a distinct text (a comment) too long for the compile cache.
    let pad = "p".repeat(260);
    let patterns = (0..120)
        .map(|i| Pattern::regex(format!("(?x)a[ab]{{14}}[^ab\\n] # {pad}{i}")))
        .collect();
    let spec = Spec::new(Condition::Patterns(patterns))
        .interval(Duration::from_millis(10))
        .max_wait(Duration::from_secs(600));
    let text = random_ab(30_000);
    let baseline = in_use();
    let (sampled, first_sample) = mpsc::channel();
    let options = WaitOptions::default().on_progress(move |_| {
        let _ = sampled.send(in_use());
    });
    let probe = probe_fn(move |_| Ok(Observation::text(text.clone())));
    let handle = Engine::global()
        .start_with(spec, Some(Box::new(probe)), options)
        .unwrap();
    let held = first_sample
        .recv_timeout(Duration::from_secs(300))
        .map(|in_use| in_use.saturating_sub(baseline));
    handle.control().cancel();
    assert_eq!(handle.wait().outcome, Outcome::Cancelled);
    // Without the bound: about 1.6 MiB a pattern.
    let bound = MAX_COMPILED_WAIT_BYTES + MAX_WAIT_SCRATCH_BYTES + (8 << 20);
    let held = held.unwrap();
    assert!(
        held <= bound,
        "{} MiB held after the first sample, at most {} MiB expected",
        held >> 20,
        bound >> 20
    );
}
