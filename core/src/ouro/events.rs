//! The JSON Lines event wait that `waitfor events FILE` and the `ouro/wait`
//! profile run: a query (file, filters, cursor, time limit) turned into
//! [`WaitForOptions`] over a [`JsonlSource`].

use std::path::PathBuf;
use std::time::Duration;

use super::clock::Clock;
use super::cursor::JsonlCursor;
use super::envelope::AxRef;
use super::jsonl::{JsonlError, JsonlSource};
use super::matcher::{EventMatchSpec, EventMatcher, MatchError};
use super::wait_for::{ReadError, Resume, WaitForError, WaitForOptions, DEFAULT_INTERVAL};
use crate::grants::Grants;
use crate::keyed::CursorKey;

/// The cursor word that means "the file's current end": only events
/// appended after the wait starts count.
///
/// ```
/// assert_eq!(waitfor::ouro::CURSOR_END, "end");
/// ```
pub const CURSOR_END: &str = "end";

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
        self.options_on(resume, &Clock::default())
    }

    /// [`EventsQuery::options`] on `clock`: the wait's `since` and its
    /// reads' `fresh.asOf` are the clock's (the simulator's virtual clock
    /// makes them exact).
    pub(crate) fn options_on(
        &self,
        resume: Resume,
        clock: &Clock,
    ) -> Result<WaitForOptions, WaitForError> {
        let source = self.source().with_clock(clock.clone());
        if let Some(text) = self.cursor.as_deref().filter(|&c| c != CURSOR_END) {
            JsonlCursor::parse(text).map_err(|reason| {
                WaitForError::Read(Box::new(JsonlError::BadCursor {
                    cursor: text.to_string(),
                    reason,
                }))
            })?;
        }
        self.filter.check().map_err(|e| WaitForError::Options {
            field: "filter",
            message: e.to_string(),
        })?;
        // "end" is the end the file has now (one stat), found by the
        // first read; events appended after this call count.
        let mark = (self.cursor.as_deref() == Some(CURSOR_END)).then(|| source.mark_end());
        // The summary pattern compiles on the first read, on an engine
        // worker in the wait's time: it can take seconds, which must not
        // hold the caller's thread (an event loop) nor outlast the wait.
        // A pattern that does not compile fails the wait ([`match_error`]).
        let filter = self.filter.clone();
        let mut matching: Option<JsonlSource> = None;
        let read = move |c: Option<&str>, cancel: &crate::CancelToken| -> Result<_, ReadError> {
            let source = match &mut matching {
                Some(source) => source,
                // The source keeps only the events that match, so a read's
                // limit counts what the wait returns.
                None => matching.insert(
                    source
                        .clone()
                        .only_matching(EventMatcher::new(filter.clone())?),
                ),
            };
            Ok(match (c, &mark) {
                (Some(CURSOR_END), Some(mark)) => source.read_after_mark(mark, cancel),
                _ => source.read_until(c, cancel),
            }?)
        };
        let options = WaitForOptions::cancellable(self.what(), self.timeout, read, resume)
            .target(self.target.clone())
            .cursor(Some(self.cursor.clone().unwrap_or_else(|| {
                JsonlCursor::file_start(&self.key).to_string()
            })))
            .interval(self.interval.unwrap_or(DEFAULT_INTERVAL));
        Ok(match clock.fixed() {
            Some(at) => options.started_at(at),
            None => options,
        })
    }
}

/// The JSONL source's error behind `e`, if one is in its chain: a cursor
/// that does not fit ([`JsonlError::BadCursor`]) is the caller's mistake,
/// the others are the file's.
///
/// ```
/// use waitfor::ouro::{jsonl_error, CommandTemplate, EventsQuery, JsonlError, Resume};
/// let q = EventsQuery { cursor: Some("nope".into()), ..EventsQuery::new("x.jsonl") };
/// let resume = Resume::Template(CommandTemplate::parse("again {cursor}").unwrap());
/// let err = q.options(resume).err().unwrap();
/// assert!(matches!(jsonl_error(&err), Some(JsonlError::BadCursor { .. })));
/// ```
pub fn jsonl_error(e: &WaitForError) -> Option<&JsonlError> {
    cause(e)
}

/// The event filter's error behind `e`, if one is in its chain: the
/// summary pattern, checked when the wait was made, did not compile when
/// it began (its program is too big).
///
/// ```
/// use waitfor::ouro::{match_error, wait_for, CommandTemplate, EventsQuery, Resume};
/// let mut q = EventsQuery::new("x.jsonl");
/// q.filter.summary = Some(r"\w{150}".repeat(8));
/// q.filter.summary_regex = true;
/// q.timeout = Some(std::time::Duration::from_secs(5));
/// let resume = Resume::Template(CommandTemplate::parse("again {cursor}").unwrap());
/// let err = wait_for(q.options(resume).unwrap()).err().unwrap();
/// assert!(match_error(&err).unwrap().to_string().starts_with("summary:"));
/// ```
pub fn match_error(e: &WaitForError) -> Option<&MatchError> {
    cause(e)
}

/// The first error of type `T` in `e`'s chain of sources.
fn cause<T: std::error::Error + 'static>(e: &WaitForError) -> Option<&T> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(found) = c.downcast_ref::<T>() {
            return Some(found);
        }
        cause = c.source();
    }
    None
}
