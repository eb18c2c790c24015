//! A resumable wait's token is where its stream probe stood after the last
//! answer the wait took: a call still in flight when the wait ends (a
//! sample under way as the host cancels) neither takes the token away nor
//! moves it past what the wait saw.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;
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
