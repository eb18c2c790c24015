//! Lines of an event log that are not events cost a record each: whoever
//! can append to the log (an agent, often) must not make a read or a wait
//! hold memory by the line. Two bytes of garbage ("x\n") made a record of
//! about 500 bytes: an 8 MiB log of them took 2 GiB in one Node read.

mod events_support;

use std::time::Duration;

use events_support::{append, line, TempDir};
use waitfor::ouro::{
    jsonl, Action, Malformed, NextStep, Stepper, WaitPlan, WaitRead, MAX_MALFORMED,
};

#[test]
fn a_read_reports_at_most_max_malformed_lines_and_consumes_them_all() {
    let dir = TempDir::new("malformed");
    let log = dir.file("events.jsonl");
    append(&log, &"x\n".repeat(100_000));
    append(&log, &line("build.done", "after the garbage"));
    let read = jsonl::read(&log, None).unwrap();
    assert_eq!(read.malformed.len(), MAX_MALFORMED);
    assert_eq!(read.malformed[0].line, 1);
    assert_eq!(read.events.len(), 1, "the event after the garbage is read");
    // Everything was consumed: nothing is read again.
    let again = jsonl::read(&log, read.cursor.as_deref()).unwrap();
    assert!(again.events.is_empty() && again.malformed.is_empty());
}

#[test]
fn a_wait_keeps_at_most_max_malformed_lines_of_all_its_reads() {
    let plan = WaitPlan {
        interval: Duration::from_millis(100),
        ..WaitPlan::new("build 7", Some(Duration::from_secs(10)))
    };
    let (mut stepper, mut action) = Stepper::new(plan, Duration::ZERO).unwrap();
    let mut now = Duration::ZERO;
    let garbage = |n: u64| WaitRead {
        malformed: (0..MAX_MALFORMED as u64)
            .map(|i| Malformed {
                line: n * 1000 + i,
                offset: 0,
                reason: "not JSON".into(),
            })
            .collect(),
        ..WaitRead::default()
    };
    let mut reads = 0;
    while let Action::Read { .. } | Action::Sleep(_) = action {
        action = match action {
            Action::Read { .. } => {
                reads += 1;
                stepper.feed(now, Ok(garbage(reads))).unwrap()
            }
            Action::Sleep(d) => {
                now += d;
                stepper.tick(now).unwrap()
            }
            Action::Done(_) => unreachable!(),
        };
    }
    assert_eq!(reads, 100);
    let done = stepper
        .finish(Some(NextStep::new("again")), Vec::new())
        .unwrap();
    assert_eq!(done.malformed.len(), MAX_MALFORMED);
    assert_eq!(done.malformed[0].line, 1000, "the first ones are kept");
}
