//! The JSON Lines event source, on real files in a temporary directory.

use std::fs::{self, OpenOptions};
use std::io::Write;

use serde_json::json;
use waitfor::ouro::{jsonl, CursorKey, JsonlCursor, JsonlError, JsonlSource};

mod events_support;
use events_support::{append, line, TempDir};

fn summaries(read: &waitfor::ouro::WaitRead) -> Vec<&str> {
    read.events.iter().map(|e| e.summary.as_str()).collect()
}

#[test]
fn events_after_the_cursor() {
    let dir = TempDir::new("after");
    let path = dir.file("log.jsonl");
    append(
        &path,
        &(line("a", "one") + &line("b", "two") + &line("c", "three")),
    );
    let all = jsonl::read(&path, None).unwrap();
    assert_eq!(summaries(&all), ["one", "two", "three"]);
    assert!(all.gone.is_none() && all.malformed.is_empty());
    assert_eq!(all.fresh.as_ref().unwrap().state, "current");
    assert!(all.fresh.as_ref().unwrap().as_of.is_some());
    assert_eq!(all.cursor.as_deref(), Some(all.events[2].cursor.as_str()));
    // Each event's cursor resumes right after it.
    let after_first = jsonl::read(&path, Some(&all.events[0].cursor)).unwrap();
    assert_eq!(summaries(&after_first), ["two", "three"]);
    assert_eq!(after_first.events, all.events[1..]);
    let after_last = jsonl::read(&path, all.cursor.as_deref()).unwrap();
    assert!(after_last.events.is_empty());
    assert_eq!(
        after_last.cursor, all.cursor,
        "nothing new: cursor unchanged"
    );
    let c = JsonlCursor::parse(all.cursor.as_deref().unwrap()).unwrap();
    assert_eq!(c.line, 3);
    assert_eq!(c.offset, fs::metadata(&path).unwrap().len());
}

#[test]
fn event_fields_come_from_the_line() {
    let dir = TempDir::new("fields");
    let path = dir.file("log.jsonl");
    let full = json!({"type": "build.done", "at": "t1", "by": "ci", "summary": "ok",
        "target": {"kind": "build", "id": "7"}, "data": {"exit": 0},
        "cursor": "ignored", "extra": true});
    append(&path, &format!("{full}\n"));
    let read = jsonl::read(&path, None).unwrap();
    let e = &read.events[0];
    assert_eq!(e.kind, "build.done");
    assert_eq!(e.target, Some(json!({"kind": "build", "id": "7"})));
    assert_eq!(e.data.as_ref().unwrap()["exit"], 0);
    assert_ne!(e.cursor, "ignored");
}

#[test]
fn an_event_written_between_two_reads_is_seen_exactly_once() {
    let dir = TempDir::new("resume");
    let path = dir.file("log.jsonl");
    append(&path, &line("a", "before"));
    let first = jsonl::read(&path, None).unwrap();
    assert_eq!(summaries(&first), ["before"]);
    // A wait times out here; the event arrives before the resumed wait.
    append(&path, &line("b", "between"));
    // The resumed wait may run in another process: only the cursor text
    // crosses over, read by a fresh source.
    let source = JsonlSource::new(&path);
    let second = source.read(first.cursor.as_deref()).unwrap();
    assert_eq!(summaries(&second), ["between"]);
    let third = source.read(second.cursor.as_deref()).unwrap();
    assert!(third.events.is_empty());
    append(&path, &line("c", "later"));
    let fourth = source.read(third.cursor.as_deref()).unwrap();
    assert_eq!(summaries(&fourth), ["later"]);
    let line_no = JsonlCursor::parse(fourth.cursor.as_deref().unwrap())
        .unwrap()
        .line;
    assert_eq!(line_no, 3, "line numbers stay absolute across resumes");
}

#[test]
fn gone_by_terminal_event() {
    let dir = TempDir::new("terminal");
    let path = dir.file("log.jsonl");
    append(
        &path,
        &(line("build.started", "started") + &line("closed", "run closed") + &line("x", "after")),
    );
    let read = jsonl::read(&path, None).unwrap();
    assert_eq!(summaries(&read), ["started", "run closed"]);
    assert_eq!(
        read.gone.as_deref(),
        Some("closed event at line 2: run closed")
    );
    assert_eq!(read.cursor.as_deref(), Some(read.events[1].cursor.as_str()));
    // The read stopped at the terminal event; what follows is still there.
    let rest = jsonl::read(&path, read.cursor.as_deref()).unwrap();
    assert_eq!(summaries(&rest), ["after"]);
    assert!(rest.gone.is_none());

    for kind in ["deleted", "left", "gone"] {
        let p = dir.file(&format!("{kind}.jsonl"));
        append(&p, &line(kind, kind));
        assert!(jsonl::read(&p, None).unwrap().gone.is_some(), "{kind}");
    }

    let custom = JsonlSource::new(&path).with_terminal_types(["build.started"]);
    let read = custom.read(None).unwrap();
    assert_eq!(summaries(&read), ["started"]);
    assert!(read
        .gone
        .unwrap()
        .starts_with("build.started event at line 1"));
    let none = JsonlSource::new(&path).with_terminal_types(Vec::<String>::new());
    let read = none.read(None).unwrap();
    assert_eq!(read.events.len(), 3);
    assert!(read.gone.is_none());
}

#[test]
fn gone_by_removed_file() {
    let dir = TempDir::new("removed");
    let path = dir.file("log.jsonl");
    append(&path, &line("a", "one"));
    let read = jsonl::read(&path, None).unwrap();
    fs::remove_file(&path).unwrap();
    let after = jsonl::read(&path, read.cursor.as_deref()).unwrap();
    assert!(after.events.is_empty());
    assert!(after.gone.as_deref().unwrap().ends_with("was removed"));
    assert_eq!(after.cursor, read.cursor, "the cursor is kept");
    assert_eq!(after.fresh.unwrap().state, "missing");
    let never = jsonl::read(dir.file("never.jsonl"), None).unwrap();
    let reason = never.gone.unwrap();
    assert!(reason.ends_with("never.jsonl does not exist"), "{reason}");
    assert_eq!(never.cursor, None);
}

fn assert_replaced(result: Result<waitfor::ouro::WaitRead, JsonlError>, why: &str) {
    match result {
        Err(JsonlError::Replaced { reason, .. }) => {
            assert!(reason.contains(why), "{reason:?} lacks {why:?}")
        }
        other => panic!("expected Replaced ({why}), got {other:?}"),
    }
}

#[test]
fn replaced_file_is_detected_through_the_cursor() {
    let dir = TempDir::new("replaced");
    let path = dir.file("log.jsonl");
    append(&path, &(line("a", "one") + &line("b", "two")));
    let cursor = jsonl::read(&path, None).unwrap().cursor.unwrap();

    // Another file moved into place (log rotation, atomic rewrite).
    let other = dir.file("new.jsonl");
    append(
        &other,
        &(line("a", "one") + &line("b", "two") + &line("c", "three")),
    );
    let keep = dir.file("old.jsonl");
    fs::rename(&path, &keep).unwrap();
    fs::rename(&other, &path).unwrap();
    assert_replaced(jsonl::read(&path, Some(&cursor)), "another file");

    // Same file truncated.
    fs::rename(&path, dir.file("newer.jsonl")).unwrap();
    fs::rename(&keep, &path).unwrap();
    assert!(
        jsonl::read(&path, Some(&cursor)).is_ok(),
        "the original is back"
    );
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(10)
        .unwrap();
    assert_replaced(jsonl::read(&path, Some(&cursor)), "truncated or rewritten");

    // Same file truncated and rewritten past the old offset.
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    f.write_all((line("z", "ONE") + &line("z", "TWO") + &line("z", "THREE")).as_bytes())
        .unwrap();
    drop(f);
    assert_replaced(jsonl::read(&path, Some(&cursor)), "truncated or rewritten");
}

#[test]
fn malformed_lines_are_reported_once_and_skipped() {
    let dir = TempDir::new("malformed");
    let path = dir.file("log.jsonl");
    let mut text = Vec::new();
    text.extend_from_slice(line("a", "good 1").as_bytes()); // line 1
    text.extend_from_slice(b"not json\n"); // 2
    text.extend_from_slice(b"\n"); // 3: blank, skipped silently
    text.extend_from_slice(b"[1, 2]\n"); // 4
    text.extend_from_slice(b"{\"type\":\"a\",\"at\":\"t\",\"by\":\"b\"}\n"); // 5
    text.extend_from_slice(b"{\"type\":5,\"at\":\"t\",\"by\":\"b\",\"summary\":\"s\"}\n"); // 6
    text.extend_from_slice(
        b"{\"type\":\"a\",\"at\":\"t\",\"by\":\"b\",\"summary\":\"s\",\"data\":[1]}\n",
    ); // 7
    text.extend_from_slice(b"\xff\xfe\n"); // 8: not UTF-8
    text.extend_from_slice(line("a", "good 2").as_bytes()); // 9
    fs::write(&path, &text).unwrap();

    let read = jsonl::read(&path, None).unwrap();
    assert_eq!(summaries(&read), ["good 1", "good 2"]);
    let got: Vec<(u64, &str)> = read
        .malformed
        .iter()
        .map(|m| (m.line, m.reason.as_str()))
        .collect();
    assert_eq!(got.len(), 6, "{got:?}");
    assert_eq!(got[0].0, 2);
    assert!(got[0].1.starts_with("not JSON"));
    assert_eq!(got[1], (4, "not a JSON object"));
    assert_eq!(got[2], (5, "summary: is required"));
    assert_eq!(got[3], (6, "type: must be a string"));
    assert_eq!(got[4], (7, "data: must be an object"));
    assert_eq!(got[5].0, 8);
    let first_line_len = line("a", "good 1").len() as u64;
    assert_eq!(read.malformed[0].offset, first_line_len);
    assert_eq!(read.cursor.as_deref(), Some(read.events[1].cursor.as_str()));

    // Resuming from the first event's cursor reports them again (they come
    // after it); resuming from the end does not.
    let again = jsonl::read(&path, Some(&read.events[0].cursor)).unwrap();
    assert_eq!(again.malformed.len(), 6);
    let end = jsonl::read(&path, read.cursor.as_deref()).unwrap();
    assert!(end.malformed.is_empty() && end.events.is_empty());

    // Only malformed lines: the cursor still moves past them.
    let bad_only = dir.file("bad.jsonl");
    fs::write(&bad_only, "oops\n").unwrap();
    let r = jsonl::read(&bad_only, None).unwrap();
    assert_eq!(r.malformed.len(), 1);
    let c = JsonlCursor::parse(r.cursor.as_deref().unwrap()).unwrap();
    assert_eq!((c.offset, c.line), (5, 1));
    assert!(jsonl::read(&bad_only, r.cursor.as_deref())
        .unwrap()
        .malformed
        .is_empty());
}

#[test]
fn partial_last_line_waits_for_its_newline() {
    let dir = TempDir::new("partial");
    let path = dir.file("log.jsonl");
    let whole = line("a", "split event");
    let (head, tail) = whole.split_at(20);
    append(&path, &(line("a", "first") + head));
    let read = jsonl::read(&path, None).unwrap();
    assert_eq!(summaries(&read), ["first"]);
    assert!(read.malformed.is_empty(), "a partial line is not malformed");
    let again = jsonl::read(&path, read.cursor.as_deref()).unwrap();
    assert!(again.events.is_empty());
    assert_eq!(again.cursor, read.cursor);
    append(&path, tail);
    let done = jsonl::read(&path, again.cursor.as_deref()).unwrap();
    assert_eq!(summaries(&done), ["split event"]);
}

#[test]
fn crlf_line_endings() {
    let dir = TempDir::new("crlf");
    let path = dir.file("log.jsonl");
    append(&path, &line("a", "one").replace('\n', "\r\n"));
    let read = jsonl::read(&path, None).unwrap();
    assert_eq!(summaries(&read), ["one"]);
}

#[test]
fn a_line_longer_than_one_read_is_skipped_once_complete() {
    let dir = TempDir::new("long");
    let path = dir.file("log.jsonl");
    let source = JsonlSource::new(&path).with_max_read_bytes(100);
    let long = line("a", &"x".repeat(300));
    append(&path, &long[..200]);
    let r = source.read(None).unwrap();
    assert!(
        r.events.is_empty() && r.malformed.is_empty(),
        "not complete yet"
    );
    append(&path, &(long[200..].to_string() + &line("b", "short")));
    let r = source.read(r.cursor.as_deref()).unwrap();
    assert_eq!(r.malformed.len(), 1);
    assert_eq!(r.malformed[0].line, 1);
    assert!(r.malformed[0].reason.contains("longer than 100 bytes"));
    let c = JsonlCursor::parse(r.cursor.as_deref().unwrap()).unwrap();
    assert_eq!(c.offset, long.len() as u64);
    let r = source.read(r.cursor.as_deref()).unwrap();
    assert_eq!(summaries(&r), ["short"]);
    // The cursor after the skipped line carries a correct identity.
    assert_eq!(
        JsonlCursor::parse(r.cursor.as_deref().unwrap())
            .unwrap()
            .line,
        2
    );
}

#[test]
fn reads_are_capped_and_continue() {
    let dir = TempDir::new("cap");
    let path = dir.file("log.jsonl");
    let one = line("a", "event");
    for _ in 0..10 {
        append(&path, &one);
    }
    let source = JsonlSource::new(&path).with_max_read_bytes(one.len() as u64 * 3 + 5);
    let mut cursor = None;
    let mut seen = 0;
    for _ in 0..10 {
        let r = source.read(cursor.as_deref()).unwrap();
        assert!(r.events.len() <= 3);
        seen += r.events.len();
        cursor = r.cursor;
    }
    assert_eq!(seen, 10);
}

#[test]
fn end_cursor_skips_what_is_already_there() {
    let dir = TempDir::new("end");
    let path = dir.file("log.jsonl");
    append(&path, &(line("a", "old") + &line("a", "older")));
    let source = JsonlSource::new(&path);
    let end = source.end_cursor().unwrap();
    let full = source.read(None).unwrap().cursor;
    assert_eq!(Some(end.clone()), full);
    append(&path, &line("a", "new"));
    assert_eq!(summaries(&source.read(Some(&end)).unwrap()), ["new"]);
    let missing = JsonlSource::new(dir.file("none.jsonl"));
    assert_eq!(
        JsonlCursor::parse(&missing.end_cursor().unwrap())
            .unwrap()
            .offset,
        0
    );
}

#[test]
fn bad_cursors_are_typed_errors() {
    let dir = TempDir::new("bad");
    let path = dir.file("log.jsonl");
    append(&path, &line("a", "one"));
    for bad in ["", "42", "j1.x", "j9.0.0.0.0.0", "j1.1.1.1.1.zz"] {
        match jsonl::read(&path, Some(bad)) {
            Err(JsonlError::BadCursor { cursor, .. }) => assert_eq!(cursor, bad),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
}

#[test]
fn empty_file_gives_a_start_cursor() {
    let dir = TempDir::new("empty");
    let path = dir.file("log.jsonl");
    fs::write(&path, "").unwrap();
    let r = jsonl::read(&path, None).unwrap();
    assert!(r.events.is_empty() && r.gone.is_none());
    let start = r.cursor.unwrap();
    assert_eq!(JsonlCursor::parse(&start).unwrap().offset, 0);
    append(&path, &line("a", "first"));
    assert_eq!(
        summaries(&jsonl::read(&path, Some(&start)).unwrap()),
        ["first"]
    );
}

#[test]
fn a_concurrent_writer_loses_and_repeats_nothing() {
    let dir = TempDir::new("concurrent");
    let path = dir.file("log.jsonl");
    fs::write(&path, "").unwrap();
    let writer_path = path.clone();
    let writer = std::thread::spawn(move || {
        let mut f = OpenOptions::new().append(true).open(&writer_path).unwrap();
        for i in 0..500 {
            // Written in two pieces, so readers see partial lines.
            let l = line("n", &i.to_string());
            let (a, b) = l.split_at(l.len() / 2);
            f.write_all(a.as_bytes()).unwrap();
            f.flush().unwrap();
            f.write_all(b.as_bytes()).unwrap();
        }
    });
    let mut cursor: Option<String> = None;
    let mut seen = Vec::new();
    loop {
        let done = writer.is_finished();
        let r = jsonl::read(&path, cursor.as_deref()).unwrap();
        assert!(r.malformed.is_empty(), "{:?}", r.malformed);
        seen.extend(r.events.iter().map(|e| e.summary.parse::<u32>().unwrap()));
        cursor = r.cursor;
        if done && r.events.is_empty() {
            break;
        }
    }
    writer.join().unwrap();
    assert_eq!(seen, (0..500).collect::<Vec<_>>());
}

#[test]
fn an_unbounded_read_limit_does_not_overflow() {
    let dir = TempDir::new("unbounded");
    let path = dir.file("log.jsonl");
    append(&path, &(line("a", "one") + &line("a", "two")));
    let source = JsonlSource::new(&path).with_max_read_bytes(u64::MAX);
    let first = source.read(None).unwrap();
    let again = source.read(Some(&first.events[0].cursor)).unwrap();
    assert_eq!(summaries(&again), ["two"]);
}

#[cfg(unix)]
/// What a cursor shows of a file: its offset and line count, nothing else.
#[test]
fn a_cursor_reveals_no_identity_and_tests_no_guess() {
    let dir = TempDir::new("oracle");
    let path = dir.file("secret.jsonl");
    // A line an agent must not learn, then one it was shown a cursor after.
    append(&path, "SECRET=0123456789abcdef\n");
    let end = JsonlSource::new(&path).end_cursor().unwrap();
    let c = JsonlCursor::parse(&end).unwrap();
    let meta = fs::metadata(&path).unwrap();
    use std::os::unix::fs::MetadataExt;
    let hexes = [format!("{:x}", meta.dev()), format!("{:x}", meta.ino())];
    let fields: Vec<&str> = end.split('.').collect();
    assert!(
        !hexes.iter().any(|h| fields[3] == h || fields[4] == h),
        "{end}"
    );
    // The tag is keyed: the same bytes in another process (another key)
    // give another cursor, so nobody can compute one for a guess.
    let other = JsonlSource::new(&path)
        .with_key(CursorKey::from_secret(b"another process"))
        .end_cursor()
        .unwrap();
    assert_ne!(other, end);
    assert_eq!((c.offset, c.line), (meta.len(), 1));
    // Cursors at two places, in one file or in two (a hard link is one):
    // their file fields do not tell which.
    append(&path, "{}\n");
    fs::hard_link(&path, dir.file("link.jsonl")).unwrap();
    let later = JsonlSource::new(dir.file("link.jsonl"))
        .end_cursor()
        .unwrap();
    assert_ne!(
        later.split('.').nth(3),
        end.split('.').nth(3),
        "{later} {end}"
    );
    // A guess written as a cursor (any tag) is refused the same way as a
    // wrong one, whatever the bytes.
    for tag in [0u128, c.tag ^ 1] {
        let guess = JsonlCursor { tag, ..c }.to_string();
        assert_replaced(JsonlSource::new(&path).read(Some(&guess)), "altered");
    }
    // So is an offset past the end, up to where no seek reaches (not an
    // I/O error).
    for offset in [c.offset + 1_000_000, 1 << 63, u64::MAX] {
        let guess = JsonlCursor { offset, ..c }.to_string();
        assert_replaced(JsonlSource::new(&path).read(Some(&guess)), "cursor");
    }
}

#[test]
fn a_cursor_from_another_process_or_moved_offset_does_not_fit() {
    let dir = TempDir::new("foreign");
    let path = dir.file("log.jsonl");
    append(&path, &(line("a", "one") + &line("b", "two")));
    let mine = JsonlSource::new(&path);
    let first = mine.read(None).unwrap();
    let after_one = first.events[0].cursor.clone();
    // Another process (another key): refused, never replayed from 0.
    let theirs = JsonlSource::new(&path).with_key(CursorKey::from_secret(b"restarted"));
    assert_replaced(theirs.read(Some(&after_one)), "another process");
    // The offset or line changed by hand: refused.
    let c = JsonlCursor::parse(&after_one).unwrap();
    for moved in [
        JsonlCursor { offset: 0, ..c },
        JsonlCursor {
            offset: c.offset + 1,
            ..c
        },
        JsonlCursor {
            offset: u64::MAX,
            ..c
        },
        JsonlCursor {
            line: c.line + 1,
            ..c
        },
    ] {
        assert!(mine.read(Some(&moved.to_string())).is_err(), "{moved}");
    }
    // Its own cursor still fits.
    assert_eq!(summaries(&mine.read(Some(&after_one)).unwrap()), ["two"]);
}

#[test]
fn a_read_stops_at_its_most_events_and_says_there_is_more() {
    let dir = TempDir::new("most-events");
    let path = dir.file("log.jsonl");
    let five: String = (1..=5).map(|i| line("a", &i.to_string())).collect();
    append(&path, &five);
    let src = JsonlSource::new(&path).with_max_events(2);
    let first = src.read(None).unwrap();
    assert_eq!(summaries(&first), ["1", "2"]);
    assert!(first.more);
    assert_eq!(
        first.cursor.as_deref(),
        Some(first.events[1].cursor.as_str())
    );
    let second = src.read(first.cursor.as_deref()).unwrap();
    assert_eq!((summaries(&second), second.more), (vec!["3", "4"], true));
    let last = src.read(second.cursor.as_deref()).unwrap();
    assert_eq!((summaries(&last), last.more), (vec!["5"], false));
    // By default, a thousand.
    let many: String = (0..1500).map(|i| line("a", &i.to_string())).collect();
    append(&path, &many);
    let read = jsonl::read(&path, last.cursor.as_deref()).unwrap();
    assert_eq!(
        (read.events.len(), read.more),
        (waitfor::ouro::DEFAULT_MAX_EVENTS, true)
    );
}

#[test]
fn a_read_that_takes_its_most_bytes_says_there_is_more() {
    let dir = TempDir::new("most-bytes");
    let path = dir.file("log.jsonl");
    append(&path, &(line("a", "one") + &line("a", "two")));
    let src = JsonlSource::new(&path).with_max_read_bytes(line("a", "one").len() as u64 + 4);
    let first = src.read(None).unwrap();
    assert_eq!((summaries(&first), first.more), (vec!["one"], true));
    let second = src.read(first.cursor.as_deref()).unwrap();
    assert_eq!((summaries(&second), second.more), (vec!["two"], false));
}

#[test]
fn a_long_line_without_its_newline_yet_is_no_more_to_read() {
    let dir = TempDir::new("long-partial");
    let path = dir.file("log.jsonl");
    append(&path, &"x".repeat(100));
    let read = JsonlSource::new(&path)
        .with_max_read_bytes(10)
        .read(None)
        .unwrap();
    assert!(read.events.is_empty());
    assert!(!read.more, "nothing consumed: no more to read at once");
}

#[test]
fn a_matching_read_skips_other_events_without_counting_them() {
    let dir = TempDir::new("only");
    let path = dir.file("log.jsonl");
    let others: String = (0..50).map(|i| line("other", &i.to_string())).collect();
    append(
        &path,
        &(others + &line("wanted", "w1") + &line("closed", "run closed")),
    );
    let wanted = waitfor::ouro::EventMatcher::from_json(&json!({"type": "wanted"})).unwrap();
    let src = JsonlSource::new(&path)
        .with_max_events(1)
        .only_matching(wanted);
    let read = src.read(None).unwrap();
    assert_eq!(summaries(&read), ["w1"]);
    assert_eq!(
        JsonlCursor::parse(read.cursor.as_deref().unwrap())
            .unwrap()
            .line,
        51
    );
    // A terminal event that does not match still ends the read as gone.
    let end = src.read(read.cursor.as_deref()).unwrap();
    assert!(end.events.is_empty() && !end.more);
    assert!(end.gone.unwrap().contains("closed"));
}

/// Bytes this thread has read from files so far.
fn bytes_read_by_this_thread() -> u64 {
    let io = fs::read_to_string("/proc/thread-self/io").unwrap();
    let rchar = io.lines().find_map(|l| l.strip_prefix("rchar: ")).unwrap();
    rchar.trim().parse().unwrap()
}

#[test]
fn a_read_takes_only_what_its_events_need() {
    let dir = TempDir::new("read-what-needed");
    let path = dir.file("log.jsonl");
    // 60,000 events, over 4 MiB.
    let events: String = (0..60_000).map(|i| line("a", &i.to_string())).collect();
    append(&path, &events);
    let before = bytes_read_by_this_thread();
    let read = jsonl::read(&path, None).unwrap();
    let took = bytes_read_by_this_thread() - before;
    assert_eq!((read.events.len(), read.more), (1000, true));
    // A few hundred KiB, not all that one read may take.
    assert!(took < 1 << 20, "read {took} bytes for 1,000 events");
}

#[test]
fn a_matching_read_goes_past_its_first_part_for_an_event() {
    let dir = TempDir::new("past-first-part");
    let path = dir.file("log.jsonl");
    // Over 256 KiB of other events before the one wanted.
    let others: String = (0..5000).map(|i| line("other", &i.to_string())).collect();
    assert!(others.len() > 256 << 10);
    append(&path, &(others + &line("wanted", "w1")));
    let wanted = waitfor::ouro::EventMatcher::from_json(&json!({"type": "wanted"})).unwrap();
    let read = JsonlSource::new(&path)
        .only_matching(wanted)
        .read(None)
        .unwrap();
    assert_eq!(summaries(&read), ["w1"]);
    assert!(!read.more);
}

#[test]
fn a_refusal_repeats_a_bounded_part_of_what_it_was_handed() {
    let dir = TempDir::new("echo");
    let path = dir.file("log.jsonl");
    append(&path, &line("a", "one"));
    // A 100 KB cursor, bad in its version and in its form.
    for cursor in ["x".repeat(100_000), format!("j2.{}", "1".repeat(100_000))] {
        let message = JsonlSource::new(&path)
            .read(Some(&cursor))
            .unwrap_err()
            .to_string();
        assert!(
            message.len() < 400,
            "{} bytes: {message:.200}",
            message.len()
        );
    }
}

#[test]
fn a_cursor_written_another_way_is_refused_as_edited() {
    let dir = TempDir::new("respelled");
    let path = dir.file("log.jsonl");
    append(&path, &line("a", "one"));
    let source = JsonlSource::new(&path);
    let cursor = source.end_cursor().unwrap();
    assert!(source.read(Some(&cursor)).is_ok());
    let parts: Vec<&str> = cursor.split('.').collect();
    for respelled in [
        format!("j2.0{}.{}.{}.{}", parts[1], parts[2], parts[3], parts[4]),
        format!("j2.{}.0{}.{}.{}", parts[1], parts[2], parts[3], parts[4]),
        cursor.to_uppercase().replacen("J2", "j2", 1),
    ] {
        match source.read(Some(&respelled)) {
            Err(JsonlError::BadCursor { reason, .. }) => {
                assert!(reason.contains("edited"), "{reason}")
            }
            other => panic!("{respelled}: expected BadCursor, got {other:?}"),
        }
    }
}

/// Asserts that a read by `src` from the file's start ends within a
/// generous bound, its wait still running or (`ended`) over, its cancel
/// token then cancelled. The read runs on a thread of its own, which a
/// read that does not end leaves running.
fn assert_read_ends(src: JsonlSource, ended: bool) {
    let cancel = waitfor::CancelToken::new();
    if ended {
        cancel.cancel();
    }
    let (done, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = src.read_until(None, &cancel);
        let _ = done.send(());
    });
    let bound = std::time::Duration::from_secs(20);
    assert!(
        heard.recv_timeout(bound).is_ok(),
        "the read went on for over {bound:?}"
    );
}

/// A filter an agent wrote (as `wait_for_event`'s arguments give it), no
/// event matches.
fn matcher(data: Vec<serde_json::Value>) -> waitfor::ouro::EventMatcher {
    let mut data = data;
    data.push(json!({"pointer": "/absent", "exists": true}));
    waitfor::ouro::EventMatcher::from_json(&json!({ "data": data })).unwrap()
}

/// One event with `bytes` of data, in fields of 12 bytes or so.
fn event_of(bytes: usize) -> String {
    let data: serde_json::Map<String, serde_json::Value> = (0..bytes / 12)
        .map(|i| (format!("k{i:07}"), json!(1)))
        .collect();
    format!(
        "{}\n",
        json!({"type": "a", "at": "2024-01-01T00:00:00Z", "by": "b", "summary": "s", "data": data})
    )
}

#[test]
fn conditions_on_the_whole_data_cost_no_copy_of_it() {
    // The empty pointer names the whole data: one event of 400 KB, and
    // 20,000 conditions on it (600 KB of arguments), must not copy the
    // data once a condition (8 GB in all): a read of one event, which no
    // deadline could stop midway.
    let dir = TempDir::new("whole-data");
    let path = dir.file("log.jsonl");
    append(&path, &event_of(400_000));
    let whole = vec![json!({"pointer": "", "exists": true}); 20_000];
    assert_read_ends(JsonlSource::new(&path).only_matching(matcher(whole)), false);
}

#[test]
fn a_read_stops_soon_after_its_wait_ends() {
    // Thousands of short events, each checked against 4 MiB of
    // conditions (each pointer's first part unescaped, so copied, per
    // event): many seconds for the read, which must not outlast its wait
    // by more than an event's worth.
    let dir = TempDir::new("read-cancelled");
    let path = dir.file("log.jsonl");
    let events = event_of(12).repeat(8000);
    append(&path, &events);
    let long = format!("/{}", "k".repeat(64 * 1024));
    let costly = vec![json!({"pointer": long, "exists": false}); 64];
    assert_read_ends(JsonlSource::new(&path).only_matching(matcher(costly)), true);
}
