//! What a running wait holds of its observations (a binary of its own: it
//! measures what the allocator holds for the whole process).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use waitfor::{probe_fn, Condition, Engine, Observation, Pattern, Spec, ViewKind};

/// Bytes the allocator hands out, in its arenas and mapped on their own.
fn in_use() -> usize {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let info = unsafe { libc::mallinfo2() };
    info.uordblks + info.hblkhd
}

const OBSERVATION: usize = 200 * 1024;
const WAITS: usize = 100;

/// Bytes each of [`WAITS`] waits of `view` holds once its output, the
/// same [`OBSERVATION`] bytes at every sample, has been sampled twice.
/// Their deadline is far: ended by a cancel.
fn held_per_wait(view: ViewKind) -> usize {
    let engine = Engine::global();
    let text: Arc<str> = "x".repeat(OBSERVATION).into();
    let spec = Spec {
        view,
        ..Spec::new(Condition::Matches(Pattern::literal("never")))
            .interval(Duration::from_millis(10))
            .max_wait(Duration::from_secs(600))
    };
    let before = in_use();
    let (sampled, twice) = mpsc::channel();
    let handles: Vec<_> = (0..WAITS)
        .map(|_| {
            let (text, sampled) = (text.clone(), sampled.clone());
            let probe = probe_fn(move |ctx| {
                // The third call begins once the wait has taken in the
                // second observation; it holds no observation of its own.
                if ctx.sample >= 3 {
                    let _ = sampled.send(());
                    ctx.cancel.wait_timeout(Duration::from_secs(600));
                }
                Ok(Observation::text(text.to_string()))
            });
            engine.start(spec.clone(), probe).unwrap()
        })
        .collect();
    for _ in 0..WAITS {
        twice.recv_timeout(Duration::from_secs(60)).unwrap();
    }
    let held = in_use().saturating_sub(before) / WAITS;
    for handle in handles {
        handle.control().cancel();
        handle.wait();
    }
    held
}

/// A wait holds its latest observation once, not also a copy of its
/// first one (the whole view kept one, for "any output", for as long as the
/// wait ran: twice the output cap a wait).
#[test]
fn a_wait_holds_its_observation_once() {
    for view in [ViewKind::Whole, ViewKind::Fresh] {
        let held = held_per_wait(view);
        assert!(held < 3 * OBSERVATION / 2, "{view:?}: {held} bytes a wait");
    }
}
