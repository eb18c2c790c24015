//! The event wait's state machine on virtual time: every state and
//! transition, exact timing, cancel and wake, streams, and errors.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;
use waitfor::ouro::{
    simulate_follow, simulate_wait_for, validate_wait, Action, AxEvent, CommandTemplate, Ended,
    EventFilter, EventMatcher, FollowLine, NextStep, Resume, Stepper, WaitForError, WaitForOptions,
    WaitPlan, WaitRead, WaitState,
};
use waitfor::simulate::Control;

fn event(n: u64, kind: &str) -> AxEvent {
    serde_json::from_value(json!({
        "cursor": format!("c{n}"), "type": kind, "at": format!("t{n}"),
        "by": "ci", "target": null, "summary": format!("event {n}")
    }))
    .unwrap()
}

/// The cursors each read was given, in order.
type Seen = Arc<parking_lot::Mutex<Vec<Option<String>>>>;

/// A source that answers read `n` (1-based) with `script(n)`, recording the
/// cursor each read was given.
fn source(
    script: impl Fn(u64) -> WaitRead + Send + 'static,
) -> (
    impl FnMut(Option<&str>) -> Result<WaitRead, waitfor::ouro::ReadError> + Send,
    Seen,
) {
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let log = seen.clone();
    let calls = AtomicU64::new(0);
    let read = move |c: Option<&str>| {
        log.lock().push(c.map(String::from));
        let n = calls.fetch_add(1, Ordering::Relaxed) + 1;
        let mut r = script(n);
        if r.cursor.is_none() {
            r.cursor = c.map(String::from);
        }
        Ok(r)
    };
    (read, seen)
}

fn resume() -> Resume {
    Resume::Template(CommandTemplate::parse("waitfor events log.jsonl --cursor {cursor}").unwrap())
}

fn options(
    timeout_ms: u64,
    read: impl FnMut(Option<&str>) -> Result<WaitRead, waitfor::ouro::ReadError> + Send + 'static,
) -> WaitForOptions {
    WaitForOptions::new(
        "build 7",
        Some(Duration::from_millis(timeout_ms)),
        read,
        resume(),
    )
    .cursor(Some("c0".into()))
    .interval(Duration::from_millis(100))
    .started_at(UNIX_EPOCH)
}

fn read_of(events: Vec<AxEvent>) -> WaitRead {
    WaitRead {
        cursor: events.last().map(|e| e.cursor.clone()),
        events,
        ..WaitRead::default()
    }
}

fn assert_valid(w: &waitfor::ouro::Wait) {
    let check = validate_wait(&serde_json::to_value(w).unwrap());
    assert!(check.ok, "{:?}", check.errors);
}

#[test]
fn satisfied_at_the_read_that_sees_a_match() {
    let (read, seen) = source(|n| match n {
        3 => read_of(vec![event(1, "build.started"), event(2, "build.done")]),
        _ => WaitRead::default(),
    });
    let matcher = EventMatcher::from_json(&json!({"type": "build.done"})).unwrap();
    let (done, sim) = simulate_wait_for(
        options(1000, read).filter(EventFilter::Matcher(matcher)),
        &[],
    )
    .unwrap();
    let w = &done.wait;
    assert_eq!(w.state, WaitState::Satisfied);
    assert_eq!(w.events, vec![event(2, "build.done")]);
    assert_eq!(w.cursor.as_deref(), Some("c2"));
    assert_eq!(sim.call_starts_ms, vec![0, 100, 200]);
    assert_eq!(w.since, "1970-01-01T00:00:00.000Z");
    assert_eq!(w.until.as_deref(), Some("1970-01-01T00:00:00.200Z"));
    assert_eq!(
        w.resume.as_ref().unwrap().command,
        "waitfor events log.jsonl --cursor c2"
    );
    assert_eq!(w.reason, None);
    assert_eq!(done.reads, 3);
    assert_eq!(*seen.lock(), vec![Some("c0".into()); 3]);
    assert_valid(w);
}

#[test]
fn non_matching_events_move_the_cursor_and_are_not_returned() {
    let (read, seen) = source(|n| match n {
        1 => read_of(vec![event(1, "a")]),
        2 => read_of(vec![event(2, "b")]),
        _ => read_of(vec![event(3, "want")]),
    });
    let filter = EventFilter::predicate(|e| e.kind == "want");
    let (done, _) = simulate_wait_for(options(1000, read).filter(filter), &[]).unwrap();
    assert_eq!(done.wait.events, vec![event(3, "want")]);
    assert_eq!(
        *seen.lock(),
        vec![Some("c0".into()), Some("c1".into()), Some("c2".into())]
    );
}

#[test]
fn timed_out_resumes_from_the_same_cursor() {
    let (read, _) = source(|n| match n {
        2 => read_of(vec![event(1, "noise")]),
        _ => WaitRead::default(),
    });
    let filter = EventFilter::predicate(|e| e.kind == "never");
    let (done, sim) = simulate_wait_for(options(500, read).filter(filter), &[]).unwrap();
    let w = &done.wait;
    assert_eq!(w.state, WaitState::TimedOut);
    assert!(w.events.is_empty());
    assert_eq!(w.cursor.as_deref(), Some("c1"));
    assert_eq!(
        w.resume.as_ref().unwrap().command,
        "waitfor events log.jsonl --cursor c1"
    );
    assert_eq!(
        w.reason.as_deref(),
        Some("no matching event before the time limit")
    );
    assert_eq!(w.until.as_deref(), Some("1970-01-01T00:00:00.500Z"));
    assert_eq!(sim.call_starts_ms, vec![0, 100, 200, 300, 400]);
    assert_valid(w);
}

#[test]
fn gone_ends_the_wait_without_resume() {
    let (read, _) = source(|n| match n {
        2 => WaitRead {
            events: vec![event(1, "closed")],
            cursor: Some("c1".into()),
            gone: Some("closed event at line 1".into()),
            ..WaitRead::default()
        },
        _ => WaitRead::default(),
    });
    let filter = EventFilter::predicate(|e| e.kind == "build.done");
    let (done, sim) = simulate_wait_for(options(1000, read).filter(filter), &[]).unwrap();
    let w = &done.wait;
    assert_eq!(w.state, WaitState::Gone);
    assert_eq!(w.reason.as_deref(), Some("closed event at line 1"));
    assert_eq!(w.resume, None);
    assert_eq!(w.cursor.as_deref(), Some("c1"));
    assert_eq!(sim.call_starts_ms, vec![0, 100]);
    assert_valid(w);
}

#[test]
fn a_match_in_the_same_read_as_gone_is_satisfied() {
    let (read, _) = source(|_| WaitRead {
        events: vec![event(1, "build.done"), event(2, "closed")],
        cursor: Some("c2".into()),
        gone: Some("closed".into()),
        ..WaitRead::default()
    });
    let filter = EventFilter::predicate(|e| e.kind == "build.done");
    let (done, _) = simulate_wait_for(options(1000, read).filter(filter), &[]).unwrap();
    assert_eq!(done.wait.state, WaitState::Satisfied);
    assert_eq!(done.wait.events.len(), 1);
    assert_eq!(done.wait.resume, None, "nothing more can happen");
    assert_valid(&done.wait);
}

#[test]
fn cancel_is_timed_out_with_its_reason() {
    let (read, _) = source(|_| WaitRead::default());
    let controls = [(Duration::from_millis(250), Control::Cancel)];
    let (done, sim) = simulate_wait_for(options(1000, read), &controls).unwrap();
    assert_eq!(done.wait.state, WaitState::TimedOut);
    assert_eq!(
        done.wait.reason.as_deref(),
        Some("cancelled before a matching event")
    );
    assert_eq!(done.wait.cursor.as_deref(), Some("c0"));
    assert_eq!(done.wait.until.as_deref(), Some("1970-01-01T00:00:00.250Z"));
    assert_eq!(sim.call_starts_ms, vec![0, 100, 200]);
    assert_valid(&done.wait);
}

#[test]
fn wake_reads_at_once() {
    let (read, _) = source(|n| match n {
        2 => read_of(vec![event(1, "x")]),
        _ => WaitRead::default(),
    });
    let controls = [(Duration::from_millis(30), Control::Wake)];
    let (done, sim) = simulate_wait_for(options(1000, read), &controls).unwrap();
    assert_eq!(done.wait.state, WaitState::Satisfied);
    assert_eq!(sim.call_starts_ms, vec![0, 30]);
    assert!(done.result.woken);
}

#[test]
fn target_callback_and_next_steps_are_carried() {
    let (read, _) = source(|_| read_of(vec![event(1, "x")]));
    let opts = options(1000, read)
        .target(Some(json!({"kind": "build", "id": "7"})))
        .callback(Some("https://host/cb".into()))
        .next(|events| vec![NextStep::new(format!("show {}", events[0].cursor))]);
    let (done, _) = simulate_wait_for(opts, &[]).unwrap();
    let w = &done.wait;
    assert_eq!(w.target, Some(json!({"kind": "build", "id": "7"})));
    assert_eq!(w.callback.as_deref(), Some("https://host/cb"));
    assert_eq!(w.next, vec![NextStep::new("show c1")]);
}

#[test]
fn a_failed_read_is_an_error_with_its_cause() {
    #[derive(Debug, thiserror::Error)]
    #[error("disk on fire")]
    struct Fire;
    let mut n = 0;
    let read = move |_: Option<&str>| -> Result<WaitRead, waitfor::ouro::ReadError> {
        n += 1;
        if n == 2 {
            Err(Box::new(Fire))
        } else {
            Ok(WaitRead::default())
        }
    };
    let err = simulate_wait_for(options(1000, read), &[]).unwrap_err();
    assert!(matches!(err, WaitForError::Read(_)));
    assert_eq!(err.to_string(), "reading the events failed: disk on fire");
    let cause = std::error::Error::source(&err).unwrap();
    assert!(cause.source().unwrap().downcast_ref::<Fire>().is_some());
}

#[test]
fn too_short_a_timeout_is_refused() {
    let (read, _) = source(|_| WaitRead::default());
    let err = simulate_wait_for(options(5, read), &[]).unwrap_err();
    assert!(
        matches!(
            err,
            WaitForError::Options {
                field: "timeout",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn no_time_limit_waits_until_it_happens() {
    let (read, _) = source(|n| {
        if n == 50 {
            read_of(vec![event(1, "x")])
        } else {
            WaitRead::default()
        }
    });
    let opts = WaitForOptions::new("x", None, read, resume())
        .cursor(Some("c0".into()))
        .interval(Duration::from_secs(60));
    let (done, sim) = simulate_wait_for(opts, &[]).unwrap();
    assert_eq!(done.wait.state, WaitState::Satisfied);
    assert_eq!(*sim.call_starts_ms.last().unwrap(), 49 * 60_000);
}

#[test]
fn follow_streams_waiting_then_each_event_then_the_end() {
    let (read, _) = source(|n| match n {
        2 => read_of(vec![event(1, "x"), event(2, "skip")]),
        4 => read_of(vec![event(3, "x")]),
        _ => WaitRead::default(),
    });
    let filter = EventFilter::predicate(|e| e.kind == "x");
    let (lines, done) = simulate_follow(options(1000, read).filter(filter), &[]).unwrap();
    let FollowLine::Waiting(first) = &lines[0] else {
        panic!("the first line is not the waiting envelope: {lines:?}");
    };
    assert_eq!(first.state, WaitState::Waiting);
    assert_eq!(first.cursor.as_deref(), Some("c0"));
    assert_eq!(first.until.as_deref(), Some("1970-01-01T00:00:01.000Z"));
    assert_valid(first);
    assert_eq!(
        lines[1..],
        [
            FollowLine::Event(event(1, "x")),
            FollowLine::Event(event(3, "x"))
        ]
    );
    assert_eq!(done.wait.state, WaitState::TimedOut);
    assert_eq!(done.wait.cursor.as_deref(), Some("c3"));
    assert_valid(&done.wait);
}

#[test]
fn follow_ends_when_gone() {
    let (read, _) = source(|n| match n {
        3 => WaitRead {
            gone: Some("removed".into()),
            ..WaitRead::default()
        },
        _ => WaitRead::default(),
    });
    let (lines, done) = simulate_follow(options(1000, read), &[]).unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(done.wait.state, WaitState::Gone);
}

/// Runs a [`Stepper`] on a host clock that moves only when the host
/// sleeps or a read takes time (`read_ms` each): the host's own clock, as
/// the seed's injected `now`/`sleep` are. Returns when each read began,
/// each sleep, how the wait ended and its envelope (`next` gives "show").
fn step_through(
    plan: WaitPlan,
    read_ms: u64,
    mut read: impl FnMut(Option<&str>) -> Result<WaitRead, waitfor::ouro::ReadError>,
) -> (Vec<u64>, Vec<u64>, Ended, waitfor::ouro::Waited) {
    let (mut stepper, mut action) = Stepper::new(plan, Duration::ZERO).unwrap();
    let (mut now, mut reads, mut sleeps) = (Duration::ZERO, Vec::new(), Vec::new());
    let ended = loop {
        action = match action {
            Action::Read { cursor, .. } => {
                reads.push(now.as_millis() as u64);
                let answer = read(cursor.as_deref());
                now += Duration::from_millis(read_ms);
                stepper.feed(now, answer).unwrap()
            }
            Action::Sleep(d) => {
                sleeps.push(d.as_millis() as u64);
                now += d;
                stepper.tick(now).unwrap()
            }
            Action::Done(ended) => break ended,
        };
    };
    let resume = ended
        .resume
        .then(|| resume().step(ended.cursor.as_deref()).unwrap());
    let next = match ended.wants_next() {
        true => vec![NextStep::new("show")],
        false => Vec::new(),
    };
    let done = stepper.finish(resume, next).unwrap();
    (reads, sleeps, ended, done)
}

fn plan(timeout_ms: u64) -> WaitPlan {
    WaitPlan {
        cursor: Some("c0".into()),
        interval: Duration::from_millis(100),
        ..WaitPlan::new("build 7", Some(Duration::from_millis(timeout_ms)))
    }
}

/// The stepper is the engine's wait on the host's clock: the same reads at
/// the same times and the same envelope as the simulator gives.
#[test]
fn a_stepper_on_the_hosts_clock_answers_as_the_engine_does() {
    let script = |n: u64| match n {
        3 => read_of(vec![event(1, "build.started"), event(2, "build.done")]),
        _ => WaitRead::default(),
    };
    let matcher =
        || EventFilter::Matcher(EventMatcher::from_json(&json!({"type": "build.done"})).unwrap());
    let (read, _) = source(script);
    let (simulated, sim) = simulate_wait_for(
        options(1000, read)
            .filter(matcher())
            .next(|_| vec![NextStep::new("show")]),
        &[],
    )
    .unwrap();
    let (read, seen) = source(script);
    let (reads, sleeps, ended, done) = step_through(
        WaitPlan {
            filter: matcher(),
            ..plan(1000)
        },
        0,
        read,
    );
    assert_eq!(reads, sim.call_starts_ms);
    assert_eq!(sleeps, [100, 100]);
    assert_eq!((ended.state, ended.resume), (WaitState::Satisfied, true));
    assert_eq!(ended.events, vec![event(2, "build.done")]);
    assert_eq!(done.wait, simulated.wait);
    assert_eq!(done.wait.until.as_deref(), Some("1970-01-01T00:00:00.200Z"));
    assert_eq!(done.wait.next, vec![NextStep::new("show")]);
    assert_eq!(*seen.lock(), vec![Some("c0".into()); 3]);

    // Timed out: no read at the limit, the last sleep trimmed to it, `until`
    // the limit; `next` is not asked for.
    let (read, _) = source(|_| WaitRead::default());
    let (simulated, _) = simulate_wait_for(options(250, read), &[]).unwrap();
    let (read, _) = source(|_| WaitRead::default());
    let (reads, sleeps, ended, done) = step_through(plan(250), 0, read);
    assert_eq!((reads, sleeps), (vec![0, 100, 200], vec![100, 100, 50]));
    assert!(!ended.wants_next());
    assert_eq!(done.wait, simulated.wait);
    assert_eq!(done.wait.until.as_deref(), Some("1970-01-01T00:00:00.250Z"));

    // Gone: no resume.
    let (read, _) = source(|_| WaitRead {
        gone: Some("closed".into()),
        ..WaitRead::default()
    });
    let (_, _, ended, done) = step_through(plan(1000), 0, read);
    assert_eq!((ended.state, ended.resume), (WaitState::Gone, false));
    assert_eq!(done.wait.resume, None);
    assert_valid(&done.wait);
}

/// Time a read takes is the host's: a read answering after the limit is
/// dropped, `until` is the limit, and the next read keeps the engine's plan.
#[test]
fn a_stepper_drops_a_read_that_answers_after_the_limit() {
    let (read, _) = source(|_| read_of(vec![event(1, "build.done")]));
    let (reads, _, ended, done) = step_through(plan(1000), 1500, read);
    assert_eq!(reads, vec![0]);
    assert_eq!((ended.state, ended.events.len()), (WaitState::TimedOut, 0));
    assert_eq!(
        done.wait.reason.as_deref(),
        Some("the event source did not answer before the time limit")
    );
    assert_eq!(done.wait.until.as_deref(), Some("1970-01-01T00:00:01.000Z"));
    assert_eq!(done.wait.cursor.as_deref(), Some("c0"));

    // Reads of 30 ms on a 100 ms plan: at 0, 100, 200 (sleeping 70 each).
    let (read, _) = source(|_| WaitRead::default());
    let (reads, sleeps, _, _) = step_through(plan(250), 30, read);
    assert_eq!((reads, sleeps), (vec![0, 100, 200], vec![70, 70, 20]));
}

/// Cancel ends the wait at once, a read in flight or not; a tick before
/// the timer sleeps the rest; a host out of step is refused.
#[test]
fn a_stepper_cancels_and_keeps_the_host_in_step() {
    let ms = Duration::from_millis;
    let (mut stepper, first) = Stepper::new(plan(1000), ms(5000)).unwrap();
    assert_eq!(
        first,
        Action::Read {
            cursor: Some("c0".into()),
            within: ms(1000)
        }
    );
    assert!(matches!(
        stepper.finish(None, Vec::new()),
        Err(WaitForError::Engine(_))
    ));
    assert_eq!(
        stepper.feed(ms(5010), Ok(WaitRead::default())).unwrap(),
        Action::Sleep(ms(90))
    );
    assert!(matches!(
        stepper.feed(ms(5010), Ok(WaitRead::default())),
        Err(WaitForError::Options { field: "read", .. })
    ));
    assert_eq!(stepper.tick(ms(5060)).unwrap(), Action::Sleep(ms(40)));
    let Action::Done(ended) = stepper.cancel(ms(5070)).unwrap() else {
        panic!("cancel ends the wait")
    };
    assert_eq!(
        (ended.state, ended.cursor.as_deref()),
        (WaitState::TimedOut, Some("c0"))
    );
    let done = stepper
        .finish(Some(NextStep::new("again c0")), Vec::new())
        .unwrap();
    assert_eq!(
        done.wait.reason.as_deref(),
        Some("cancelled before a matching event")
    );
    assert_eq!(done.wait.since, "1970-01-01T00:00:05.000Z");
    assert_eq!(done.wait.until.as_deref(), Some("1970-01-01T00:00:05.070Z"));
    assert_valid(&done.wait);

    // Cancelled while a read is in flight: its late answer is refused.
    let (mut stepper, _) = Stepper::new(plan(1000), ms(0)).unwrap();
    assert!(matches!(stepper.cancel(ms(10)).unwrap(), Action::Done(_)));
    assert!(stepper
        .feed(ms(20), Ok(read_of(vec![event(1, "x")])))
        .is_err());
}

/// A time limit past the latest time the clock holds (`Duration::MAX`, a
/// host's "no limit") is taken as none: the `waiting` line has no `until`,
/// where adding it to the start panicked.
#[test]
fn follow_with_a_limit_past_the_clock_has_no_until() {
    let read = |_: Option<&str>| {
        Ok(WaitRead {
            gone: Some("closed".into()),
            ..WaitRead::default()
        })
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let options =
        WaitForOptions::new("x", Some(Duration::MAX), read, resume()).cursor(Some("c0".into()));
    let done = waitfor::ouro::follow(options, move |line| drop(tx.send(line.clone()))).unwrap();
    assert_eq!(done.wait.state, WaitState::Gone);
    let Some(FollowLine::Waiting(first)) = rx.try_iter().next() else {
        panic!("the first line is the waiting envelope")
    };
    assert_eq!(first.until, None);
}

/// A read that stopped at its limit (`more`) is followed by the next read
/// at once, on the host's clock as on the engine; the others wait for the
/// interval, and so does one that says `more` without moving the cursor
/// (it would be read on for good).
#[test]
fn a_read_that_stopped_at_its_limit_is_followed_by_the_next_at_once() {
    // Reads 1 and 2 move the cursor and say more; read 3 says more but
    // stays; read 4 and on say nothing.
    let script = || {
        let mut n = 0;
        move |cursor: Option<&str>| {
            n += 1;
            let moved = if n <= 2 {
                Some(format!("c{n}"))
            } else {
                cursor.map(String::from)
            };
            Ok(WaitRead {
                cursor: moved,
                more: n <= 3,
                ..WaitRead::default()
            })
        }
    };
    let (reads, _, ended, _) = step_through(plan(1000), 0, script());
    assert_eq!(ended.state, WaitState::TimedOut);
    assert_eq!(reads[..5], [0, 0, 0, 100, 200]);
    let (_, sim) = simulate_wait_for(options(1000, script()), &[]).unwrap();
    assert_eq!(sim.call_starts_ms[..5], [0, 0, 0, 100, 200]);
}

/// A followed wait whose first read never comes back still streams its
/// `waiting` line first, then ends `timed-out` at its limit.
#[test]
fn follow_with_no_read_back_streams_waiting_then_the_end() {
    let resume = Resume::Template(CommandTemplate::parse("again {cursor}").unwrap());
    let read = |_: Option<&str>, cancel: &waitfor::CancelToken| {
        while !cancel.wait_timeout(Duration::from_secs(60)) {}
        Ok(WaitRead::default())
    };
    let options = WaitForOptions::cancellable("x", Some(Duration::from_millis(100)), read, resume)
        .cursor(Some("c0".into()));
    let (tx, rx) = std::sync::mpsc::channel();
    let done = waitfor::ouro::follow(options, move |line| {
        let _ = tx.send(line.clone());
    })
    .unwrap();
    let lines: Vec<FollowLine> = rx.try_iter().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let FollowLine::Waiting(first) = &lines[0] else {
        panic!("{lines:?}")
    };
    assert_eq!(first.state, WaitState::Waiting);
    assert_eq!(done.wait.state, WaitState::TimedOut);
}
