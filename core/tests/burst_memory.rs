//! The engine's bookkeeping gives back the room a burst of waits grew it
//! to once the waits are over (a binary of its own: it measures what the
//! allocator holds for the whole process).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use waitfor::{probe_fn, Condition, Engine, Observation, Pattern, Spec};

/// Bytes the allocator hands out, in its arenas and mapped on their own.
fn in_use() -> usize {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let info = unsafe { libc::mallinfo2() };
    info.uordblks + info.hblkhd
}

#[test]
fn a_burst_of_waits_with_hung_calls_leaves_no_room_behind() {
    let spec = |max_wait| {
        Spec::new(Condition::Matches(Pattern::literal("ready")))
            .interval(Duration::from_millis(20))
            .max_wait(max_wait)
    };
    // Start the engine's threads before the baseline.
    let ready = probe_fn(|_| Ok(Observation::text("ready")));
    Engine::global()
        .wait(spec(Duration::from_secs(5)), ready)
        .unwrap();
    let baseline = in_use();
    // 1,000 waits whose calls hang until released: their calls, results
    // and late answers queue by the thousand.
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let handles: Vec<_> = (0..1000)
        .map(|_| {
            let gate = gate.clone();
            let probe = probe_fn(move |_| {
                let (open, opened) = &*gate;
                let _open = opened.wait_while(open.lock().unwrap(), |open| !*open);
                Ok(Observation::text("late"))
            });
            Engine::global()
                .start(spec(Duration::from_millis(500)), probe)
                .unwrap()
        })
        .collect();
    for handle in handles {
        handle.wait();
    }
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    // The workers grown for the hung calls leave after 10 s idle, with
    // what their threads hold; then about 0.1 MiB more than before is in
    // use, where the room a thousand calls and answers took stayed
    // (+0.6 MiB). A generous bound: the process's first calls' caches.
    let bound = baseline + (256 << 10);
    let until = Instant::now() + Duration::from_secs(60);
    while in_use() > bound && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        in_use() <= bound,
        "{} KiB in use after the burst, {} KiB before",
        in_use() >> 10,
        baseline >> 10
    );
}
