//! The event wait on the real engine over real JSON Lines files: resume
//! after `timed-out`, gone (terminal event, removed file), a replaced file,
//! malformed lines and the `ouro/wait` profile (the `waitfor events`
//! command's own tests are in cli/tests/events.rs).

use std::fs::{self};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use waitfor::ouro::{
    start, validate_wait, wait_for, CommandTemplate, EventsQuery, JsonlError, JsonlSource, Resume,
    WaitForError, WaitState,
};
use waitfor::profiles::{self, Host};

mod events_support;
use events_support::{append, host_for, line, TempDir};

fn query(path: &Path, kind: &str, timeout_ms: u64) -> EventsQuery {
    let mut q = EventsQuery::new(path);
    q.filter.kind = Some(kind.into());
    q.timeout = Some(Duration::from_millis(timeout_ms));
    q.interval = Some(Duration::from_millis(20));
    q
}

fn resume() -> Resume {
    Resume::Template(CommandTemplate::parse("again --cursor {cursor}").unwrap())
}

/// The cursor a resume command continues from (its last word).
fn resume_cursor(w: &waitfor::ouro::Wait) -> String {
    let cmd = &w.resume.as_ref().expect("a resume step").command;
    cmd.rsplit(' ').next().unwrap().to_string()
}

#[test]
fn resume_after_timed_out_sees_each_event_exactly_once() {
    let dir = TempDir::new("resume");
    let path = dir.file("log.jsonl");
    append(&path, &line("build.done", "old build"));
    let mut q = query(&path, "build.done", 150);
    q.cursor = Some("end".into());
    let first = wait_for(q.options(resume()).unwrap()).unwrap();
    assert_eq!(first.wait.state, WaitState::TimedOut, "{:?}", first.wait);
    let cursor = resume_cursor(&first.wait);
    assert_eq!(first.wait.cursor.as_deref(), Some(cursor.as_str()));

    // Written between the two calls: the resumed wait sees it.
    append(
        &path,
        &(line("noise", "n") + &line("build.done", "build 8 passed")),
    );
    q.cursor = Some(cursor);
    q.timeout = Some(Duration::from_secs(20));
    let second = wait_for(q.options(resume()).unwrap()).unwrap();
    assert_eq!(second.wait.state, WaitState::Satisfied);
    let summaries: Vec<_> = second.wait.events.iter().map(|e| &e.summary).collect();
    assert_eq!(summaries, ["build 8 passed"]);

    // ... and only once: the next wait from its cursor sees nothing.
    q.cursor = second.wait.cursor.clone();
    q.timeout = Some(Duration::from_millis(150));
    let third = wait_for(q.options(resume()).unwrap()).unwrap();
    assert_eq!(third.wait.state, WaitState::TimedOut);
    assert!(third.wait.events.is_empty());
    assert_eq!(third.wait.cursor, second.wait.cursor);
}

#[test]
fn an_event_appended_while_waiting_satisfies_the_wait() {
    let dir = TempDir::new("live");
    let path = dir.file("log.jsonl");
    append(&path, "");
    let mut q = query(&path, "build.done", 20_000);
    q.cursor = Some("end".into());
    let running = start(q.options(resume()).unwrap()).unwrap();
    append(&path, &line("build.done", "now"));
    let done = running.wait().unwrap();
    assert_eq!(done.wait.state, WaitState::Satisfied);
    assert_eq!(done.wait.events[0].summary, "now");
    assert!(validate_wait(&serde_json::to_value(&done.wait).unwrap()).ok);
}

#[test]
fn cancel_from_another_thread() {
    let dir = TempDir::new("cancel");
    let path = dir.file("log.jsonl");
    append(&path, "");
    let running = start(query(&path, "never", 20_000).options(resume()).unwrap()).unwrap();
    let control = running.control();
    std::thread::spawn(move || control.cancel()).join().unwrap();
    let done = running.wait().unwrap();
    assert_eq!(done.wait.state, WaitState::TimedOut);
    assert_eq!(
        done.wait.reason.as_deref(),
        Some("cancelled before a matching event")
    );
    assert!(done.wait.resume.is_some());
}

#[test]
fn gone_by_terminal_event() {
    let dir = TempDir::new("terminal");
    let path = dir.file("log.jsonl");
    append(
        &path,
        &(line("started", "a") + &line("closed", "run closed")),
    );
    let done = wait_for(query(&path, "build.done", 5000).options(resume()).unwrap()).unwrap();
    assert_eq!(done.wait.state, WaitState::Gone);
    assert!(done.wait.reason.as_deref().unwrap().contains("closed"));
    assert_eq!(done.wait.resume, None);
}

#[test]
fn gone_by_removed_file() {
    let dir = TempDir::new("removed");
    let path = dir.file("log.jsonl");
    append(&path, &line("started", "a"));
    // From a cursor into the file: the wait knows it existed, whenever its
    // first read comes.
    let mut q = query(&path, "build.done", 20_000);
    q.cursor = Some(JsonlSource::new(&path).end_cursor().unwrap());
    let running = start(q.options(resume()).unwrap()).unwrap();
    fs::remove_file(&path).unwrap();
    let done = running.wait().unwrap();
    assert_eq!(done.wait.state, WaitState::Gone);
    assert_eq!(done.wait.fresh.as_ref().unwrap().state, "missing");
    assert!(done.wait.reason.as_deref().unwrap().contains("was removed"));
}

#[test]
fn a_replaced_file_is_detected_through_the_cursor() {
    let dir = TempDir::new("replaced");
    let path = dir.file("log.jsonl");
    append(&path, &line("a", "one"));
    let mut q = query(&path, "build.done", 5000);
    let cursor = JsonlSource::new(&path).end_cursor().unwrap();
    // Another file moved into place, with the same first line.
    let other = dir.file("new.jsonl");
    append(&other, &(line("a", "one") + &line("build.done", "x")));
    fs::rename(&other, &path).unwrap();
    q.cursor = Some(cursor);
    let err = wait_for(q.options(resume()).unwrap()).unwrap_err();
    assert!(matches!(err, WaitForError::Read(_)), "{err}");
    let mut cause = std::error::Error::source(&err);
    let mut replaced = false;
    while let Some(c) = cause {
        replaced |= matches!(c.downcast_ref(), Some(JsonlError::Replaced { .. }));
        cause = c.source();
    }
    assert!(replaced, "{err}");
}

#[test]
fn malformed_lines_are_reported_and_skipped() {
    let dir = TempDir::new("malformed");
    let path = dir.file("log.jsonl");
    append(
        &path,
        &("not json\n".to_string() + "{\"type\": 5}\n" + &line("build.done", "ok")),
    );
    let done = wait_for(query(&path, "build.done", 5000).options(resume()).unwrap()).unwrap();
    assert_eq!(done.wait.state, WaitState::Satisfied);
    let lines: Vec<u64> = done.malformed.iter().map(|m| m.line).collect();
    assert_eq!(lines, [1, 2]);
    assert!(done.wait.cursor.as_deref().unwrap().starts_with("j2."));
}

#[test]
fn a_bad_cursor_is_refused_before_waiting() {
    let mut q = EventsQuery::new("/nonexistent/x.jsonl");
    q.cursor = Some("j9.1".into());
    let err = q.options(resume()).err().unwrap();
    assert!(err.to_string().contains("j9.1"), "{err}");
}

#[test]
fn the_profile_is_listed_with_the_envelope_schema() {
    let defs = profiles::definitions();
    let def = defs.iter().find(|d| d.profile == "ouro/wait").unwrap();
    assert_eq!(def.tool["name"], "wait_for_event");
    assert_eq!(def.tool["inputSchema"]["required"], json!(["path"]));
    assert!(def.tool["outputSchema"]["properties"]["state"]["enum"].is_array());
    assert_eq!(def.tool["annotations"]["readOnlyHint"], true);
}

#[test]
fn the_profile_waits_and_its_output_fits_its_schema() {
    let dir = TempDir::new("profile");
    let path = dir.file("log.jsonl");
    append(&path, &line("build.done", "build 7 passed"));
    let defs = profiles::definitions();
    let schema = &defs.iter().find(|d| d.profile == "ouro/wait").unwrap().tool["outputSchema"];
    let validator = jsonschema::validator_for(schema).unwrap();
    let args = json!({"path": path, "type": "build.done", "for": "build 7", "timeout": "5s"});
    let out = profiles::call("ouro/wait", &args, &host_for(&dir.0)).unwrap();
    assert_eq!(out["state"], "satisfied", "{out}");
    assert_eq!(out["for"], "build 7");
    assert!(validator.is_valid(&out), "{out}");

    let args = json!({"path": path, "type": "deploy.done", "timeout": 100, "cursor": "end"});
    let out = profiles::call("ouro/wait", &args, &host_for(&dir.0)).unwrap();
    assert_eq!(out["state"], "timed-out");
    assert!(validator.is_valid(&out), "{out}");
    let cmd = out["resume"]["command"].as_str().unwrap();
    let again: Value = serde_json::from_str(cmd.strip_prefix("wait_for_event ").unwrap()).unwrap();
    assert_eq!(again["cursor"], out["cursor"]);
    assert_eq!(again["type"], "deploy.done");
}

#[test]
fn the_profile_refuses_bad_arguments_by_field() {
    let host = Host {
        grants: waitfor::grants::Grants::all(),
        ..Host::default()
    };
    for (args, field) in [
        (json!({}), "path"),
        (json!({"path": "x", "nope": 1}), "nope"),
        (json!({"path": "x", "timeout": "soon"}), "timeout"),
        (json!({"path": "x", "timeout": 5}), "timeout"),
        (json!({"path": "x", "cursor": "j7"}), "cursor"),
        (
            json!({"path": "x", "summary": "(", "summaryRegex": true}),
            "summary",
        ),
        (json!({"path": "x", "type": 3}), "type"),
        // Ignoring case, these would fold for about 80 ms.
        (
            json!({"path": "x", "summary": r"\p{Any}".repeat(8), "summaryRegex": true,
                   "ignoreCase": true}),
            "summary",
        ),
        (json!({"path": 3}), "path"),
    ] {
        let err = profiles::prepare("ouro/wait", &args, &host).err().unwrap();
        assert_eq!(err.code(), "invalid_arguments", "{args}");
        let profiles::ToolError::InvalidArguments(spec) = err else {
            unreachable!()
        };
        assert_eq!(spec.field, field, "{args}: {spec}");
    }
}

/// The summary pattern compiles in the wait's time, on an engine worker:
/// compiling one could hold the caller's thread (an event loop) for
/// seconds. The call only checks it; one its compile refuses (the program
/// too big) fails the call, naming the field, when the wait begins.
#[test]
fn the_profile_compiles_the_summary_in_the_waits_time() {
    let dir = TempDir::new("summary-compile");
    let path = dir.file("log.jsonl");
    append(&path, "");
    let host = host_for(&dir.0);
    let args = json!({"path": path, "summary": r"\w{150}".repeat(8), "summaryRegex": true,
                      "timeout": 5000});
    assert!(profiles::prepare("ouro/wait", &args, &host).is_ok());
    let started = Instant::now();
    let err = profiles::call("ouro/wait", &args, &host).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "at the first read"
    );
    let profiles::ToolError::InvalidArguments(spec) = err else {
        panic!("{err:?}")
    };
    assert_eq!(
        (spec.field.as_str(), spec.rule),
        ("summary", waitfor::Rule::InvalidRegex)
    );
    assert!(spec.message.contains("1 MiB"), "{spec}");
}

#[test]
fn the_profile_clamps_the_timeout_to_the_host_ceiling() {
    let dir = TempDir::new("ceiling");
    let path = dir.file("log.jsonl");
    append(&path, "");
    let host = Host {
        max_wait_ceiling: Some(Duration::from_millis(100)),
        ..host_for(&dir.0)
    };
    let started = Instant::now();
    let out = profiles::call("ouro/wait", &json!({"path": path, "timeout": "1h"}), &host).unwrap();
    assert_eq!(out["state"], "timed-out");
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_source_that_never_answers_times_out_with_nothing_seen() {
    let (release, blocked) = std::sync::mpsc::channel::<()>();
    let blocked = std::sync::Mutex::new(blocked);
    let read = move |_: Option<&str>| -> Result<waitfor::ouro::WaitRead, waitfor::ouro::ReadError> {
        let _ = blocked.lock().unwrap().recv();
        Err("released".into())
    };
    let options =
        waitfor::ouro::WaitForOptions::new("x", Some(Duration::from_millis(100)), read, resume())
            .cursor(Some("c0".into()));
    let done = wait_for(options).unwrap();
    drop(release);
    assert_eq!(done.wait.state, WaitState::TimedOut);
    assert_eq!(
        done.wait.reason.as_deref(),
        Some("the event source did not answer before the time limit")
    );
    assert_eq!(done.wait.fresh, None, "nothing was seen");
    assert_eq!(done.wait.cursor.as_deref(), Some("c0"));
    assert_eq!(done.reads, 0);
}

#[test]
fn the_profile_refuses_a_cursor_that_does_not_fit_as_invalid_resume() {
    let dir = TempDir::new("profile-foreign");
    let path = dir.file("log.jsonl");
    append(&path, &(line("a", "one") + &line("b", "two")));
    // Made by another process (another key), or altered by hand.
    let foreign = JsonlSource::new(&path)
        .with_key(waitfor::ouro::CursorKey::from_secret(b"a restarted server"))
        .end_cursor()
        .unwrap();
    let mine = JsonlSource::new(&path).end_cursor().unwrap();
    let altered = mine.replace(".2.", ".1.");
    assert_ne!(altered, mine);
    for cursor in [foreign, altered] {
        let args = json!({"path": path, "cursor": cursor, "timeout": "30s"});
        match profiles::call("ouro/wait", &args, &host_for(&dir.0)) {
            Err(profiles::ToolError::InvalidArguments(e)) => {
                assert_eq!(
                    (e.field.as_str(), e.rule),
                    ("cursor", waitfor::Rule::InvalidResume),
                    "{e}"
                );
            }
            other => panic!("{cursor}: {other:?}"),
        }
    }
    // Its own cursor fits.
    let args = json!({"path": path, "cursor": mine, "timeout": 100});
    let out = profiles::call("ouro/wait", &args, &host_for(&dir.0)).unwrap();
    assert_eq!(out["state"], "timed-out", "{out}");
}

/// `count` `build.done` events numbered from 0, as JSON lines.
fn backlog(count: usize) -> String {
    (0..count)
        .map(|i| line("build.done", &format!("build {i}")))
        .collect()
}

#[test]
fn a_backlog_is_returned_a_thousand_events_a_wait() {
    let dir = TempDir::new("backlog");
    let path = dir.file("log.jsonl");
    append(&path, &(line("other", "skipped") + &backlog(2500)));
    let mut q = query(&path, "build.done", 5000);
    let mut seen = Vec::new();
    for expected in [1000, 1000, 500] {
        let done = wait_for(q.options(resume()).unwrap()).unwrap();
        assert_eq!(done.wait.state, WaitState::Satisfied);
        assert_eq!(done.wait.events.len(), expected);
        // One read: the event of another type did not count.
        assert_eq!(done.reads, 1);
        seen.extend(done.wait.events.iter().map(|e| e.summary.clone()));
        q.cursor = Some(resume_cursor(&done.wait));
    }
    let all: Vec<String> = (0..2500).map(|i| format!("build {i}")).collect();
    assert_eq!(seen, all, "each event once, in order");
}

#[test]
fn a_stream_reads_a_backlog_without_waiting_an_interval_a_read() {
    let dir = TempDir::new("stream-backlog");
    let path = dir.file("log.jsonl");
    append(&path, &backlog(2500));
    let mut q = query(&path, "build.done", 60_000);
    q.interval = Some(Duration::from_secs(3600));
    let (tx, rx) = std::sync::mpsc::channel();
    let running = waitfor::ouro::start_follow(q.options(resume()).unwrap(), move |line| {
        if let waitfor::ouro::FollowLine::Event(e) = line {
            let _ = tx.send(e.summary.clone());
        }
    })
    .unwrap();
    // Generous: three reads take milliseconds; the next interval is an hour.
    let streamed: Vec<String> = (0..2500)
        .map_while(|_| rx.recv_timeout(Duration::from_secs(30)).ok())
        .collect();
    running.cancel();
    assert_eq!(streamed.len(), 2500);
    assert_eq!(streamed.last().map(String::as_str), Some("build 2499"));
}

#[test]
fn a_log_of_large_events_is_returned_at_most_half_a_mebibyte_a_wait() {
    // 1,000 events of 1,300 control characters each: 8 MB of log, each
    // character a 6-byte escape. One answer with all of them would be
    // 17 MB once an MCP server sends it (text and structured content),
    // past what the official clients read.
    let dir = TempDir::new("large-events");
    let path = dir.file("log.jsonl");
    let summary = "\u{1}".repeat(1300);
    let events: String = (0..1000)
        .map(|i| line("build.done", &format!("{i} {summary}")))
        .collect();
    append(&path, &events);
    let mut seen = Vec::new();
    let mut cursor: Option<Value> = None;
    while seen.len() < 1000 {
        let mut args = json!({"path": path, "type": "build.done", "timeout": "5s"});
        if let Some(cursor) = &cursor {
            args["cursor"] = cursor.clone();
        }
        let out = profiles::call("ouro/wait", &args, &host_for(&dir.0)).unwrap();
        assert_eq!(out["state"], "satisfied", "after {} events", seen.len());
        let answer = serde_json::to_string(&out).unwrap().len();
        assert!(answer < 600 << 10, "{answer} bytes of JSON in one answer");
        let events = out["events"].as_array().unwrap();
        assert!(!events.is_empty());
        seen.extend(events.iter().map(|e| {
            let summary = e["summary"].as_str().unwrap();
            summary.split(' ').next().unwrap().parse::<usize>().unwrap()
        }));
        cursor = Some(out["cursor"].clone());
    }
    assert_eq!(
        seen,
        (0..1000).collect::<Vec<_>>(),
        "each event once, in order"
    );
}
