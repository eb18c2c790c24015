//! Where an event wait starts is worked out inside the wait: `cursor: "end"`
//! is resolved by the wait's first read, on an engine worker within the
//! time limit, never on the caller's thread; and every read loop stops
//! once the wait no longer wants its result.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use waitfor::ouro::{
    start, wait_for, CommandTemplate, EventsQuery, JsonlError, JsonlSource, Resume, WaitState,
};
use waitfor::profiles;
#[cfg(unix)]
use waitfor::profiles::ToolError;
use waitfor::CancelToken;

mod events_support;
#[cfg(unix)]
use events_support::mkfifo;
use events_support::{append, host_for, line, TempDir};

/// Writes about `mib` MiB of event lines.
fn big_log(path: &Path, mib: usize) {
    let mut out = BufWriter::new(File::create(path).unwrap());
    let event = line("noise", &"x".repeat(60));
    for _ in 0..(mib << 20) / event.len() {
        out.write_all(event.as_bytes()).unwrap();
    }
    out.flush().unwrap();
}

/// Far more than a `stat` takes on a loaded machine, far less than
/// scanning the 50 MiB file did on the caller's thread (1.5 s).
const CALLER: Duration = Duration::from_millis(500);

fn assert_within(took: Duration, bound: Duration, what: &str) {
    assert!(took < bound, "{what} took {took:?}");
}

fn resume() -> Resume {
    Resume::Template(CommandTemplate::parse("again {cursor}").unwrap())
}

#[test]
fn the_end_of_a_large_file_is_found_inside_the_deadline_not_by_the_caller() {
    let dir = TempDir::new("start-large");
    let path = dir.file("log.jsonl");
    big_log(&path, 50);

    // The caller's thread only builds and starts the wait.
    let mut query = EventsQuery::new(&path);
    query.cursor = Some("end".into());
    query.timeout = Some(Duration::from_millis(100));
    let started = Instant::now();
    let running = start(query.options(resume()).unwrap()).unwrap();
    let start_took = started.elapsed();
    let done = running.wait().unwrap();
    assert_eq!(done.wait.state, WaitState::TimedOut, "{:?}", done.wait);
    assert_within(started.elapsed(), Duration::from_secs(2), "the wait");
    assert_within(start_took, CALLER, "start");

    // The same through the tool.
    let args = json!({"path": path, "cursor": "end", "timeout": 100});
    let host = host_for(&dir.0);
    let started = Instant::now();
    let prepared = profiles::prepare("ouro/wait", &args, &host).unwrap();
    let prepare_took = started.elapsed();
    let out = prepared.run(Default::default()).unwrap();
    assert_eq!(out["state"], "timed-out", "{out}");
    assert_within(started.elapsed(), Duration::from_secs(2), "the call");
    assert_within(prepare_took, CALLER, "prepare");
}

#[test]
fn an_abandoned_read_stops_at_once() {
    let dir = TempDir::new("start-cancel");
    let path = dir.file("log.jsonl");
    big_log(&path, 8);
    let cancelled = CancelToken::new();
    cancelled.cancel();
    let source = JsonlSource::new(&path);
    let err = source.read_until(Some("end"), &cancelled).unwrap_err();
    assert!(
        matches!(&err, JsonlError::Io { source, .. } if source.kind() == std::io::ErrorKind::Interrupted),
        "{err}"
    );
    // A line longer than one read is skipped by a loop that stops too.
    let long = dir.file("long.jsonl");
    std::fs::write(&long, "y".repeat(4 << 20) + "\n").unwrap();
    let source = JsonlSource::new(&long).with_max_read_bytes(1024);
    assert!(source.read_until(None, &CancelToken::new()).is_ok());
    let err = source.read_until(None, &cancelled).unwrap_err();
    assert!(err.to_string().contains("abandoned"), "{err}");
}

#[cfg(unix)]
#[test]
fn preparing_a_wait_does_not_touch_the_file() {
    let dir = TempDir::new("start-fifo");
    let fifo = dir.file("pipe");
    mkfifo(&fifo);
    let args = json!({"path": fifo, "cursor": "end", "timeout": "30s"});
    let prepared =
        profiles::prepare("ouro/wait", &args, &host_for(&dir.0)).unwrap_or_else(|e| panic!("{e}"));
    match prepared.run(Default::default()) {
        Err(ToolError::Runtime(message)) => assert!(message.contains("a FIFO"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn end_is_where_the_file_ended_when_the_wait_was_made() {
    let dir = TempDir::new("start-mark");
    let path = dir.file("log.jsonl");
    append(&path, &line("old", "before"));
    let query = |path: &Path| {
        let mut q = EventsQuery::new(path);
        q.cursor = Some("end".into());
        q.timeout = Some(Duration::from_secs(20));
        q.interval = Some(Duration::from_millis(20));
        q
    };
    // Appended after the wait was made, before its first read: it counts.
    let options = query(&path).options(resume()).unwrap();
    append(&path, &line("new", "after"));
    let done = wait_for(options).unwrap();
    let summaries: Vec<_> = done.wait.events.iter().map(|e| &e.summary).collect();
    assert_eq!(summaries, ["after"]);

    // A file that appears after the wait was made counts whole.
    let later = dir.file("later.jsonl");
    let options = query(&later).options(resume()).unwrap();
    append(&later, &line("new", "first"));
    let done = wait_for(options).unwrap();
    assert_eq!(done.wait.events[0].summary, "first");
}
