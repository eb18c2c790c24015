//! A resumable wait's token is where its stream probe stood after the last
//! answer the wait took: a call still in flight when the wait ends (a
//! sample under way as the host cancels) neither takes the token away nor
//! moves it past what the wait saw.

mod files;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};
use waitfor::probes::FileProbe;
use waitfor::{
    Condition, Engine, Observation, Outcome, Pattern, Probe, ProbeContext, ProbeError, ProbeMode,
    ResumeToken, Spec, ViewKind,
};

/// A stream probe whose position is the number of calls begun. Its first
/// call answers `first`; its second tells the test it began, then blocks
/// until released.
struct SecondCallBlocks {
    first: &'static str,
    position: u32,
    began: Sender<()>,
    release: Receiver<()>,
}

fn token_at(position: u32) -> ResumeToken {
    ResumeToken::Lines {
        lines: vec![format!("position {position}")],
    }
}

impl Probe for SecondCallBlocks {
    fn sample(&mut self, _: &ProbeContext) -> Result<Observation, ProbeError> {
        self.position += 1;
        if self.position == 2 {
            self.began.send(()).unwrap();
            let _ = self.release.recv();
        }
        Ok(Observation::text(self.first))
    }

    fn mode(&self) -> ProbeMode {
        ProbeMode::Stream
    }

    fn resume_point(&self) -> Option<ResumeToken> {
        Some(token_at(self.position))
    }
}

/// Cancels a wait on a probe whose first call answers `first` while its
/// second call is under way; the result's token.
fn token_when_cancelled_mid_call(first: &'static str) -> Option<String> {
    let (began, began_rx) = channel();
    let (release, release_rx) = channel();
    let probe = SecondCallBlocks {
        first,
        position: 0,
        began,
        release: release_rx,
    };
    let spec = Spec::new(Condition::Matches(Pattern::literal("never")))
        .view(ViewKind::Fresh)
        .interval(Duration::from_millis(10))
        .max_wait(Duration::from_secs(60));
    let handle = Engine::global().start(spec, probe).unwrap();
    began_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the second call began");
    handle.control().cancel();
    let result = handle
        .wait_timeout(Duration::from_secs(20))
        .expect("a cancelled wait ends with its call still in flight");
    release.send(()).unwrap();
    assert_eq!(result.outcome, Outcome::Cancelled);
    result.resume
}

#[test]
fn a_call_in_flight_at_the_end_leaves_the_token_after_the_last_read_taken() {
    let token = token_when_cancelled_mid_call("line 1\n");
    assert_eq!(token, Some(token_at(1).encode()));
}

#[test]
fn a_call_in_flight_before_anything_was_read_leaves_the_token_where_the_wait_began() {
    let token = token_when_cancelled_mid_call("");
    assert_eq!(token, Some(token_at(1).encode()));
}

/// A file probe whose next call, once asked, tells the test it began and
/// blocks until released: a slow read in flight as the wait ends.
struct SlowFile {
    file: FileProbe,
    calls: std::sync::Arc<AtomicU32>,
    hold_next: std::sync::Arc<AtomicBool>,
    began: Sender<()>,
    release: Receiver<()>,
}

impl Probe for SlowFile {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        if self.hold_next.swap(false, Ordering::SeqCst) {
            self.began.send(()).unwrap();
            let _ = self.release.recv_timeout(Duration::from_secs(30));
        }
        let answer = self.file.sample(ctx);
        self.calls.fetch_add(1, Ordering::SeqCst);
        answer
    }

    fn mode(&self) -> ProbeMode {
        ProbeMode::Stream
    }

    fn resume_point(&self) -> Option<ResumeToken> {
        self.file.resume_point()
    }

    fn moved_without_reading(&self) -> bool {
        self.file.moved_without_reading()
    }
}

fn waits_for_mark(max_wait: Duration) -> Spec {
    Spec::new(Condition::Matches(Pattern::literal("MARK")))
        .view(ViewKind::Fresh)
        .interval(Duration::from_millis(10))
        .max_wait(max_wait)
}

/// Waits on `path` for a mark that does not come, lets `change` move the
/// file under the wait (no new text), and cancels the wait while a read is
/// in flight after the probe has seen the change; then appends the mark
/// and resumes from the token: what the resumed wait ends with.
fn resumed_after_a_change(path: &Path, change: impl FnOnce()) -> waitfor::WaitResult {
    let calls = std::sync::Arc::new(AtomicU32::new(0));
    let hold_next = std::sync::Arc::new(AtomicBool::new(false));
    let (began, began_rx) = channel();
    let (release, release_rx) = channel();
    let probe = SlowFile {
        file: FileProbe::new(path),
        calls: calls.clone(),
        hold_next: hold_next.clone(),
        began,
        release: release_rx,
    };
    let calls_reach = |n: u32| {
        let until = Instant::now() + Duration::from_secs(20);
        while calls.load(Ordering::SeqCst) < n {
            assert!(Instant::now() < until, "the probe stopped being called");
            std::thread::yield_now();
        }
    };
    let handle = Engine::global()
        .start(waits_for_mark(Duration::from_secs(60)), probe)
        .unwrap();
    calls_reach(1);
    change();
    // A call that began after the change has seen it.
    calls_reach(calls.load(Ordering::SeqCst) + 2);
    hold_next.store(true, Ordering::SeqCst);
    began_rx.recv_timeout(Duration::from_secs(20)).unwrap();
    handle.control().cancel();
    let result = handle.wait();
    release.send(()).unwrap();
    assert_eq!(result.outcome, Outcome::Cancelled);
    let token = ResumeToken::decode(result.resume.as_deref().expect("a token")).unwrap();
    files::append(path, b"MARK\n");
    let resumed = FileProbe::new(path).resume_from(&token);
    Engine::global()
        .start(waits_for_mark(Duration::from_secs(20)), resumed)
        .unwrap()
        .wait()
}

/// A rotated log (renamed, a new one made at its path) that the wait read
/// nothing of: the token is in the new file, so a resumed wait reads on.
#[test]
fn a_token_after_a_rotation_seen_is_in_the_new_file() {
    let dir = files::temp_dir("resume-rotated");
    let path = dir.join("app.log");
    std::fs::write(&path, "old\n").unwrap();
    let result = resumed_after_a_change(&path, || {
        std::fs::rename(&path, dir.join("app.log.1")).unwrap();
        std::fs::write(&path, "").unwrap();
    });
    assert_eq!(
        result.outcome,
        Outcome::Matched,
        "{:?}",
        result.probe.last_error
    );
}

/// The same for a log truncated in place (logrotate's copytruncate).
#[test]
fn a_token_after_a_truncation_seen_is_at_the_new_end() {
    let dir = files::temp_dir("resume-truncated");
    let path = dir.join("app.log");
    std::fs::write(&path, "old lines\n".repeat(10)).unwrap();
    let result = resumed_after_a_change(&path, || {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
    });
    assert_eq!(
        result.outcome,
        Outcome::Matched,
        "{:?}",
        result.probe.last_error
    );
}
