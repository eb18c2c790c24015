//! End-to-end tests of `waitfor events`: the real binary on real files;
//! exit codes, resume commands run as printed, and a `--follow` stream read
//! by this process while it appends events. No sleep synchronises: each
//! test waits for an observable fact under a generous deadline.

mod common;

use common::*;
use serde_json::{json, Value};
use std::fs::{self, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;

fn line(kind: &str, summary: &str) -> String {
    json!({"type": kind, "at": "2026-01-01T00:00:00Z", "by": "ci", "summary": summary}).to_string()
        + "\n"
}

fn append(path: &Path, text: &str) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    (dir, path)
}

/// The words of a printed resume command (the tests use paths without
/// spaces, so no word is quoted).
fn resume_words(output: &str) -> Vec<String> {
    let line = output
        .lines()
        .find_map(|l| l.strip_prefix("resume: "))
        .unwrap_or_else(|| panic!("no resume line in:\n{output}"));
    let command = line.split("  # ").next().unwrap();
    command.split_whitespace().map(String::from).collect()
}

#[test]
fn satisfied_prints_the_event_and_exits_0() {
    let (_dir, path) = temp();
    append(
        &path,
        &(line("noise", "n") + &line("build.done", "build 7 passed")),
    );
    let p = path.to_str().unwrap();
    let out = run(&["events", p, "--type", "build.done", "--timeout", "10s"]);
    expect(&out, 0);
    assert!(stdout(&out).starts_with("2026-01-01T00:00:00Z build.done by ci: build 7 passed\n"));

    let out = run(&["--json", "events", p, "--summary", "PASSED", "-i"]);
    expect(&out, 0);
    let w: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (w["ax"].as_str(), w["state"].as_str()),
        (Some("wait/1"), Some("satisfied"))
    );
    assert_eq!(w["events"][0]["summary"], "build 7 passed");
}

#[test]
fn timed_out_prints_a_resume_command_that_continues_exactly() {
    let (_dir, path) = temp();
    append(&path, &line("build.done", "old"));
    let p = path.to_str().unwrap();
    let out = run(&[
        "events",
        p,
        "--type",
        "build.done",
        "--cursor",
        "end",
        "--timeout",
        "3s", // a read surely completes on a loaded machine, so the resumed wait sees the event
    ]);
    expect(&out, 1);
    let words = resume_words(&stdout(&out));
    assert_eq!(words[..3], ["waitfor", "events", p]);

    // Written between the two calls: seen by the resumed wait, once.
    append(&path, &line("build.done", "new"));
    let again = run(&words[1..].iter().map(String::as_str).collect::<Vec<_>>());
    expect(&again, 0);
    let printed = stdout(&again);
    assert!(
        printed.starts_with("2026-01-01T00:00:00Z build.done by ci: new\n"),
        "{printed}"
    );
    assert!(!printed.contains("old"));

    let third = run(&resume_words(&printed)[1..]
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    expect(&third, 1);
    assert!(stdout(&third).starts_with("nothing happened for"));
}

#[test]
fn gone_exits_1_by_terminal_event_and_by_missing_file() {
    let (_dir, path) = temp();
    append(&path, &line("closed", "run closed"));
    let p = path.to_str().unwrap();
    let out = run(&["events", p, "--type", "build.done"]);
    expect(&out, 1);
    assert!(stdout(&out).contains("gone: "));

    fs::remove_file(&path).unwrap();
    let out = run(&["--json", "events", p, "--type", "build.done"]);
    expect(&out, 1);
    let w: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(w["state"], "gone");
    assert_eq!(w["fresh"]["state"], "missing");
    assert_eq!(w["resume"], Value::Null);
    // Without a cursor the wait never saw the file: it is not "removed".
    let reason = w["reason"].as_str().unwrap();
    assert!(reason.ends_with("does not exist"), "{reason}");
}

#[test]
fn a_replaced_file_exits_5_and_bad_input_exits_2() {
    let (dir, path) = temp();
    append(&path, &line("a", "one"));
    let p = path.to_str().unwrap();
    let out = run(&["--json", "events", p, "--type", "a"]);
    expect(&out, 0);
    let w: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cursor = w["cursor"].as_str().unwrap().to_string();
    let other = dir.path().join("other.jsonl");
    append(&other, &(line("a", "one") + &line("x", "two")));
    fs::rename(&other, &path).unwrap();
    let out = run(&["events", p, "--type", "x", "--cursor", &cursor]);
    expect(&out, 5);
    assert!(
        stderr(&out).contains("changed under the cursor"),
        "{}",
        stderr(&out)
    );

    expect(&run(&["events", p, "--cursor", "bogus"]), 2);
    expect(&run(&["events", p, "--timeout", "soon"]), 2);
    expect(&run(&["events", p, "--summary", "(", "--regex"]), 2);
    // Checked before the wait, refused by its compile (the program is too
    // big): still the user's pattern, not the file.
    let too_big = r"\w{150}".repeat(8);
    let refused = run(&["events", p, "--summary", &too_big, "--regex"]);
    expect(&refused, 2);
    assert!(
        stderr(&refused).starts_with("waitfor events: filter: summary: "),
        "{}",
        stderr(&refused)
    );
    // Followed, the refusal comes alone: no `waiting` line before it.
    let followed = run(&["events", p, "--summary", &too_big, "--regex", "--follow"]);
    expect(&followed, 2);
    assert_eq!(stdout(&followed), "");
    assert!(
        stderr(&followed).starts_with("waitfor events: filter: summary: "),
        "{}",
        stderr(&followed)
    );
    expect(&run(&["events"]), 2);
}

#[cfg(unix)]
#[test]
fn a_fifo_or_a_device_exits_5_at_once_saying_what_it_is() {
    let (dir, _) = temp();
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let started = std::time::Instant::now();
    for (path, kind) in [
        (fifo.to_str().unwrap(), "a FIFO"),
        ("/dev/zero", "a device"),
    ] {
        for cursor in [&[][..], &["--cursor", "end"][..]] {
            let mut args = vec!["events", path, "--timeout", "60s"];
            args.extend_from_slice(cursor);
            let out = run(&args);
            expect(&out, 5);
            assert!(stderr(&out).contains(kind), "{}", stderr(&out));
        }
    }
    // Four refusals, each long before its 60 s limit.
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn malformed_lines_are_reported_on_stderr() {
    let (_dir, path) = temp();
    append(&path, &("{oops\n".to_string() + &line("x", "fine")));
    let out = run(&["events", path.to_str().unwrap(), "--type", "x"]);
    expect(&out, 0);
    assert!(
        stderr(&out).contains("line 1 (byte 0) skipped: not JSON"),
        "{}",
        stderr(&out)
    );
}

/// The text form's lines quote what other agents wrote (an event's `by`
/// and `summary`, the file's name): an escape sequence, a line separator
/// or a bidirectional mark in them shows escaped, on its own line, on
/// stdout and in the malformed-line report on stderr; `--json` keeps them
/// exact.
#[test]
fn the_text_form_shows_agent_text_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = "\x1b[2J\u{2028}\u{200e}";
    let escaped = r"\u{1b}[2J\u{2028}\u{200e}";
    let path = dir.path().join(format!("events{hostile}.jsonl"));
    let event =
        json!({"type": "t", "at": "2026-01-01T00:00:00Z", "by": hostile, "summary": hostile});
    append(&path, &format!("{{oops\n{event}\n"));
    let p = path.to_str().unwrap();
    let out = run(&["events", p, "--type", "t"]);
    expect(&out, 0);
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(
        text.starts_with(&format!("2026-01-01T00:00:00Z t by {escaped}: {escaped}\n")),
        "{text}"
    );
    assert!(text.contains(&format!("events{escaped}.jsonl")), "{text}");
    assert!(
        err.contains(&format!("events{escaped}.jsonl: line 1")),
        "{err}"
    );
    for shown in [&out.stdout, &out.stderr] {
        let shown = String::from_utf8_lossy(shown);
        assert!(
            !shown.contains(['\x1b', '\u{2028}', '\u{200e}']),
            "{shown:?}"
        );
    }

    let out = run(&["--json", "events", p, "--type", "t"]);
    expect(&out, 0);
    let w: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(w["events"][0]["by"], hostile);

    // A missing file ends the wait as gone, its name quoted twice.
    fs::remove_file(&path).unwrap();
    let out = run(&["events", p, "--type", "t"]);
    expect(&out, 1);
    let text = stdout(&out);
    assert!(text.starts_with("gone: "), "{text}");
    assert!(!text.contains(['\x1b', '\u{2028}', '\u{200e}']), "{text:?}");
}

/// `--json` and `--follow` write DEL, C1 controls, separators and
/// bidirectional marks in what other agents wrote (an event's fields, the
/// file's name in the resume command) as `\u` escapes: each JSON line
/// stays one line with nothing raw in it, and parses to the text exact.
#[test]
fn json_lines_escape_what_acts_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("events{ACTING}.jsonl"));
    let event = json!({"type": "t", "at": "2026-01-01T00:00:00Z", "by": ACTING, "summary": ACTING});
    append(&path, &format!("{event}\n{}", line("closed", "the end")));
    let p = path.to_str().unwrap();

    let out = run(&["--json", "events", p, "--type", "t"]);
    expect(&out, 0);
    assert_nothing_acts(&out.stdout);
    let w: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(w["events"][0]["by"], ACTING);
    assert_eq!(w["events"][0]["summary"], ACTING);

    // The stream: the waiting line (its resume command names the file),
    // the event, and the end at `closed`.
    let out = run(&["events", p, "--type", "t", "--follow"]);
    expect(&out, 1);
    assert_nothing_acts(&out.stdout);
    let lines: Vec<Value> = out
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{}", stdout(&out));
    assert_eq!(lines[0]["state"], "waiting");
    assert!(lines[0]["resume"]["command"]
        .as_str()
        .unwrap()
        .contains(ACTING));
    assert_eq!(lines[1]["summary"], ACTING);
    assert_eq!(lines[2]["state"], "gone");
}

#[test]
fn follow_streams_to_another_process() {
    let (_dir, path) = temp();
    append(&path, "");
    let mut child = waitfor()
        .args([
            "events",
            path.to_str().unwrap(),
            "--type",
            "x",
            "--cursor",
            "end",
            "--follow",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = || -> Value {
        let line = rx
            .recv_timeout(DEADLINE)
            .expect("a line from waitfor --follow");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    let waiting = next();
    assert_eq!(waiting["state"], "waiting");
    assert!(waiting["resume"]["command"]
        .as_str()
        .unwrap()
        .contains("--follow --cursor end"));

    append(&path, &(line("y", "skipped") + &line("x", "first")));
    assert_eq!(next()["summary"], "first");
    append(&path, &line("x", "second"));
    assert_eq!(next()["summary"], "second");
    append(&path, &line("closed", "the end"));
    let last = next();
    assert_eq!(last["state"], "gone");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
}

#[cfg(unix)]
#[test]
fn ctrl_c_ends_a_stream_with_its_resume_and_exit_130() {
    let (_dir, path) = temp();
    append(&path, "");
    let mut child = waitfor()
        .args(["events", path.to_str().unwrap(), "--follow"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let waiting: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(waiting["state"], "waiting");
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let last: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(last["state"], "timed-out");
    assert_eq!(last["reason"], "cancelled before a matching event");
    assert!(last["resume"]["command"]
        .as_str()
        .unwrap()
        .contains("--cursor j2."));
    assert_eq!(child.wait().unwrap().code(), Some(130));
}
