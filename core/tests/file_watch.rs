//! The `file` probe's push wake on real files and the real engine: a wait
//! whose interval is far longer than the test's bound can only match in
//! time if the file watch woke it.

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use waitfor::probes::{file_watch, FileProbe};
use waitfor::{Condition, Engine, Outcome, Pattern, Spec, ViewKind, WaitHandle, WaitResult};

mod files;
use files::{append, temp_dir};

/// The interval of the waits that must be woken: a match sooner than
/// [`PUSHED`] cannot come from polling.
const LONG: Duration = Duration::from_secs(30);
const PUSHED: Duration = Duration::from_secs(10);
const PATIENCE: Duration = Duration::from_secs(60);

fn spec(marker: &str, interval: Duration) -> Spec {
    Spec::new(Condition::Matches(Pattern::literal(marker)))
        .view(ViewKind::Fresh)
        .interval(interval)
        .max_wait(PATIENCE * 2)
}

/// Polls `cond` with a generous deadline.
fn until(what: &str, cond: impl Fn() -> bool) {
    let end = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < end, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A wait on `path` whose first sample is done (so what is written next
/// is new to it).
fn start(path: &Path, spec: Spec) -> (WaitHandle, Arc<AtomicU64>) {
    let reads = Arc::new(AtomicU64::new(0));
    let probe = FileProbe::new(path).count_reads(reads.clone());
    let handle = Engine::global().start(spec, probe).unwrap();
    let first = reads.clone();
    until("first sample", || first.load(Ordering::SeqCst) >= 1);
    (handle, reads)
}

/// The result, and how long after `since` it came.
fn finish(handle: WaitHandle, since: Instant) -> (WaitResult, Duration) {
    let result = handle.wait_timeout(PATIENCE).expect("the wait ends");
    (result, since.elapsed())
}

fn assert_pushed(result: &WaitResult, took: Duration) {
    assert_eq!(result.outcome, Outcome::Matched, "{result:?}");
    assert!(
        took < PUSHED,
        "matched after {took:?}: not woken by the watch"
    );
}

/// Unregistration is done when the probe is dropped, after the result.
fn assert_unregistered(dir: &Path) {
    until("no registration left", || {
        file_watch::registrations(dir) == 0
    });
}

#[test]
fn an_append_wakes_a_wait_with_a_long_interval() {
    let dir = temp_dir("watch-append");
    let path = dir.join("build.log");
    append(&path, b"ready from an old run\n");
    let (handle, _) = start(&path, spec("ready", LONG));
    assert_eq!(file_watch::registrations(&dir), 1);
    let appended = Instant::now();
    let writer = std::thread::spawn(move || append(&path, b"step\nready\n"));
    let (result, took) = finish(handle, appended);
    writer.join().unwrap();
    assert_pushed(&result, took);
    assert_eq!(result.matched_lines, vec!["ready"]);
    assert_unregistered(&dir);
}

#[test]
fn a_file_created_after_the_wait_began_wakes_it() {
    let dir = temp_dir("watch-created");
    let path = dir.join("late.log");
    let (handle, _) = start(&path, spec("ready", LONG));
    let created = Instant::now();
    append(&path, b"ready\n");
    let (result, took) = finish(handle, created);
    assert_pushed(&result, took);
    assert_unregistered(&dir);
}

#[test]
fn rotation_by_rename_wakes_the_wait_and_both_files_are_read() {
    let dir = temp_dir("watch-rotated");
    let path = dir.join("app.log");
    append(&path, b"old\n");
    let (handle, _) = start(&path, spec("ready", LONG));
    append(&path, b"tail of the old file\n");
    let rotated = Instant::now();
    fs::rename(&path, dir.join("app.log.1")).unwrap();
    append(&path, b"new file: ready\n");
    let (result, took) = finish(handle, rotated);
    assert_pushed(&result, took);
    assert_eq!(result.matched_lines, vec!["new file: ready"]);
    assert_unregistered(&dir);
}

#[test]
fn every_append_of_a_burst_is_seen() {
    const LINES: usize = 500;
    let dir = temp_dir("watch-burst");
    let path = dir.join("burst.log");
    let (handle, _) = start(&path, spec(&format!("<{LINES}>"), LONG));
    let began = Instant::now();
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            for i in 1..=LINES {
                append(&path, format!("line <{i}>\n").as_bytes());
            }
        })
    };
    let (result, took) = finish(handle, began);
    writer.join().unwrap();
    assert_pushed(&result, took);
    assert_eq!(result.matched_lines, vec![format!("line <{LINES}>")]);
}

#[test]
fn samples_with_nothing_new_do_not_read_the_file() {
    let dir = temp_dir("watch-quiet");
    if !file_watch::skips_reads_in(&dir) {
        eprintln!(
            "skipped: {} is not on a filesystem trusted for events",
            dir.display()
        );
        return;
    }
    let path = dir.join("quiet.log");
    append(&path, b"nothing will happen\n");
    let window = Duration::from_millis(1500);
    let spec = spec("never", Duration::from_millis(10)).max_wait(window);
    let (handle, reads) = start(&path, spec);
    let result = handle.wait_timeout(PATIENCE).expect("the wait ends");
    assert_eq!(result.outcome, Outcome::Timeout);
    let reads = reads.load(Ordering::SeqCst);
    // The first sample, then one safety read a second at most.
    let allowed = 2 + result.elapsed_ms / 1000;
    assert!(
        reads <= allowed,
        "{reads} reads in {} samples",
        result.samples
    );
    assert!(result.samples > allowed, "{} samples", result.samples);
    assert_unregistered(&dir);
}

#[test]
fn a_directory_created_later_is_registered_and_then_pushes() {
    let base = temp_dir("watch-later-dir");
    let dir = base.join("logs");
    let path = dir.join("late.log");
    // Without a directory there is nothing to watch: the wait polls.
    let (first, _) = start(&path, spec("first", Duration::from_millis(20)));
    fs::create_dir(&dir).unwrap();
    append(&path, b"first\n");
    assert_eq!(finish(first, Instant::now()).0.outcome, Outcome::Matched);
    // Now the directory exists: a long wait is woken.
    let (second, _) = start(&path, spec("second", LONG));
    assert_eq!(file_watch::registrations(&dir), 1);
    let appended = Instant::now();
    append(&path, b"second\n");
    let (result, took) = finish(second, appended);
    assert_pushed(&result, took);
    assert_unregistered(&dir);
}

#[test]
fn probes_on_one_directory_share_its_watch_until_the_last_goes() {
    let dir = temp_dir("watch-shared");
    let (a, _) = start(&dir.join("a.log"), spec("done a", LONG));
    let (b, _) = start(&dir.join("b.log"), spec("done b", LONG));
    assert_eq!(file_watch::registrations(&dir), 2);
    let appended = Instant::now();
    append(&dir.join("a.log"), b"done a\n");
    let (result, took) = finish(a, appended);
    assert_pushed(&result, took);
    // The directory stays watched for the other probe.
    until("a unregistered", || file_watch::registrations(&dir) == 1);
    assert!(b.try_result().is_none());
    let appended = Instant::now();
    append(&dir.join("b.log"), b"done b\n");
    let (result, took) = finish(b, appended);
    assert_pushed(&result, took);
    assert_unregistered(&dir);
}

#[test]
fn a_probe_without_a_wait_never_registers() {
    let dir = temp_dir("watch-bare");
    let path = dir.join("bare.log");
    let mut probe = FileProbe::new(&path);
    let ctx = waitfor::ProbeContext {
        sample: 1,
        elapsed: Duration::ZERO,
        budget: Duration::from_secs(5),
        cancel: waitfor::CancelToken::new(),
        output_cap: 1 << 20,
    };
    use waitfor::Probe;
    probe.sample(&ctx).unwrap();
    assert_eq!(file_watch::registrations(&dir), 0);
    append(&path, b"seen at once\n");
    assert_eq!(probe.sample(&ctx).unwrap().text, "seen at once\n");
}
