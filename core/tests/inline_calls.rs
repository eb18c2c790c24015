//! Quick probes run on the scheduler thread itself; one that hangs there
//! loses the scheduler to a new thread, and every other wait keeps its
//! pace (Linux: the watchdog needs a timerfd).
#![cfg(target_os = "linux")]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use waitfor::{probe_fn, Condition, Engine, Observation, Outcome, Pattern, Spec};

fn spec(max_wait: Duration) -> Spec {
    Spec::new(Condition::Matches(Pattern::literal("ready")))
        .interval(Duration::from_millis(10))
        .max_wait(max_wait)
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_string()
}

/// Runs a wait whose probe matches at call `samples`, first calling
/// `work(n)` on call `n`; returns the thread each call ran on.
fn call_threads(samples: u64, blocking: bool, work: impl Fn(u64) + Send + 'static) -> Vec<String> {
    let threads = Arc::new(Mutex::new(Vec::new()));
    let seen = threads.clone();
    let mut n = 0;
    let probe = probe_fn(move |_| {
        n += 1;
        seen.lock().unwrap().push(thread_name());
        work(n);
        Ok(Observation::text(if n < samples { "no" } else { "ready" }))
    });
    let probe = if blocking { probe.blocking() } else { probe };
    let result = Engine::global()
        .wait(spec(Duration::from_secs(60)), probe)
        .unwrap();
    assert_eq!(
        (result.outcome, result.samples),
        (Outcome::Matched, samples)
    );
    let threads = threads.lock().unwrap().clone();
    threads
}

#[test]
fn quick_probes_run_on_the_scheduler_after_their_first_call() {
    // A call preempted on a loaded machine looks slow and sends the next
    // one to a worker, and a take-over in another test pauses calls on the
    // scheduler for a while: attempts over some seconds make that noise
    // harmless.
    let mut attempts = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let threads = call_threads(5, false, |_| {});
        assert_eq!(
            threads[0], "waitfor-worker",
            "the first call is timed on a worker"
        );
        if threads[1..].iter().all(|t| t == "waitfor-scheduler") {
            return;
        }
        attempts.push(threads);
    }
    panic!("later calls never ran on the scheduler: {attempts:?}");
}

#[test]
fn probes_that_may_block_always_run_on_workers() {
    let threads = call_threads(5, true, |_| {});
    assert!(threads.iter().all(|t| t == "waitfor-worker"), "{threads:?}");
}

#[test]
fn a_call_that_stalls_sends_the_next_ones_to_workers() {
    let threads = call_threads(6, false, |n| {
        if n == 3 {
            // Slow work (not synchronisation): past the watchdog's bound.
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    // After a stall the probe proves itself on workers again, for two
    // quick calls, before it may come back.
    assert_eq!(
        threads[3..5],
        ["waitfor-worker", "waitfor-worker"],
        "{threads:?}"
    );
}

#[test]
fn a_quick_probe_that_hangs_loses_the_scheduler_and_other_waits_keep_their_pace() {
    // A quick probe that hangs the first time it is called on the
    // scheduler thread, until the test lets it go.
    let (entered, hung) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let hanging = probe_fn(move |_| {
        if thread_name() == "waitfor-scheduler" {
            entered.send(()).unwrap();
            released.lock().unwrap().recv().unwrap();
        }
        Ok(Observation::text("no"))
    });
    let hanging = Engine::global()
        .start(spec(Duration::from_secs(600)), hanging)
        .unwrap();
    hung.recv().unwrap();

    // Another wait runs its samples while the old scheduler thread hangs.
    let samples = Arc::new(AtomicU64::new(0));
    let counted = samples.clone();
    let other = probe_fn(move |_| {
        let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(Observation::text(if n < 20 { "no" } else { "ready" }))
    });
    let started = Instant::now();
    let result = Engine::global()
        .start(spec(Duration::from_secs(60)), other)
        .unwrap()
        .wait_timeout(Duration::from_secs(30))
        .expect("the other wait ran while the old scheduler thread hung");
    assert_eq!((result.outcome, result.samples), (Outcome::Matched, 20));
    assert!(started.elapsed() < Duration::from_secs(30));

    // The hung wait still hears a cancel, and the stuck call's answer,
    // once it comes, breaks nothing.
    hanging.control().cancel();
    let result = hanging
        .wait_timeout(Duration::from_secs(30))
        .expect("cancel was heard while the call hung");
    assert_eq!(result.outcome, Outcome::Cancelled);
    assert_eq!(result.probe.abandoned, 1);
    release.send(()).unwrap();
    assert!(hanging.wait_released(Duration::from_secs(30)));
    let after = Engine::global()
        .wait(
            spec(Duration::from_secs(30)),
            probe_fn(|_| Ok(Observation::text("ready"))),
        )
        .unwrap();
    assert_eq!(after.outcome, Outcome::Matched);
}

#[test]
fn probes_that_keep_stalling_cannot_pile_up_stuck_threads() {
    // 50 waits whose probes are quick on workers but stall whenever they
    // run on the scheduler thread (as a probe waiting for a busy
    // interpreter lock would): each stall costs a take-over, that is a
    // new scheduler thread. After one, no call runs on the scheduler for
    // a while, longer each time, so few threads are ever started.
    let schedulers = Arc::new(Mutex::new(HashSet::new()));
    let handles: Vec<_> = (0..50)
        .map(|_| {
            let seen = schedulers.clone();
            let probe = probe_fn(move |_| {
                if thread_name() == "waitfor-scheduler" {
                    seen.lock().unwrap().insert(std::thread::current().id());
                    // Slow work, not synchronisation: past the stall bound.
                    std::thread::sleep(Duration::from_millis(3));
                }
                Ok(Observation::text("no"))
            });
            Engine::global()
                .start(spec(Duration::from_millis(1500)), probe)
                .unwrap()
        })
        .collect();
    for handle in handles {
        let result = handle.wait();
        assert_eq!(result.outcome, Outcome::Timeout);
    }
    let started = schedulers.lock().unwrap().len();
    // Pauses of 50, 100, 200, 400, 800 ms fit in 1.5 s: a handful of
    // take-overs (other tests may add one or two), not one per stall.
    assert!(started <= 12, "{started} scheduler threads stalled");
}

#[test]
fn a_take_over_hands_out_what_the_stuck_turn_decided() {
    // Waits A and B sample in the same ticks. Once both run on the
    // scheduler thread, A hangs there: B's call or result, decided in the
    // same turn, must still go out at once, not at some later timer.
    let engine = Engine::new();
    let go = Arc::new(AtomicBool::new(false));
    let inline_seen = Arc::new(AtomicU64::new(0));
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let (g, seen) = (go.clone(), inline_seen.clone());
    let b = engine
        .start(
            spec(Duration::from_secs(600)),
            probe_fn(move |_| {
                if thread_name() == "waitfor-scheduler" {
                    seen.fetch_or(1, Ordering::SeqCst);
                }
                Ok(Observation::text(if g.load(Ordering::SeqCst) {
                    "ready"
                } else {
                    "no"
                }))
            }),
        )
        .unwrap();
    let (g, seen) = (go.clone(), inline_seen.clone());
    let a = engine
        .start(
            spec(Duration::from_secs(600)),
            probe_fn(move |_| {
                if thread_name() == "waitfor-scheduler" {
                    seen.fetch_or(2, Ordering::SeqCst);
                    if g.load(Ordering::SeqCst) {
                        let _ = released.lock().unwrap().recv();
                    }
                }
                Ok(Observation::text("no"))
            }),
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while inline_seen.load(Ordering::SeqCst) != 3 {
        assert!(Instant::now() < deadline, "the probes never ran inline");
        std::thread::yield_now();
    }
    go.store(true, Ordering::SeqCst);
    let got = b.wait_timeout(Duration::from_secs(10));
    release.send(()).unwrap();
    a.control().cancel();
    let result = got.expect("B's call or result was stranded behind the take-over");
    assert_eq!(result.outcome, Outcome::Matched);
}

/// Runs on `engine` a wait whose probe, the first time it is called on the
/// scheduler thread, runs `slow` there; it matches at the first call on a
/// scheduler thread after that. Returns the kernel's ids of the scheduler
/// threads of the slow call and of the later one.
fn scheduler_threads_around(engine: &Engine, slow: impl Fn() + Send + 'static) -> (i32, i32) {
    let slow_on = Arc::new(Mutex::new(None));
    let seen = slow_on.clone();
    let later = Arc::new(Mutex::new(None));
    let found = later.clone();
    let probe = probe_fn(move |_| {
        if thread_name() != "waitfor-scheduler" {
            return Ok(Observation::text("no"));
        }
        // SAFETY: plain syscall without arguments.
        let id = unsafe { libc::gettid() };
        let mut slow_on = seen.lock().unwrap();
        if slow_on.is_none() {
            *slow_on = Some(id);
            slow();
            return Ok(Observation::text("no"));
        }
        *found.lock().unwrap() = Some(id);
        Ok(Observation::text("ready"))
    });
    let result = engine.wait(spec(Duration::from_secs(60)), probe).unwrap();
    assert_eq!(result.outcome, Outcome::Matched);
    let slow_on = slow_on
        .lock()
        .unwrap()
        .expect("a call ran on the scheduler");
    let later = later
        .lock()
        .unwrap()
        .expect("a later call ran on the scheduler");
    (slow_on, later)
}

/// Spins the calling thread until `until`.
fn spin_until(until: Instant) {
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize) {
    // SAFETY: plain syscall on the calling thread with a set built here.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set),
            0
        );
    }
}

#[test]
fn a_call_whose_thread_waits_for_a_cpu_keeps_the_scheduler() {
    // During a call, a real-time thread spins on the scheduler thread's
    // CPU (both pinned there) for 10 ms: the call lasts well past the
    // stall bound, all of it waiting for the CPU, and the watchdog must
    // not take the scheduler away (the later call runs on the same
    // thread). A private engine: its scheduler thread stays pinned.
    let engine = Engine::new();
    // What `sched_setscheduler` gave the rival (it needs CAP_SYS_NICE).
    let rival_status = Arc::new(AtomicI32::new(i32::MIN));
    let status = rival_status.clone();
    let (slow_on, later) = scheduler_threads_around(&engine, move || {
        // SAFETY: plain syscall.
        let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).unwrap();
        pin_to(cpu);
        // Work, not synchronisation: both threads spin to the same
        // moment, under the limit past which a call loses the scheduler
        // anyway; the rival stops on its own (the call cannot tell it).
        let until = Instant::now() + Duration::from_millis(10);
        let status = status.clone();
        let rival = std::thread::spawn(move || {
            let fifo = libc::sched_param { sched_priority: 1 };
            // SAFETY: plain syscall on the calling thread.
            let set = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &fifo) };
            status.store(set, Ordering::SeqCst);
            if set == 0 {
                pin_to(cpu);
                spin_until(until);
            }
        });
        spin_until(until);
        rival.join().unwrap();
    });
    assert_eq!(
        rival_status.load(Ordering::SeqCst),
        0,
        "a real-time thread needs CAP_SYS_NICE (the tests run as root)"
    );
    assert_eq!(slow_on, later, "the scheduler was taken away");
}

#[test]
fn a_call_that_keeps_its_cpu_busy_loses_the_scheduler() {
    // Runnable all along like a preempted call, but running: after a
    // second look the watchdog takes over, well before the call ends.
    let engine = Engine::new();
    let (slow_on, later) = scheduler_threads_around(&engine, || {
        spin_until(Instant::now() + Duration::from_millis(15))
    });
    assert_ne!(slow_on, later, "the busy call kept the scheduler");
}
