//! 1,000 waits on one file share one watch: one append wakes them all,
//! on few threads. Alone in its test binary so the thread count is this
//! test's own.
#![cfg(unix)] // Unix descriptors and limits.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use waitfor::probes::{file_watch, FileProbe};
use waitfor::{Condition, Engine, Outcome, Pattern, Spec, ViewKind};

mod files;
use files::temp_dir;

mod threads;
use threads::thread_count;

#[test]
fn a_thousand_waits_on_one_file_all_wake_on_one_append() {
    const WAITS: u64 = 1000;
    let patience = Duration::from_secs(120);
    let dir = temp_dir("watch-many");
    let path = dir.join("shared.log");
    fs::write(&path, b"ready from before\n").unwrap();
    grow_file_table(2 * WAITS as i32);
    let before = thread_count();
    let reads = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..WAITS)
        .map(|_| {
            let probe = FileProbe::new(&path).count_reads(reads.clone());
            // Polling alone would take a minute.
            let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
                .view(ViewKind::Fresh)
                .interval(Duration::from_secs(60))
                .max_wait(patience * 2);
            Engine::global().start(spec, probe).unwrap()
        })
        .collect();
    let end = Instant::now() + patience;
    while reads.load(Ordering::SeqCst) < WAITS {
        assert!(Instant::now() < end, "first samples never all done");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(file_watch::registrations(&dir), WAITS as usize);
    let waiting_threads = thread_count();
    let appended = Instant::now();
    OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"ready\n")
        .unwrap();
    for handle in handles {
        let result = handle.wait_timeout(patience).expect("the wait ends");
        assert_eq!(result.outcome, Outcome::Matched);
    }
    let took = appended.elapsed();
    assert!(took < Duration::from_secs(30), "all matched after {took:?}");
    // The scheduler, a few workers and the one watcher thread.
    let extra = waiting_threads.saturating_sub(before);
    assert!(extra <= 32, "{extra} extra threads for 1,000 waits");
    while file_watch::registrations(&dir) > 0 {
        assert!(Instant::now() < end + patience, "registrations left");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Makes room for `slots` descriptors at once. The kernel grows a process's
/// file table by doubling, and while threads share it each growth waits out
/// a grace period (10 to 20 ms) in which every thread opening a file
/// blocks. No probe call finishes then, so the pool rightly grows as it
/// would for hung calls: threads the burst of opens costs, not the waits.
fn grow_file_table(slots: i32) {
    // SAFETY: duplicates stderr onto the lowest free descriptor at or past
    // `slots - 1`, then closes that copy; the table keeps its size.
    unsafe {
        let high = libc::fcntl(2, libc::F_DUPFD, slots - 1);
        assert!(high >= 0, "no room for {slots} descriptors");
        libc::close(high);
    }
}
