//! The event wait's state machine on virtual time: every state and
//! transition, exact timing, cancel and wake, streams, and errors.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;
use waitfor::ouro::{
    simulate_follow, simulate_wait_for, validate_wait, AxEvent, CommandTemplate, EventFilter,
    EventMatcher, FollowLine, NextStep, Resume, WaitForError, WaitForOptions, WaitRead, WaitState,
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
