//! The JSON Lines event reader and its cursors, on a real file that the
//! input writes piece by piece. Read step by step with the cursor each read
//! hands back, the file gives exactly the events and malformed lines that
//! one reader going over the finished file finds; a cursor into a file
//! truncated or rewritten before it is refused; a forged cursor never
//! panics.
#![no_main]

use arbitrary::Arbitrary;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use waitfor::ouro::{AxEvent, JsonlCursor, JsonlError, JsonlSource, Malformed, CURSOR_END};

#[derive(Arbitrary, Debug)]
enum Kind {
    BuildDone,
    Note,
    Deleted,
    Closed,
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// Appends one well-formed event line.
    Event {
        kind: Kind,
        summary: String,
        target: Option<u8>,
        data: Option<(String, i64)>,
        crlf: bool,
    },
    /// Appends any bytes.
    Raw(Vec<u8>),
    /// Reads once after the follower's cursor.
    Read,
    /// Cuts the file before the cursor (or anywhere when it is at 0).
    Truncate(u16),
    /// Changes the byte just before the cursor.
    Rewrite,
    /// Reads after the cursor with another line count in it.
    Relined(u64),
    /// Reads after any text given as a cursor.
    Forged(String),
}

#[derive(Arbitrary, Debug)]
struct Input {
    max_read: u8,
    ops: Vec<Op>,
}

/// A reader that keeps the cursor each read hands back.
struct Follower {
    source: JsonlSource,
    cursor: Option<String>,
    events: Vec<AxEvent>,
    malformed: Vec<Malformed>,
}

impl Follower {
    fn new(source: &JsonlSource) -> Self {
        Self {
            source: source.clone(),
            cursor: None,
            events: Vec::new(),
            malformed: Vec::new(),
        }
    }

    /// One read; whether it moved the cursor or found anything.
    fn read(&mut self) -> Result<bool, JsonlError> {
        let read = self.source.read(self.cursor.as_deref())?;
        let moved =
            read.cursor != self.cursor || !read.events.is_empty() || !read.malformed.is_empty();
        // "More" comes only from a read that consumed something.
        assert!(
            !read.more || read.cursor != self.cursor,
            "more, but the cursor stayed"
        );
        self.events.extend(read.events);
        self.malformed.extend(read.malformed);
        self.cursor = read.cursor;
        Ok(moved)
    }

    /// Reads until nothing more is there (each read takes at least a line).
    fn drain(&mut self, file_len: usize) {
        for _ in 0..file_len + 4 {
            if !self.read().expect("the follower's own cursor fits") {
                return;
            }
        }
        panic!("reads never settle on a {file_len}-byte file");
    }

    fn offset(&self) -> u64 {
        self.cursor.as_deref().map_or(0, |c| {
            JsonlCursor::parse(c)
                .expect("cursors handed back parse")
                .offset
        })
    }
}

fn line(
    kind: &Kind,
    summary: &str,
    target: Option<u8>,
    data: &Option<(String, i64)>,
    crlf: bool,
) -> Vec<u8> {
    let kind = match kind {
        Kind::BuildDone => "build.done",
        Kind::Note => "note",
        Kind::Deleted => "deleted",
        Kind::Closed => "closed",
        Kind::Other(s) => s,
    };
    let mut event = serde_json::json!({"type": kind, "at": "2026-12-01T08:00:00Z", "by": "ci", "summary": summary});
    if let Some(t) = target {
        event["target"] = t.into();
    }
    if let Some((key, value)) = data {
        event["data"] = serde_json::json!({ key.as_str(): value });
    }
    let mut text = event.to_string().into_bytes();
    text.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
    text
}

fn path() -> PathBuf {
    waitfor_fuzz::scratch_dir().join("events.jsonl")
}

libfuzzer_sys::fuzz_target!(|input: Input| {
    let path = path();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .expect("the scratch file can be made");
    let mut len = 0usize;
    // Reads stop at a few bytes and at one to eight events.
    let source = JsonlSource::new(&path)
        .with_max_read_bytes(u64::from(input.max_read) + 1)
        .with_max_events(usize::from(input.max_read >> 5) + 1);
    let mut follower = Follower::new(&source);
    for op in &input.ops {
        match op {
            Op::Event {
                kind,
                summary,
                target,
                data,
                crlf,
            } => {
                len += append(&path, &line(kind, summary, *target, data, *crlf));
            }
            Op::Raw(bytes) => len += append(&path, bytes),
            Op::Read => {
                follower.read().expect("the follower's own cursor fits");
            }
            Op::Truncate(to) => {
                let at = follower.offset();
                // Before the cursor when there is one, else anywhere.
                let to = u64::from(*to) % if at > 0 { at } else { len as u64 + 1 };
                file.set_len(to).expect("the scratch file can be cut");
                len = to as usize;
                if at > 0 {
                    refused(&mut follower);
                    follower = Follower::new(&source);
                }
            }
            Op::Rewrite => {
                let at = follower.offset();
                if at > 0 {
                    let mut byte = [0u8];
                    file.read_exact_at(&mut byte, at - 1)
                        .expect("the byte is there");
                    file.write_all_at(&[byte[0] ^ 0x20], at - 1)
                        .expect("the byte can be changed");
                    refused(&mut follower);
                    follower = Follower::new(&source);
                }
            }
            Op::Relined(line) => {
                if let Some(mut cursor) = follower
                    .cursor
                    .as_deref()
                    .and_then(|c| JsonlCursor::parse(c).ok())
                {
                    cursor.line = *line;
                    let _ = source.read(Some(&cursor.to_string()));
                }
            }
            Op::Forged(text) => match source.read(Some(text)) {
                // "end" is the one word taken in a cursor's place.
                Ok(_) if text == CURSOR_END => {}
                Ok(_) | Err(JsonlError::Replaced { .. }) => {
                    JsonlCursor::parse(text).expect("only a cursor is read after");
                }
                Err(JsonlError::BadCursor { .. }) => assert!(JsonlCursor::parse(text).is_err()),
                Err(err @ JsonlError::Io { .. }) => panic!("{err}"),
            },
        }
    }
    follower.drain(len);
    let mut whole = Follower::new(&source);
    whole.drain(len);
    assert_eq!(follower.events, whole.events);
    assert_eq!(follower.malformed, whole.malformed);
    assert_eq!(follower.cursor, whole.cursor);
});

fn append(path: &PathBuf, bytes: &[u8]) -> usize {
    let mut file = OpenOptions::new()
        .append(true)
        .open(path)
        .expect("the scratch file is there");
    file.write_all(bytes).expect("the scratch file takes bytes");
    bytes.len()
}

/// The follower's cursor no longer fits the file: reading after it fails.
fn refused(follower: &mut Follower) {
    match follower.read() {
        Err(JsonlError::Replaced { .. }) => {}
        other => panic!("a cursor past a changed file gave {other:?}"),
    }
}
