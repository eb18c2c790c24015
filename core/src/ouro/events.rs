//! The JSON Lines event wait that `waitfor events FILE` and the `ouro/wait`
//! profile run: a query (file, filters, cursor, time limit) turned into
//! [`WaitForOptions`] over a [`JsonlSource`], and the command itself.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use super::cursor::JsonlCursor;
use super::envelope::{AxRef, Wait};
use super::exit::{default_exit_table, wait_exit};
use super::jsonl::{JsonlError, JsonlSource, Malformed};
use super::matcher::{EventMatchSpec, EventMatcher};
use super::template::{shell_quote, CommandTemplate};
use super::text::wait_text;
use super::wait_for::{
    start, start_follow, EventFilter, FollowLine, Resume, WaitForError, WaitForOptions,
    DEFAULT_INTERVAL,
};
use crate::duration::format_duration;
use crate::grants::Grants;
use crate::keyed::CursorKey;

/// The cursor word that means "the file's current end": only events
/// appended after the wait starts count.
///
/// ```
/// assert_eq!(waitfor::ouro::CURSOR_END, "end");
/// ```
pub const CURSOR_END: &str = "end";

/// Exit code of `waitfor events` when its input is wrong (a bad flag, a bad
/// cursor, a bad pattern).
pub const EXIT_USAGE: i32 = 2;

/// Exit code of `waitfor events` when the file cannot be read from the
/// cursor (it was replaced, truncated or rewritten, or an I/O error): the
/// `waitfor` command's "probe error".
pub const EXIT_SOURCE: i32 = 5;

/// Exit code of `waitfor events` when the host interrupted it (Ctrl-C), as
/// a shell reports SIGINT; the envelope is still printed, with its resume.
pub const EXIT_CANCELLED: i32 = 130;

/// How often [`run_events`] prints streamed lines and asks `interrupted`.
const TICK: Duration = Duration::from_millis(50);

/// A wait on a JSON Lines event file.
///
/// ```
/// use waitfor::ouro::EventsQuery;
/// let q = EventsQuery::new("log.jsonl");
/// assert_eq!(q.what(), "an event in log.jsonl");
/// ```
#[derive(Clone, Debug)]
pub struct EventsQuery {
    /// The file.
    pub path: PathBuf,
    /// What is awaited, in words; default from [`EventsQuery::what`].
    pub for_: Option<String>,
    /// The reference the wait is about.
    pub target: Option<AxRef>,
    /// Which events count.
    pub filter: EventMatchSpec,
    /// Where to start: a cursor from an earlier wait, [`CURSOR_END`], or
    /// `None` for the file's start (events already there count).
    pub cursor: Option<String>,
    /// The time limit; `None`: none.
    pub timeout: Option<Duration>,
    /// Time between reads; `None`: [`DEFAULT_INTERVAL`].
    pub interval: Option<Duration>,
    /// Event types that end the wait as `gone`; `None`: the defaults.
    pub terminal_types: Option<Vec<String>>,
    /// Which files the wait may read ([`JsonlSource::within`]); every
    /// regular file the process can read unless narrowed.
    pub grants: Grants,
    /// What keys the cursors ([`JsonlSource::with_key`]); the process's
    /// own secret by default, so a cursor fits only in this process.
    pub key: CursorKey,
}

impl EventsQuery {
    /// A query on `path` that waits for any event, from the file's start,
    /// without a time limit, reading any regular file the process can.
    pub fn new(path: impl Into<PathBuf>) -> EventsQuery {
        EventsQuery {
            path: path.into(),
            for_: None,
            target: None,
            filter: EventMatchSpec::default(),
            cursor: None,
            timeout: None,
            interval: None,
            terminal_types: None,
            grants: Grants::all(),
            key: CursorKey::process(),
        }
    }

    /// The envelope's `for`: the query's own words, else `a {type} event
    /// in {path}` (`an event in {path}` without a type filter).
    ///
    /// ```
    /// let mut q = waitfor::ouro::EventsQuery::new("log.jsonl");
    /// q.filter.kind = Some("build.done".into());
    /// assert_eq!(q.what(), "a build.done event in log.jsonl");
    /// ```
    pub fn what(&self) -> String {
        let path = self.path.display();
        match (&self.for_, &self.filter.kind) {
            (Some(what), _) => what.clone(),
            (None, Some(kind)) => format!("a {kind} event in {path}"),
            (None, None) => format!("an event in {path}"),
        }
    }

    fn source(&self) -> JsonlSource {
        let source = JsonlSource::new(&self.path)
            .within(self.grants.clone())
            .with_key(self.key.clone());
        match &self.terminal_types {
            Some(types) => source.with_terminal_types(types.clone()),
            None => source,
        }
    }

    /// The wait's options, resuming through `resume`. The file is not
    /// opened here: the cursor is only checked for its form, and
    /// [`CURSOR_END`] is resolved by the wait's first read, on an engine
    /// worker within the wait's time limit, as the end the file had when
    /// this was called (one `stat` here).
    ///
    /// ```
    /// use waitfor::ouro::{EventsQuery, Resume, CommandTemplate};
    /// let q = EventsQuery { cursor: Some("nope".into()), ..EventsQuery::new("x.jsonl") };
    /// let resume = Resume::Template(CommandTemplate::parse("again {cursor}").unwrap());
    /// assert!(q.options(resume).is_err());
    /// ```
    pub fn options(&self, resume: Resume) -> Result<WaitForOptions, WaitForError> {
        let source = self.source();
        if let Some(text) = self.cursor.as_deref().filter(|&c| c != CURSOR_END) {
            JsonlCursor::parse(text).map_err(|reason| {
                WaitForError::Read(Box::new(JsonlError::BadCursor {
                    cursor: text.to_string(),
                    reason,
                }))
            })?;
        }
        let matcher =
            EventMatcher::new(self.filter.clone()).map_err(|e| WaitForError::Options {
                field: "filter",
                message: e.to_string(),
            })?;
        // "end" is the end the file has now (one stat), found by the
        // first read; events appended after this call count.
        let mark = (self.cursor.as_deref() == Some(CURSOR_END)).then(|| source.mark_end());
        let read = move |c: Option<&str>, cancel: &crate::CancelToken| {
            match (c, &mark) {
                (Some(CURSOR_END), Some(mark)) => source.read_after_mark(mark, cancel),
                _ => source.read_until(c, cancel),
            }
            .map_err(Into::into)
        };
        Ok(
            WaitForOptions::cancellable(self.what(), self.timeout, read, resume)
                .target(self.target.clone())
                .cursor(Some(self.cursor.clone().unwrap_or_else(|| {
                    JsonlCursor::file_start(&self.key).to_string()
                })))
                .filter(EventFilter::Matcher(matcher))
                .interval(self.interval.unwrap_or(DEFAULT_INTERVAL)),
        )
    }

    /// The command line that runs this query again from `{cursor}`:
    /// `{program} events FILE [--for F] [--target JSON] [--type T] [--by B]
    /// [--summary S [--regex] [--ignore-case]] [--timeout D] [--follow]
    /// --cursor {cursor}`, every value shell-quoted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use waitfor::ouro::EventsQuery;
    /// let mut q = EventsQuery::new("my log.jsonl");
    /// q.filter.kind = Some("build.done".into());
    /// q.timeout = Some(Duration::from_secs(90));
    /// let t = q.command_template("waitfor", false);
    /// assert_eq!(t.render(Some("j1.5.1.0.0.0")).unwrap(),
    ///     "waitfor events 'my log.jsonl' --type build.done --timeout 90s --cursor j1.5.1.0.0.0");
    /// ```
    pub fn command_template(&self, program: &str, follow: bool) -> CommandTemplate {
        let mut words = vec![
            shell_quote(program),
            "events".to_string(),
            shell_quote(&self.path.to_string_lossy()),
        ];
        let mut flag = |name: &str, value: &str| {
            words.push(name.to_string());
            words.push(shell_quote(value));
        };
        if let Some(f) = &self.for_ {
            flag("--for", f);
        }
        if let Some(t) = &self.target {
            flag("--target", &t.to_string());
        }
        let spec = &self.filter;
        if let Some(k) = &spec.kind {
            flag("--type", k);
        }
        if let Some(b) = &spec.by {
            flag("--by", b);
        }
        if let Some(s) = &spec.summary {
            flag("--summary", s);
        }
        if let Some(t) = self.timeout {
            flag("--timeout", &format_duration(t.as_millis() as u64));
        }
        if spec.summary_regex {
            words.push("--regex".into());
        }
        if spec.ignore_case {
            words.push("--ignore-case".into());
        }
        if follow {
            words.push("--follow".into());
        }
        words.push("--cursor".into());
        let escaped = words.join(" ").replace('{', "{{").replace('}', "}}");
        CommandTemplate::parse(&format!("{escaped} {{cursor}}"))
            .expect("escaped words and one {cursor} always parse")
    }
}

/// How `waitfor events` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventsOutput {
    /// The envelope as one JSON line instead of text.
    pub json: bool,
    /// Stream: a `waiting` line, each matching event, then the final
    /// envelope, all as JSON lines.
    pub follow: bool,
}

/// Runs `waitfor events`: waits, prints to `out` (text from
/// [`wait_text`], or JSON lines), reports malformed lines and errors on
/// `err`, and returns the exit code: [`wait_exit`] with the default table
/// (0 for `satisfied`/`waiting`, 1 for `timed-out`/`gone`), [`EXIT_USAGE`]
/// for bad input, [`EXIT_SOURCE`] when the file cannot be read from the
/// cursor, [`EXIT_CANCELLED`] once `interrupted` said so (it is asked every
/// 50 ms; the wait is cancelled and its envelope still printed). `program`
/// is how the resume command names the binary.
///
/// ```
/// use waitfor::ouro::{run_events, EventsOutput, EventsQuery};
/// let q = EventsQuery::new("/nonexistent/waitfor-doc.jsonl");
/// let (mut out, mut err) = (Vec::new(), Vec::new());
/// let code = run_events(&q, EventsOutput::default(), "waitfor", &mut out, &mut err, &|| false);
/// assert_eq!(code, 1); // gone: the file does not exist
/// assert!(String::from_utf8(out).unwrap().starts_with("gone: "));
/// ```
pub fn run_events(
    query: &EventsQuery,
    output: EventsOutput,
    program: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
    interrupted: &dyn Fn() -> bool,
) -> i32 {
    let resume = Resume::Template(query.command_template(program, output.follow));
    let started = query.options(resume).and_then(|options| {
        if output.follow {
            // Lines come from an engine worker; a channel brings them here.
            let (tx, rx) = std::sync::mpsc::channel::<String>();
            let running = start_follow(options, move |line| {
                let text = match line {
                    FollowLine::Waiting(w) => serde_json::to_string(w),
                    FollowLine::Event(e) => serde_json::to_string(e),
                };
                let _ = tx.send(text.unwrap_or_default());
            })?;
            Ok((running, Some(rx)))
        } else {
            Ok((start(options)?, None))
        }
    });
    let (running, lines) = match started {
        Ok(started) => started,
        Err(e) => return report_error(&e, err),
    };
    let print_lines = |out: &mut dyn Write| {
        for line in lines.iter().flat_map(|rx| rx.try_iter()) {
            let _ = writeln!(out, "{line}").and_then(|_| out.flush());
        }
    };
    let mut cancelled = false;
    let done = loop {
        print_lines(out);
        if !cancelled && interrupted() {
            running.cancel();
            cancelled = true;
        }
        if let Some(done) = running.wait_timeout(TICK) {
            print_lines(out);
            break done;
        }
    };
    let done = match done {
        Ok(done) => done,
        Err(e) => return report_error(&e, err),
    };
    for m in &done.malformed {
        let _ = writeln!(err, "{}", malformed_line(query, m));
    }
    let printed = if output.json || output.follow {
        serde_json::to_string(&done.wait).map_err(std::io::Error::other)
    } else {
        Ok(wait_text(&done.wait))
    };
    let _ = printed.and_then(|text| writeln!(out, "{text}").and_then(|_| out.flush()));
    if cancelled {
        EXIT_CANCELLED
    } else {
        exit_code(&done.wait)
    }
}

fn exit_code(w: &Wait) -> i32 {
    wait_exit(w, &default_exit_table(), None)
}

fn malformed_line(query: &EventsQuery, m: &Malformed) -> String {
    format!(
        "waitfor events: {}: line {} (byte {}) skipped: {}",
        query.path.display(),
        m.line,
        m.offset,
        m.reason
    )
}

fn report_error(e: &WaitForError, err: &mut dyn Write) -> i32 {
    let _ = writeln!(err, "waitfor events: {e}");
    match e {
        WaitForError::Read(_) => match jsonl_error(e) {
            Some(JsonlError::BadCursor { .. }) => EXIT_USAGE,
            _ => EXIT_SOURCE,
        },
        WaitForError::Options { .. } | WaitForError::Resume(_) => EXIT_USAGE,
        WaitForError::Envelope(_) | WaitForError::Engine(_) => EXIT_SOURCE,
    }
}

/// The JSONL source's error behind `e`, if one is in its chain.
pub(crate) fn jsonl_error(e: &WaitForError) -> Option<&JsonlError> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(j) = c.downcast_ref::<JsonlError>() {
            return Some(j);
        }
        cause = c.source();
    }
    None
}
