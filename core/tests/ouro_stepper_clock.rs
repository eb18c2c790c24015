//! A [`Stepper`] on a careless host's clock: the wall clock (JavaScript's
//! `Date.now`, the default `now`) can be set back, and the wait must then
//! neither sleep for the length of the step nor stop reading.

use std::time::Duration;

use waitfor::ouro::{Action, NextStep, Stepper, WaitForError, WaitPlan, WaitRead, WaitState};

const HOUR: Duration = Duration::from_secs(3600);

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

fn plan(timeout_ms: u64) -> WaitPlan {
    WaitPlan {
        interval: ms(100),
        ..WaitPlan::new("build 7", Some(ms(timeout_ms)))
    }
}

/// The host's clock is set back an hour after the first read: the wait
/// still reads every 100 ms and ends after 1 s of the host's time passing,
/// where it slept an hour without reading.
#[test]
fn a_clock_set_back_neither_stretches_a_sleep_nor_stops_the_reads() {
    let start = 2 * HOUR;
    let (mut stepper, mut action) = Stepper::new(plan(1000), start).unwrap();
    // The host's clock, and the time that really passed.
    let (mut clock, mut passed) = (start, Duration::ZERO);
    let mut reads = 0;
    let ended = loop {
        action = match action {
            Action::Read { .. } => {
                reads += 1;
                if reads == 1 {
                    clock -= HOUR;
                }
                stepper.feed(clock, Ok(WaitRead::default())).unwrap()
            }
            Action::Sleep(d) => {
                assert!(
                    d <= ms(100),
                    "a sleep of {d:?} after the clock was set back"
                );
                clock += d;
                passed += d;
                stepper.tick(clock).unwrap()
            }
            Action::Done(ended) => break ended,
        };
    };
    assert_eq!(ended.state, WaitState::TimedOut);
    assert_eq!(passed, ms(1000));
    assert_eq!(reads, 10);
    let done = stepper
        .finish(Some(NextStep::new("again")), Vec::new())
        .unwrap();
    assert_eq!(done.wait.since, "1970-01-01T02:00:00.000Z");
    assert_eq!(done.wait.until.as_deref(), Some("1970-01-01T02:00:01.000Z"));
}

/// A read that answers after the clock was set back is kept: set back,
/// the clock says no time passed, not that the limit did.
#[test]
fn a_read_answered_after_the_clock_was_set_back_counts() {
    let (mut stepper, _) = Stepper::new(plan(1000), 2 * HOUR).unwrap();
    let action = stepper
        .feed(HOUR, Ok(WaitRead::default()))
        .expect("the answer is taken");
    assert_eq!(action, Action::Sleep(ms(100)));
    // Then the clock runs on from where it was set back to.
    assert!(matches!(
        stepper.tick(HOUR + ms(100)).unwrap(),
        Action::Read { .. }
    ));
}

/// A clock reading past what the system's time holds is refused, not a
/// panic; so is a wait whose end would be past it.
#[test]
fn a_clock_reading_past_the_latest_system_time_is_refused() {
    assert!(matches!(
        Stepper::new(plan(1000), Duration::MAX),
        Err(WaitForError::Options { field: "now", .. })
    ));
    let last = Duration::from_secs(i64::MAX as u64 - 1);
    let (mut stepper, _) = Stepper::new(plan(60_000), last).unwrap();
    let Action::Done(_) = stepper.cancel(last + Duration::from_secs(30)).unwrap() else {
        panic!("cancel ends the wait")
    };
    assert!(stepper
        .finish(Some(NextStep::new("again")), Vec::new())
        .is_err());
}
