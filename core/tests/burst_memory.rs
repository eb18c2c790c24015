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

/// `measure` once it is at most `bound`, or after a minute.
fn settled(measure: fn() -> usize, bound: usize) -> usize {
    let until = Instant::now() + Duration::from_secs(60);
    while measure() > bound && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    measure()
}

/// Each test measures the whole process: one at a time.
static ALONE: Mutex<()> = Mutex::new(());

#[test]
fn a_burst_of_waits_with_hung_calls_leaves_no_room_behind() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
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
    let after = settled(in_use, bound);
    assert!(
        after <= bound,
        "{} KiB in use after the burst, {} KiB before",
        after >> 10,
        baseline >> 10
    );
}

fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf with a valid name only reads a constant.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize
}

/// Whether the engine's give-back thread is waiting to trim.
fn give_back_pending() -> bool {
    // Linux keeps the first 15 bytes of a thread's name.
    let name = &"waitfor-give-back"[..15];
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .any(|comm| comm.trim_end() == name)
}

#[test]
fn what_is_freed_soon_after_a_give_back_is_asked_goes_back_too() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    // A machine that stalls this test for 0.4 s lets the trim run before
    // the frees; then the case runs again.
    for _ in 0..3 {
        // 60 MiB in blocks of 48 KiB, written to; every other block is
        // kept, so the freed half stays in the allocator's bins, where
        // only a trim gives it back (all but a page of each block).
        let mut blocks: Vec<Vec<u8>> = (0..1280).map(|_| vec![1u8; 48 << 10]).collect();
        // A pattern too big to compile: its compile asks for a give-back,
        // before its wait ends.
        let too_big = Pattern::regex(r"\w{150}N");
        let spec = Spec::new(Condition::Matches(too_big)).max_wait(Duration::from_secs(600));
        let result = Engine::global()
            .wait(spec, probe_fn(|_| Ok(Observation::text("x"))))
            .unwrap();
        assert_eq!(result.outcome, waitfor::Outcome::Error);
        // Soon after the wait ended, as threads that asked and then exit
        // free their caches, half the blocks are freed. The trim asked
        // for waits for them, even when an earlier request's trim (the
        // last test's workers leaving) was already waiting.
        std::thread::sleep(Duration::from_millis(100));
        let pending = give_back_pending();
        let holding = resident_bytes();
        let kept: Vec<Vec<u8>> = blocks.drain(..).step_by(2).collect();
        if !pending {
            continue;
        }
        // The trim waited for them: the freed 30 MiB go back (a generous
        // bound), where a trim run at once left them all resident.
        let bound = holding - (20 << 20);
        let after = settled(resident_bytes, bound);
        assert!(
            after <= bound,
            "{} KiB resident, {} KiB before freeing 30 MiB",
            after >> 10,
            holding >> 10
        );
        drop(kept);
        return;
    }
    panic!("the trim ran before the frees 0.1 s after its request, three times out of three");
}
