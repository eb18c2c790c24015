//! The built-in event source: an append-only JSON Lines file, one event per
//! line, read after a [`JsonlCursor`].
//!
//! A line is an object with string fields `type`, `at`, `by` and `summary`,
//! an optional `target` (any JSON, `null` when absent) and an optional
//! `data` object. Other fields are ignored, and so is a `cursor` field: each
//! event's cursor is the position right after its line. Blank lines are
//! skipped silently.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::clock::{rfc3339, Clock};
use super::cursor::JsonlCursor;
use super::envelope::{AxEvent, Fresh};
use super::events::CURSOR_END;
use super::matcher::EventMatcher;
use crate::cancel::CancelToken;
use crate::grants::Grants;
use crate::keyed::{read_before, window, CursorKey, WINDOW};

/// Event types that end a wait with `gone` by default: what was awaited was
/// deleted, left, closed, or says outright that it is gone.
///
/// ```
/// assert!(waitfor::ouro::DEFAULT_TERMINAL_TYPES.contains(&"closed"));
/// ```
pub const DEFAULT_TERMINAL_TYPES: [&str; 4] = ["deleted", "left", "closed", "gone"];

/// The most bytes one read takes by default (512 KiB), and so the longest
/// line it reads as an event; the rest waits for the next read.
///
/// What a read returns has to fit one tool answer. An MCP answer carries a
/// wait's events twice (as text and as structured content), and JSON can
/// make a character several times its size (an emoji's 4 bytes become two
/// 6-byte escapes, escaped again inside the text): at most about 4.5 times
/// the log's bytes in all, so 512 KiB of events is at most about 2.3 MiB
/// of answer, under the 4 MiB the example servers send and the official
/// clients' limits. A read of 8 MiB made answers of 17 MB, which a client
/// closes the whole session over.
///
/// ```
/// assert_eq!(waitfor::ouro::DEFAULT_MAX_READ_BYTES, 512 << 10);
/// ```
pub const DEFAULT_MAX_READ_BYTES: u64 = 512 << 10;

/// The most malformed lines a read reports, and a wait keeps, the first
/// ones: the rest are consumed unreported. A record costs far more than
/// its line ("x\n" is two bytes), and whoever can append to a log can
/// write millions of them.
///
/// ```
/// assert_eq!(waitfor::ouro::MAX_MALFORMED, 100);
/// ```
pub const MAX_MALFORMED: usize = 100;

/// The most events one read returns by default: the read stops after the
/// last of them, and its cursor with it; the next read goes on from there.
/// What a read returns costs many times its lines (8 MiB of short events
/// made a 14 MiB answer and took 240 MiB to build), and an agent's answer
/// should fit its context.
///
/// ```
/// assert_eq!(waitfor::ouro::DEFAULT_MAX_EVENTS, 1000);
/// ```
pub const DEFAULT_MAX_EVENTS: usize = 1000;

/// What one read of the source returns: the events after the cursor, the new
/// cursor, freshness, whether the target is gone (and why), and the lines
/// that could not be read.
///
/// A host that reads its source elsewhere (another process, a JavaScript
/// function) hands a read over as JSON: absent fields are empty.
///
/// ```
/// let r = waitfor::ouro::WaitRead::default();
/// assert!(r.events.is_empty() && r.gone.is_none());
/// let r: waitfor::ouro::WaitRead = serde_json::from_str(r#"{"cursor": "c1", "gone": "closed"}"#).unwrap();
/// assert_eq!((r.cursor.as_deref(), r.gone.as_deref()), (Some("c1"), Some("closed")));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WaitRead {
    /// The events after the cursor, in file order: at most the source's
    /// limit ([`DEFAULT_MAX_EVENTS`]).
    pub events: Vec<AxEvent>,
    /// The cursor after everything consumed (events, blank and malformed
    /// lines); the given cursor when nothing was.
    pub cursor: Option<String>,
    /// How current the read is.
    pub fresh: Option<Fresh>,
    /// Why the target can no longer change, when it cannot.
    pub gone: Option<String>,
    /// Lines consumed but not read as events (at most [`MAX_MALFORMED`]).
    pub malformed: Vec<Malformed>,
    /// The read consumed lines and stopped at its most events or bytes,
    /// not at the end of the file: read again from its cursor for the
    /// rest. A wait does so at once when the cursor moved.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub more: bool,
}

/// A line that is not an event. It is consumed (the cursor moves past it),
/// so it is reported once.
///
/// ```
/// let m = waitfor::ouro::Malformed { line: 3, offset: 80, reason: "not JSON".into() };
/// assert_eq!(m.line, 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Malformed {
    /// 1-based line number in the file.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// What is wrong with it, naming the field when one is at fault.
    pub reason: String,
}

/// Why a read failed. A removed file is not an error (it is `gone`).
///
/// ```
/// let err = waitfor::ouro::jsonl::read("/nonexistent/x.jsonl", Some("nope")).unwrap_err();
/// assert!(matches!(err, waitfor::ouro::JsonlError::BadCursor { .. }));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum JsonlError {
    /// The cursor is not one this source wrote.
    #[error("cursor {}: {reason}", crate::error::echo(cursor))]
    BadCursor {
        /// The cursor as given.
        cursor: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The cursor does not fit the file at the path: the file was
    /// replaced, truncated or rewritten, or the cursor was made by another
    /// process (another [`crate::ouro::CursorKey`]) or altered. Reading it
    /// from the cursor would skip or repeat events, so it is not read.
    #[error("{path}: the file changed under the cursor: {reason}")]
    Replaced {
        /// The file's path.
        path: PathBuf,
        /// What changed.
        reason: String,
    },
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file's path.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl From<&JsonlError> for crate::error::ErrorInfo {
    /// The error as every binding gives it: code `bad_cursor`,
    /// `source_replaced` or `io`.
    ///
    /// ```
    /// use waitfor::{ouro::JsonlError, ErrorCode, ErrorInfo};
    /// let e = JsonlError::BadCursor { cursor: "x".into(), reason: "not ours".into() };
    /// assert_eq!(ErrorInfo::from(&e).code, ErrorCode::BadCursor);
    /// ```
    fn from(e: &JsonlError) -> Self {
        use crate::error::ErrorCode;
        let code = match e {
            JsonlError::BadCursor { .. } => ErrorCode::BadCursor,
            JsonlError::Replaced { .. } => ErrorCode::SourceReplaced,
            JsonlError::Io { .. } => ErrorCode::Io,
        };
        Self::new(code, e.to_string())
    }
}

/// An append-only JSON Lines event file and how to read it.
///
/// ```
/// use waitfor::ouro::JsonlSource;
/// let src = JsonlSource::new("events.jsonl").with_terminal_types(["finished"]);
/// assert!(src.is_terminal("finished") && !src.is_terminal("closed"));
/// ```
#[derive(Clone, Debug)]
pub struct JsonlSource {
    path: PathBuf,
    terminal_types: Vec<String>,
    max_read_bytes: u64,
    max_events: usize,
    /// Events that do not match are consumed but not returned.
    only: Option<EventMatcher>,
    grants: Grants,
    key: CursorKey,
    /// What `fresh.asOf` reads.
    clock: Clock,
}

/// Reads `path` after `cursor` with the default terminal types (see
/// [`JsonlSource::read`]).
///
/// ```
/// let dir = std::env::temp_dir().join(format!("waitfor-doc-read-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("log.jsonl");
/// std::fs::write(&path, concat!(
///     r#"{"type":"build.done","at":"t1","by":"ci","summary":"build 7 passed"}"#, "\n")).unwrap();
/// let first = waitfor::ouro::jsonl::read(&path, None).unwrap();
/// assert_eq!(first.events[0].summary, "build 7 passed");
/// let again = waitfor::ouro::jsonl::read(&path, first.cursor.as_deref()).unwrap();
/// assert!(again.events.is_empty());
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn read(path: impl AsRef<Path>, cursor: Option<&str>) -> Result<WaitRead, JsonlError> {
    JsonlSource::new(path.as_ref()).read(cursor)
}

impl JsonlSource {
    /// A source over the file at `path`, with [`DEFAULT_TERMINAL_TYPES`]
    /// and [`DEFAULT_MAX_READ_BYTES`]. It reads any regular file the
    /// process can; narrow it with [`JsonlSource::within`].
    ///
    /// ```
    /// assert!(waitfor::ouro::JsonlSource::new("x.jsonl").is_terminal("deleted"));
    /// ```
    pub fn new(path: impl Into<PathBuf>) -> JsonlSource {
        JsonlSource {
            path: path.into(),
            terminal_types: DEFAULT_TERMINAL_TYPES.map(String::from).to_vec(),
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            max_events: DEFAULT_MAX_EVENTS,
            only: None,
            grants: Grants::all(),
            key: CursorKey::process(),
            clock: Clock::default(),
        }
    }

    /// The same source reading `fresh.asOf` from `clock` (the simulator's
    /// virtual clock) instead of the system's.
    pub(crate) fn with_clock(mut self, clock: Clock) -> JsonlSource {
        self.clock = clock;
        self
    }

    /// The same source keying its cursors with `key` instead of the
    /// process's own ([`CursorKey::process`]); see [`JsonlCursor`].
    ///
    /// ```
    /// use waitfor::ouro::{CursorKey, JsonlSource};
    /// let src = JsonlSource::new("/nonexistent/x.jsonl").with_key(CursorKey::from_secret(b"host secret"));
    /// # let _ = src;
    /// ```
    pub fn with_key(mut self, key: CursorKey) -> JsonlSource {
        self.key = key;
        self
    }

    /// The same source reading only a regular file inside `grants`' file
    /// roots ([`Grants::open_file`]): a path outside them, a FIFO, a device
    /// or a directory is a [`JsonlError::Io`] saying why; a missing file
    /// inside them is still `gone`.
    ///
    /// ```
    /// use waitfor::grants::Grants;
    /// let src = waitfor::ouro::JsonlSource::new("/etc/shadow").within(Grants::none().file_root("/var/log"));
    /// let err = src.read(None).unwrap_err();
    /// assert!(err.to_string().contains("outside the directories"), "{err}");
    /// ```
    pub fn within(mut self, grants: Grants) -> JsonlSource {
        self.grants = grants;
        self
    }

    /// The same source with other terminal event types (an empty list: no
    /// event ends the wait as `gone`).
    ///
    /// ```
    /// let s = waitfor::ouro::JsonlSource::new("x").with_terminal_types(Vec::<String>::new());
    /// assert!(!s.is_terminal("deleted"));
    /// ```
    pub fn with_terminal_types<I, S>(mut self, types: I) -> JsonlSource
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.terminal_types = types.into_iter().map(Into::into).collect();
        self
    }

    /// The same source taking at most `bytes` (at least 1) per read. A line
    /// longer than that is reported as malformed and skipped once its end
    /// is written.
    ///
    /// ```
    /// let s = waitfor::ouro::JsonlSource::new("x").with_max_read_bytes(4096);
    /// # let _ = s;
    /// ```
    pub fn with_max_read_bytes(mut self, bytes: u64) -> JsonlSource {
        self.max_read_bytes = bytes.max(1);
        self
    }

    /// The same source returning at most `events` (at least 1) per read
    /// (see [`DEFAULT_MAX_EVENTS`]).
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("waitfor-doc-max-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("log.jsonl");
    /// let line = r#"{"type":"a","at":"t","by":"b","summary":"s"}"#;
    /// std::fs::write(&path, format!("{line}\n{line}\n{line}\n")).unwrap();
    /// let src = waitfor::ouro::JsonlSource::new(&path).with_max_events(2);
    /// let first = src.read(None).unwrap();
    /// assert_eq!(first.events.len(), 2);
    /// assert_eq!(src.read(first.cursor.as_deref()).unwrap().events.len(), 1);
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn with_max_events(mut self, events: usize) -> JsonlSource {
        self.max_events = events.max(1);
        self
    }

    /// The same source returning only the events `matcher` matches: the
    /// others are consumed (the cursor moves past them) and do not count
    /// towards [`JsonlSource::with_max_events`]. A terminal event still
    /// ends the read as `gone`.
    ///
    /// ```
    /// use waitfor::ouro::{EventMatcher, JsonlSource};
    /// let dir = std::env::temp_dir().join(format!("waitfor-doc-only-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("log.jsonl");
    /// std::fs::write(&path, concat!(
    ///     r#"{"type":"a","at":"t","by":"b","summary":"s"}"#, "\n",
    ///     r#"{"type":"b","at":"t","by":"b","summary":"s"}"#, "\n")).unwrap();
    /// let only_b = EventMatcher::from_json(&serde_json::json!({"type": "b"})).unwrap();
    /// let read = JsonlSource::new(&path).only_matching(only_b).read(None).unwrap();
    /// assert_eq!(read.events.len(), 1);
    /// assert_eq!(read.events[0].kind, "b");
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn only_matching(mut self, matcher: EventMatcher) -> JsonlSource {
        self.only = Some(matcher);
        self
    }

    /// Whether events of this type end the wait as `gone`.
    ///
    /// ```
    /// assert!(!waitfor::ouro::JsonlSource::new("x").is_terminal("build.done"));
    /// ```
    pub fn is_terminal(&self, kind: &str) -> bool {
        self.terminal_types.iter().any(|t| t == kind)
    }

    /// The cursor at the file's current end: a wait started from it sees
    /// only events appended afterwards.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("waitfor-doc-end-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("log.jsonl");
    /// std::fs::write(&path, "{\"type\":\"a\",\"at\":\"t\",\"by\":\"b\",\"summary\":\"old\"}\n").unwrap();
    /// let src = waitfor::ouro::JsonlSource::new(&path);
    /// let end = src.end_cursor().unwrap();
    /// assert!(src.read(Some(&end)).unwrap().events.is_empty());
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn end_cursor(&self) -> Result<String, JsonlError> {
        match self.open()? {
            Some(file) => self.end_of(file, None, &CancelToken::new()),
            None => Ok(JsonlCursor::file_start(&self.key).to_string()),
        }
    }

    /// Opens the file; `None` when it does not exist.
    fn open(&self) -> Result<Option<File>, JsonlError> {
        match self.grants.open_file(&self.path) {
            Ok(file) => Ok(Some(file)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io(e)),
        }
    }

    /// What the file is when a wait from [`CURSOR_END`] starts: one `stat`
    /// (never an open or a read, so it cannot block on a FIFO or take long
    /// on a large file). The wait's first read finds the end as it was
    /// then ([`JsonlSource::read_after_mark`]).
    pub(crate) fn mark_end(&self) -> EndMark {
        EndMark(identity_at_path(&self.path).ok())
    }

    /// [`JsonlSource::read_until`] from the end the file had at `mark`:
    /// what was appended since counts; a file that is new since counts
    /// whole.
    pub(crate) fn read_after_mark(
        &self,
        mark: &EndMark,
        cancel: &CancelToken,
    ) -> Result<WaitRead, JsonlError> {
        self.read_inner(Some(CURSOR_END), Some(mark), cancel)
    }

    /// The cursor after the last complete line of `file` within its first
    /// `mark`'s length bytes (all of it without a mark, as long as it was
    /// when this began; none of it if it is another file than at `mark`).
    /// Stops once `cancel` is cancelled.
    fn end_of(
        &self,
        mut file: File,
        mark: Option<&EndMark>,
        cancel: &CancelToken,
    ) -> Result<String, JsonlError> {
        let (dev, ino, len) = identity(&file).map_err(|e| self.io(e))?;
        let len = match mark {
            None => len,
            Some(EndMark(Some((d, i, then)))) if (*d, *i) == (dev, ino) => len.min(*then),
            Some(_) => 0,
        };
        let (mut lines, mut end, mut offset) = (0u64, 0u64, 0u64);
        let mut block = vec![0u8; BLOCK];
        while offset < len {
            check_cancel(cancel).map_err(|e| self.io(e))?;
            let want = block
                .len()
                .min(usize::try_from(len - offset).unwrap_or(BLOCK));
            let n = file.read(&mut block[..want]).map_err(|e| self.io(e))?;
            if n == 0 {
                break;
            }
            let got = &block[..n];
            lines += got.iter().filter(|&&b| b == b'\n').count() as u64;
            if let Some(i) = got.iter().rposition(|&b| b == b'\n') {
                end = offset + i as u64 + 1;
            }
            offset += n as u64;
        }
        let window = read_before(&file, end, WINDOW).map_err(|e| self.io(e))?;
        Ok(JsonlCursor::at(&self.key, end, lines, (dev, ino), &window).to_string())
    }

    /// Reads the events after `cursor` (`None`: from the start of the file;
    /// [`CURSOR_END`]: no events, the cursor at the file's current end).
    ///
    /// - Only complete lines count: a last line without its newline yet is
    ///   left for the next read.
    /// - An event of a terminal type ends the read: it is the last event
    ///   returned, and `gone` says why.
    /// - A missing file is `gone` too ("was removed" after a cursor past
    ///   its start, "does not exist" otherwise), with the cursor unchanged and
    ///   `fresh` state `"missing"`; otherwise `fresh` is `"current"` as of
    ///   the read.
    /// - A cursor into a file that was replaced (another device or inode),
    ///   truncated or rewritten (other bytes before the offset), or one
    ///   made by another process or altered, gives [`JsonlError::Replaced`].
    ///
    /// ```
    /// let src = waitfor::ouro::JsonlSource::new("/nonexistent/waitfor.jsonl");
    /// let r = src.read(None).unwrap();
    /// assert_eq!(r.gone.unwrap(), "/nonexistent/waitfor.jsonl does not exist");
    /// assert_eq!(r.fresh.unwrap().state, "missing");
    /// ```
    pub fn read(&self, cursor: Option<&str>) -> Result<WaitRead, JsonlError> {
        self.read_until(cursor, &CancelToken::new())
    }

    /// [`JsonlSource::read`], which gives up with an `Interrupted`
    /// [`JsonlError::Io`] once `cancel` is cancelled, so a read the wait no
    /// longer wants stops promptly.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("waitfor-doc-until-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("log.jsonl");
    /// std::fs::write(&path, "{\"type\":\"a\",\"at\":\"t\",\"by\":\"b\",\"summary\":\"old\"}\n").unwrap();
    /// let src = waitfor::ouro::JsonlSource::new(&path);
    /// let end = src.read_until(Some("end"), &waitfor::CancelToken::new()).unwrap();
    /// assert!(end.events.is_empty());
    /// assert!(src.read(end.cursor.as_deref()).unwrap().events.is_empty());
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn read_until(
        &self,
        cursor: Option<&str>,
        cancel: &CancelToken,
    ) -> Result<WaitRead, JsonlError> {
        self.read_inner(cursor, None, cancel)
    }

    fn read_inner(
        &self,
        cursor: Option<&str>,
        mark: Option<&EndMark>,
        cancel: &CancelToken,
    ) -> Result<WaitRead, JsonlError> {
        let start = match cursor {
            Some(CURSOR_END) | None => None,
            Some(text) => Some(JsonlCursor::parse(text).map_err(|reason| self.bad(text, reason))?),
        };
        let now = rfc3339(self.clock.now());
        let Some(mut file) = self.open()? else {
            return Ok(WaitRead {
                cursor: cursor.map(str::to_string),
                fresh: Some(Fresh {
                    state: "missing".into(),
                    as_of: Some(now),
                }),
                // A cursor past the start was made from the file, so it
                // existed then; one at the start fits any file, or none.
                gone: Some(match start {
                    Some(c) if c.offset > 0 => format!("{} was removed", self.path.display()),
                    _ => format!("{} does not exist", self.path.display()),
                }),
                ..WaitRead::default()
            });
        };
        if cursor == Some(CURSOR_END) {
            return Ok(WaitRead {
                cursor: Some(self.end_of(file, mark, cancel)?),
                fresh: Some(Fresh {
                    state: "current".into(),
                    as_of: Some(now),
                }),
                ..WaitRead::default()
            });
        }
        let (dev, ino, len) = identity(&file).map_err(|e| self.io(e))?;
        let from = start.map_or(0, |c| c.offset);
        let window_start = from.saturating_sub(WINDOW as u64);
        if let Some(c) = start.filter(|c| c.offset > len) {
            // Past the end, the cursor does not fit (truncated, or altered;
            // no byte before its offset is there): said so, before a seek
            // that fails past 2^63.
            self.check(&c, (dev, ino), &[], 1)?;
        }
        file.seek(SeekFrom::Start(window_start))
            .map_err(|e| self.io(e))?;
        let base = from - window_start;
        let most = base.saturating_add(self.max_read_bytes);
        // A first part, then the rest of the read only if the scan gets
        // through it short of its event limit: 1,000 short events are a
        // few hundred KiB, and a read need not take all it may to return
        // them.
        let first = base.saturating_add(self.max_read_bytes.min(FIRST_PART_BYTES));
        // Room for what the file holds up to `upto` at once: grown by
        // doubling, the buffers it outgrew would stay with the allocator.
        let read_more = |file: &mut File, bytes: &mut Vec<u8>, upto: u64| {
            let want = upto.saturating_sub(bytes.len() as u64);
            let left = len.saturating_sub(window_start.saturating_add(bytes.len() as u64));
            bytes.reserve_exact(usize::try_from(want.min(left)).unwrap_or(0));
            file.take(want).read_to_end(bytes).map_err(|e| self.io(e))
        };
        let mut bytes = Vec::new();
        read_more(&mut file, &mut bytes, first)?;
        let base = base as usize;
        if let Some(c) = start {
            self.check(&c, (dev, ino), &bytes, base)?;
        }
        let mut scan = Scan {
            source: self,
            bytes,
            file_offset: window_start,
            pos: base,
            line: start.map_or(0, |c| c.line),
            dev,
            ino,
            out: WaitRead::default(),
        };
        scan.lines(cancel).map_err(|e| self.io(e))?;
        if scan.wants_more() && scan.bytes.len() as u64 == first && first < most {
            read_more(&mut file, &mut scan.bytes, most)?;
            scan.lines(cancel).map_err(|e| self.io(e))?;
        }
        let full = scan.bytes.len() - base == self.max_read_bytes as usize;
        if scan.pos == base && full {
            scan.skip_long_line(&mut file, cancel)
                .map_err(|e| self.io(e))?;
        }
        let stopped_early = scan.out.gone.is_none() && scan.out.events.len() == self.max_events;
        // Only a read that consumed something has more after it: a long
        // line still without its newline stays where it is.
        let consumed = scan.out.cursor.is_some();
        scan.out.more = consumed && (stopped_early || full);
        let mut out = scan.out;
        // Nothing consumed: the cursor stays as given (or the file's start).
        if out.cursor.is_none() {
            out.cursor = Some(match cursor {
                Some(c) => c.to_string(),
                None => JsonlCursor::file_start(&self.key).to_string(),
            });
        }
        out.fresh = Some(Fresh {
            state: "current".into(),
            as_of: Some(now),
        });
        Ok(out)
    }

    /// Whether `c` fits the file: its identity, and the bytes just before
    /// the offset (`bytes[..base]`, short when the file is).
    fn check(
        &self,
        c: &JsonlCursor,
        identity: (u64, u64),
        bytes: &[u8],
        base: usize,
    ) -> Result<(), JsonlError> {
        let reason = if !c.fits_file(&self.key, identity) {
            "another file is at the path now, or the cursor was made by another process \
             (a cursor does not outlive the process that made it)"
        } else if bytes.len() < base || !c.fits_bytes(&self.key, identity, &bytes[..base]) {
            "the file is not as the cursor left it (truncated or rewritten), or the cursor was altered"
        } else {
            return Ok(());
        };
        Err(JsonlError::Replaced {
            path: self.path.clone(),
            reason: reason.into(),
        })
    }

    fn bad(&self, cursor: &str, reason: String) -> JsonlError {
        JsonlError::BadCursor {
            cursor: cursor.to_string(),
            reason,
        }
    }

    fn io(&self, source: io::Error) -> JsonlError {
        JsonlError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

/// One pass over the bytes after the cursor.
struct Scan<'a> {
    source: &'a JsonlSource,
    /// The window before the cursor, then the bytes read after it.
    bytes: Vec<u8>,
    /// Where `bytes[0]` is in the file.
    file_offset: u64,
    /// Index in `bytes` of the first byte not consumed.
    pos: usize,
    /// Lines consumed so far.
    line: u64,
    dev: u64,
    ino: u64,
    out: WaitRead,
}

impl Scan<'_> {
    /// Reports `line`, unless [`MAX_MALFORMED`] are reported already.
    fn malformed(&mut self, line: Malformed) {
        if self.out.malformed.len() < MAX_MALFORMED {
            self.out.malformed.push(line);
        }
    }

    /// Whether the scan would go on with more lines: no terminal event and
    /// fewer events than the read's limit so far.
    fn wants_more(&self) -> bool {
        self.out.gone.is_none() && self.out.events.len() < self.source.max_events
    }

    /// Consumes the complete lines after `pos` while [`Scan::wants_more`].
    /// Stops once `cancel` is cancelled: checking a line against an
    /// agent's filter can take long (many conditions), and a read its wait
    /// no longer wants goes on for one line at most.
    fn lines(&mut self, cancel: &CancelToken) -> io::Result<()> {
        while self.wants_more() {
            check_cancel(cancel)?;
            let Some(newline) = self.bytes[self.pos..].iter().position(|&b| b == b'\n') else {
                return Ok(()); // a partial last line waits for its newline
            };
            let start = self.pos;
            self.pos += newline + 1;
            self.line = self.line.saturating_add(1);
            let cursor = self.cursor();
            let text = &self.bytes[start..start + newline];
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match parse_event(text, cursor) {
                Ok(event) => {
                    if self.source.is_terminal(&event.kind) {
                        self.out.gone = Some(format!(
                            "{} event at line {}: {}",
                            event.kind, self.line, event.summary
                        ));
                    }
                    if self.source.only.as_ref().is_none_or(|m| m.matches(&event)) {
                        self.out.events.push(event);
                    }
                }
                Err(reason) => self.malformed(Malformed {
                    line: self.line,
                    offset: self.file_offset + start as u64,
                    reason,
                }),
            }
        }
        Ok(())
    }

    /// The first line is longer than one read may take: consume it once its
    /// newline is in the file, reporting it as malformed.
    fn skip_long_line(&mut self, file: &mut File, cancel: &CancelToken) -> io::Result<()> {
        let start = self.file_offset + self.pos as u64;
        let mut tail: Vec<u8> = window(&self.bytes).to_vec();
        let mut end = self.file_offset + self.bytes.len() as u64;
        let mut block = vec![0u8; BLOCK];
        loop {
            check_cancel(cancel)?;
            let n = file.read(&mut block)?;
            if n == 0 {
                return Ok(()); // no newline yet: not consumed
            }
            if let Some(i) = block[..n].iter().position(|&b| b == b'\n') {
                tail.extend_from_slice(&block[..=i]);
                end += i as u64 + 1;
                break;
            }
            tail.extend_from_slice(&block[..n]);
            tail.drain(..tail.len().saturating_sub(WINDOW));
            end += n as u64;
        }
        self.line = self.line.saturating_add(1);
        self.malformed(Malformed {
            line: self.line,
            offset: start,
            reason: format!("line is longer than {} bytes", self.source.max_read_bytes),
        });
        self.out.cursor = Some(
            JsonlCursor::at(
                &self.source.key,
                end,
                self.line,
                (self.dev, self.ino),
                &tail,
            )
            .to_string(),
        );
        Ok(())
    }

    fn cursor(&mut self) -> String {
        let c = JsonlCursor::at(
            &self.source.key,
            self.file_offset + self.pos as u64,
            self.line,
            (self.dev, self.ino),
            &self.bytes[..self.pos],
        )
        .to_string();
        self.out.cursor = Some(c.clone());
        c
    }
}

/// How much a scan reads at a time (and so how soon it sees a cancel).
const BLOCK: usize = 64 * 1024;

/// The first part of a read (see [`JsonlSource::read_until`]'s limits).
const FIRST_PART_BYTES: u64 = 256 * 1024;

fn check_cancel(cancel: &CancelToken) -> io::Result<()> {
    if cancel.is_cancelled() {
        Err(io::Error::new(
            io::ErrorKind::Interrupted,
            "the read was abandoned: the wait no longer wants it",
        ))
    } else {
        Ok(())
    }
}

fn parse_event(line: &[u8], cursor: String) -> Result<AxEvent, String> {
    let value: Value = serde_json::from_slice(line).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(mut obj) = value else {
        return Err("not a JSON object".into());
    };
    let mut text = |name: &str| match obj.remove(name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("{name}: must be a string")),
        None => Err(format!("{name}: is required")),
    };
    let kind = text("type")?;
    let at = text("at")?;
    let by = text("by")?;
    let summary = text("summary")?;
    let target = match obj.remove("target") {
        None | Some(Value::Null) => None,
        Some(t) => Some(t),
    };
    let data: Option<Map<String, Value>> = match obj.remove("data") {
        None | Some(Value::Null) => None,
        Some(Value::Object(d)) => Some(d),
        Some(_) => return Err("data: must be an object".into()),
    };
    Ok(AxEvent {
        cursor,
        kind,
        at,
        by,
        target,
        summary,
        data,
    })
}

/// The file's identity and length when a wait from the end began; `None`
/// when there was no file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EndMark(Option<(u64, u64, u64)>);

/// The file's identity (see [`crate::file_id`]) and length.
fn identity_at_path(path: &Path) -> io::Result<(u64, u64, u64)> {
    let (dev, ino) = crate::file_id::of_path(path)?;
    Ok((dev, ino, std::fs::metadata(path)?.len()))
}

fn identity(file: &File) -> io::Result<(u64, u64, u64)> {
    let (dev, ino) = crate::file_id::of_file(file)?;
    Ok((dev, ino, file.metadata()?.len()))
}
