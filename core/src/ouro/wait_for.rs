//! [`wait_for`]: the seed's `waitFor`, run on the engine.
//!
//! The wait reads its event source through the host's `read` function, as
//! an engine probe: the engine owns timing, the deadline, cancel and wake,
//! exactly as for every other wait. The probe keeps the cursor between
//! reads, applies the matcher, and answers the engine with a small JSON
//! observation (`{"matched": n, "cursor": c}` once something matched) and `gone` when
//! the source says the target can no longer change; the wait's condition is
//! "`/matched` exists". When the engine is done, the envelope is built from
//! its result and the probe's state.
//!
//! State by ending, in this order:
//!
//! | what happened | state | `resume` |
//! |---|---|---|
//! | a read returned matching events (even with `gone`) | `satisfied` | from the cursor after the read, unless gone |
//! | a read said the target is gone | `gone` | none |
//! | the time limit passed | `timed-out` | from the same cursor |
//! | the host cancelled | `timed-out`, reason `cancelled` | from the same cursor |
//! | no read finished before the time limit | `timed-out`, `fresh` null | from the same cursor |
//! | a read failed | [`WaitForError::Read`] (no envelope) | |
//!
//! A read that finishes after the wait ended is dropped whole (its events
//! and cursor are not kept), so the returned cursor is exactly where the
//! reported events end: resuming sees every later event once.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::sync::Mutex;
use serde_json::json;

use crate::cancel::CancelToken;
use crate::engine::{Engine, WaitControl, WaitHandle, WaitOptions};
use crate::policy::Policy;
use crate::probe::{Observation, Probe, ProbeContext, ProbeError};
use crate::result::{Outcome, WaitResult};
use crate::simulate::{simulate_probe, Control, Simulation};
use crate::spec::{Condition, JsonTest, Spec, MIN_INTERVAL};

use super::clock::rfc3339;
use super::envelope::{
    wait, AxEvent, AxRef, Fresh, NextStep, Wait, WaitError, WaitFields, WaitState,
};
use super::jsonl::{Malformed, WaitRead};
use super::matcher::EventMatcher;
use super::template::{CommandTemplate, TemplateError};

/// Why a read of the event source failed (any error type of the host's).
pub type ReadError = Box<dyn std::error::Error + Send + Sync>;

/// One read of the event source: the events after the cursor (`None`: from
/// the source's start), with the call's cancel token, cancelled once the
/// wait no longer wants the read (a long read checks it and gives up).
/// Called on an engine worker thread, one call at a time.
pub type ReadFn = Box<dyn FnMut(Option<&str>, &CancelToken) -> Result<WaitRead, ReadError> + Send>;

/// What the agent can do next, given the events a satisfied wait returns.
pub type NextFn = Box<dyn Fn(&[AxEvent]) -> Vec<NextStep> + Send + Sync>;

/// How a wait resumes from a cursor, as a step the agent can run.
pub type ResumeFn = Box<dyn Fn(Option<&str>) -> Result<NextStep, TemplateError> + Send + Sync>;

/// The poll interval when the options name none.
///
/// ```
/// assert_eq!(waitfor::ouro::DEFAULT_INTERVAL.as_millis(), 250);
/// ```
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(250);

/// The shortest time limit a wait takes: two of the engine's shortest
/// intervals, so at least one read fits before the limit.
///
/// ```
/// assert_eq!(waitfor::ouro::MIN_TIMEOUT.as_millis(), 20);
/// ```
pub const MIN_TIMEOUT: Duration = Duration::from_millis(20);

/// A time limit that is, in practice, none (ten years), for `timeout: None`.
const NO_LIMIT: Duration = Duration::from_secs(10 * 365 * 86_400);

/// Which events the wait is waiting for.
///
/// ```
/// use waitfor::ouro::{EventFilter, EventMatcher};
/// let by_ci = EventFilter::Matcher(EventMatcher::from_json(&serde_json::json!({"by": "ci"})).unwrap());
/// let any = EventFilter::Any;
/// let failed = EventFilter::predicate(|e| e.summary.contains("failed"));
/// # let _ = (by_ci, any, failed);
/// ```
pub enum EventFilter {
    /// Every event.
    Any,
    /// A declarative match ([`EventMatcher`]).
    Matcher(EventMatcher),
    /// A host predicate.
    Predicate(Box<dyn Fn(&AxEvent) -> bool + Send + Sync>),
}

impl EventFilter {
    /// A host predicate as a filter.
    pub fn predicate(f: impl Fn(&AxEvent) -> bool + Send + Sync + 'static) -> EventFilter {
        EventFilter::Predicate(Box::new(f))
    }

    /// Whether the event is one the wait is waiting for.
    ///
    /// ```
    /// let e: waitfor::ouro::AxEvent = serde_json::from_value(serde_json::json!({
    ///     "cursor": "c", "type": "x", "at": "t", "by": "b", "target": null, "summary": "s"})).unwrap();
    /// assert!(waitfor::ouro::EventFilter::Any.matches(&e));
    /// ```
    pub fn matches(&self, event: &AxEvent) -> bool {
        match self {
            EventFilter::Any => true,
            EventFilter::Matcher(m) => m.matches(event),
            EventFilter::Predicate(f) => f(event),
        }
    }
}

/// How to build the `resume` step: a host command template with
/// `{cursor}`, or a function of the cursor.
///
/// ```
/// use waitfor::ouro::{CommandTemplate, Resume};
/// let r = Resume::Template(CommandTemplate::parse("waitfor events log.jsonl --cursor {cursor}").unwrap());
/// assert_eq!(r.step(Some("j1.0.0.0.0.0")).unwrap().command,
///            "waitfor events log.jsonl --cursor j1.0.0.0.0.0");
/// ```
pub enum Resume {
    /// The template, rendered with the cursor.
    Template(CommandTemplate),
    /// A host function of the cursor.
    Step(ResumeFn),
}

impl Resume {
    /// The step that waits again from `cursor`.
    pub fn step(&self, cursor: Option<&str>) -> Result<NextStep, TemplateError> {
        match self {
            Resume::Template(t) => t.step(cursor, Some("wait again from the same cursor")),
            Resume::Step(f) => f(cursor),
        }
    }
}

/// What [`wait_for`] takes (the seed's `WaitForOptions`). Build it with
/// [`WaitForOptions::new`] and the builder methods.
pub struct WaitForOptions {
    /// What is awaited, in words (the envelope's `for`).
    pub for_: String,
    /// The reference the wait is about.
    pub target: Option<AxRef>,
    /// Where to start: only events after it count (`None`: the source's start).
    pub cursor: Option<String>,
    /// The time limit; `None` waits until a match, `gone` or cancel.
    pub timeout: Option<Duration>,
    /// Reads the source.
    pub read: ReadFn,
    /// Which events count.
    pub filter: EventFilter,
    /// How to resume.
    pub resume: Resume,
    /// Next steps after a satisfied wait.
    pub next: Option<NextFn>,
    /// Where the host reports the outcome later, if anywhere.
    pub callback: Option<String>,
    /// Time between reads (at least [`MIN_INTERVAL`]).
    pub interval: Duration,
    /// Wall-clock time of the start (`since`); `None`: now. Virtual-time
    /// tests set it so envelopes are exact.
    pub started_at: Option<SystemTime>,
}

impl WaitForOptions {
    /// Options with the required parts; every event matches, no cursor, the
    /// default interval.
    ///
    /// ```
    /// use std::time::Duration;
    /// use waitfor::ouro::{CommandTemplate, Resume, WaitForOptions, WaitRead};
    /// let resume = Resume::Template(CommandTemplate::parse("again --cursor {cursor}").unwrap());
    /// let options = WaitForOptions::new("build 7", Some(Duration::from_secs(90)),
    ///     |_cursor| Ok(WaitRead::default()), resume);
    /// assert_eq!(options.for_, "build 7");
    /// ```
    pub fn new(
        for_: impl Into<String>,
        timeout: Option<Duration>,
        mut read: impl FnMut(Option<&str>) -> Result<WaitRead, ReadError> + Send + 'static,
        resume: Resume,
    ) -> WaitForOptions {
        Self::cancellable(for_, timeout, move |cursor, _| read(cursor), resume)
    }

    /// [`WaitForOptions::new`] with a `read` that also gets the call's
    /// cancel token (see [`ReadFn`]), for reads that can take long.
    ///
    /// ```
    /// use waitfor::ouro::{CommandTemplate, Resume, WaitForOptions, WaitRead};
    /// let resume = Resume::Template(CommandTemplate::parse("again {cursor}").unwrap());
    /// let options = WaitForOptions::cancellable("x", None, |_cursor, cancel| {
    ///     assert!(!cancel.is_cancelled());
    ///     Ok(WaitRead::default())
    /// }, resume);
    /// # let _ = options;
    /// ```
    pub fn cancellable(
        for_: impl Into<String>,
        timeout: Option<Duration>,
        read: impl FnMut(Option<&str>, &CancelToken) -> Result<WaitRead, ReadError> + Send + 'static,
        resume: Resume,
    ) -> WaitForOptions {
        WaitForOptions {
            for_: for_.into(),
            target: None,
            cursor: None,
            timeout,
            read: Box::new(read),
            filter: EventFilter::Any,
            resume,
            next: None,
            callback: None,
            interval: DEFAULT_INTERVAL,
            started_at: None,
        }
    }

    /// Sets the target.
    pub fn target(mut self, target: Option<AxRef>) -> Self {
        self.target = target;
        self
    }

    /// Sets the starting cursor.
    pub fn cursor(mut self, cursor: Option<String>) -> Self {
        self.cursor = cursor;
        self
    }

    /// Sets which events count.
    pub fn filter(mut self, filter: EventFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Sets the next steps of a satisfied wait.
    pub fn next(
        mut self,
        next: impl Fn(&[AxEvent]) -> Vec<NextStep> + Send + Sync + 'static,
    ) -> Self {
        self.next = Some(Box::new(next));
        self
    }

    /// Sets the callback.
    pub fn callback(mut self, callback: Option<String>) -> Self {
        self.callback = callback;
        self
    }

    /// Sets the time between reads.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Sets the wall-clock start.
    pub fn started_at(mut self, at: SystemTime) -> Self {
        self.started_at = Some(at);
        self
    }
}

/// Why a wait gave no envelope.
#[derive(Debug, thiserror::Error)]
pub enum WaitForError {
    /// An option is out of range; names the option.
    #[error("{field}: {message}")]
    Options {
        /// The option, such as `timeout`.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A read of the source failed (for the JSONL source, a
    /// [`super::JsonlError`]: a bad cursor, a replaced file, an I/O error).
    /// Reach it with `source()` or downcast it.
    #[error("reading the events failed: {0}")]
    Read(#[source] ReadError),
    /// The resume template could not be rendered.
    #[error("resume: {0}")]
    Resume(#[from] TemplateError),
    /// The envelope broke a rule of `validate_wait`.
    #[error(transparent)]
    Envelope(#[from] WaitError),
    /// The engine ended the wait for another reason.
    #[error("the wait could not finish: {0}")]
    Engine(String),
}

/// A finished wait: the envelope, plus what does not fit in it.
#[derive(Debug, Clone)]
pub struct Waited {
    /// The `wait/1` envelope.
    pub wait: Wait,
    /// Lines the source could not read as events (reported once each).
    pub malformed: Vec<Malformed>,
    /// Reads of the source that finished.
    pub reads: u64,
    /// The engine's result (timing, samples, probe accounting).
    pub result: WaitResult,
}

/// One line of a followed wait ([`follow`]).
#[derive(Debug, Clone, PartialEq)]
pub enum FollowLine {
    /// The first line: a `waiting` envelope at the starting cursor.
    Waiting(Wait),
    /// A matching event, as it was read.
    Event(AxEvent),
}

/// What the probe and the envelope builder share.
#[derive(Default)]
struct Shared {
    cursor: Option<String>,
    matched: Vec<AxEvent>,
    gone: Option<String>,
    fresh: Option<Fresh>,
    malformed: Vec<Malformed>,
    error: Option<Arc<ReadError>>,
    reads: u64,
    /// The wait ended: a read that finishes now is dropped.
    closed: bool,
}

type EmitFn = Box<dyn FnMut(&AxEvent) + Send>;

struct EventProbe {
    read: ReadFn,
    filter: EventFilter,
    shared: Arc<Mutex<Shared>>,
    emit: Option<EmitFn>,
}

impl Probe for EventProbe {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        let cursor = self.shared.lock().cursor.clone();
        let read = (self.read)(cursor.as_deref(), &ctx.cancel);
        let mut s = self.shared.lock();
        // Abandoned (the deadline, a cancel): the read's result, or the
        // error it gave up with, is no longer wanted.
        if s.closed || ctx.cancel.is_cancelled() {
            return Err(ProbeError::new("the wait already ended"));
        }
        let read = match read {
            Ok(read) => read,
            Err(e) => {
                let message = e.to_string();
                s.error = Some(Arc::new(e));
                return Err(ProbeError::new(message));
            }
        };
        s.reads += 1;
        let mut found = 0usize;
        for event in read.events {
            if self.filter.matches(&event) {
                found += 1;
                match &mut self.emit {
                    Some(emit) => emit(&event),
                    None => s.matched.push(event),
                }
            }
        }
        if read.cursor.is_some() {
            s.cursor = read.cursor;
        }
        if read.fresh.is_some() {
            s.fresh = read.fresh;
        }
        s.malformed.extend(read.malformed);
        let gone = read.gone.is_some();
        s.gone = read.gone;
        // What the engine sees (and keeps as its last observation): how
        // many matched and where the cursor is; the events stay here.
        let key = if self.emit.is_none() && found > 0 {
            "matched"
        } else {
            "streamed"
        };
        let mut observation = Observation::json(json!({ key: found, "cursor": s.cursor }));
        observation.gone = gone;
        Ok(observation)
    }

    fn name(&self) -> &str {
        "ouro-events"
    }
}

/// Builds envelopes from the engine's result and the probe's state.
struct Finisher {
    shared: Arc<Mutex<Shared>>,
    for_: String,
    target: Option<AxRef>,
    callback: Option<String>,
    resume: Resume,
    next: Option<NextFn>,
    since: SystemTime,
    timeout: Option<Duration>,
}

impl Finisher {
    fn fields(&self, state: WaitState) -> WaitFields {
        WaitFields {
            target: self.target.clone(),
            callback: self.callback.clone(),
            ..WaitFields::new(self.for_.clone(), state, rfc3339(self.since))
        }
    }

    /// The `waiting` envelope at `cursor`, before anything was read.
    fn waiting(&self, cursor: Option<&str>) -> Result<Wait, WaitForError> {
        Ok(wait(WaitFields {
            until: self.timeout.map(|t| rfc3339(self.since + t)),
            cursor: cursor.map(str::to_string),
            resume: Some(self.resume.step(cursor)?),
            ..self.fields(WaitState::Waiting)
        })?)
    }

    fn finish(&self, result: &WaitResult) -> Result<Waited, WaitForError> {
        let (cursor, matched, gone, fresh, malformed, error, reads) = {
            let mut s = self.shared.lock();
            s.closed = true;
            (
                s.cursor.clone(),
                s.matched.clone(),
                s.gone.clone(),
                s.fresh.clone(),
                s.malformed.clone(),
                s.error.clone(),
                s.reads,
            )
        };
        let (state, reason) = if !matched.is_empty() {
            (WaitState::Satisfied, None)
        } else if let Some(why) = gone.clone() {
            (WaitState::Gone, Some(why))
        } else {
            match result.outcome {
                Outcome::Timeout => (
                    WaitState::TimedOut,
                    Some("no matching event before the time limit".to_string()),
                ),
                Outcome::Cancelled => (
                    WaitState::TimedOut,
                    Some("cancelled before a matching event".to_string()),
                ),
                Outcome::ProbeError => match error {
                    Some(e) => return Err(WaitForError::Read(Box::new(SharedError(e)))),
                    None => (
                        WaitState::TimedOut,
                        Some("the event source did not answer before the time limit".into()),
                    ),
                },
                _ => {
                    return Err(WaitForError::Engine(
                        result
                            .error
                            .clone()
                            .unwrap_or_else(|| result.outcome.as_str().to_string()),
                    ))
                }
            }
        };
        let resume = match gone {
            Some(_) => None,
            None => Some(self.resume.step(cursor.as_deref())?),
        };
        let next = match (&self.next, state) {
            (Some(next), WaitState::Satisfied) => next(&matched),
            _ => Vec::new(),
        };
        let ended = self.since + Duration::from_millis(result.elapsed_ms);
        let envelope = wait(WaitFields {
            until: Some(rfc3339(ended)),
            cursor,
            events: matched,
            fresh,
            resume,
            reason,
            next,
            ..self.fields(state)
        })?;
        Ok(Waited {
            wait: envelope,
            malformed,
            reads,
            result: result.clone(),
        })
    }
}

/// A read error kept in the probe's state, handed out once the wait ends.
#[derive(Debug)]
struct SharedError(Arc<ReadError>);

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&**self.0)
    }
}

/// The parts of a wait on the engine.
struct Built {
    spec: Spec,
    policy: Policy,
    probe: EventProbe,
    finisher: Finisher,
}

fn build(options: WaitForOptions, emit: Option<EmitFn>) -> Result<Built, WaitForError> {
    let limit = match options.timeout {
        Some(t) if t < MIN_TIMEOUT => {
            return Err(WaitForError::Options {
                field: "timeout",
                message: format!(
                    "must be at least {} ms (got {} ms)",
                    MIN_TIMEOUT.as_millis(),
                    t.as_millis()
                ),
            })
        }
        Some(t) => t,
        None => NO_LIMIT,
    };
    let interval = options.interval.max(MIN_INTERVAL).min(limit - MIN_INTERVAL);
    let until = Condition::Json {
        pointer: "/matched".into(),
        test: JsonTest::Exists(true),
    };
    let spec = Spec::new(until).interval(interval).max_wait(limit);
    let shared = Arc::new(Mutex::new(Shared {
        cursor: options.cursor,
        ..Shared::default()
    }));
    Ok(Built {
        spec,
        policy: Policy::default().max_wait_ceiling(limit),
        probe: EventProbe {
            read: options.read,
            filter: options.filter,
            shared: shared.clone(),
            emit,
        },
        finisher: Finisher {
            shared,
            for_: options.for_,
            target: options.target,
            callback: options.callback,
            resume: options.resume,
            next: options.next,
            since: options.started_at.unwrap_or_else(SystemTime::now),
            timeout: options.timeout,
        },
    })
}

/// A running event wait: cancel it, wake it, or wait for its envelope.
pub struct EventWait {
    handle: WaitHandle,
    finisher: Finisher,
}

impl EventWait {
    /// The engine's controls (cancel, wake), to hand to other threads.
    pub fn control(&self) -> WaitControl {
        self.handle.control()
    }

    /// Ends the wait now: it returns `timed-out` with reason `cancelled`
    /// and resumes from the cursor it reached.
    pub fn cancel(&self) {
        self.handle.control().cancel();
    }

    /// Blocks until the wait ends.
    pub fn wait(self) -> Result<Waited, WaitForError> {
        let result = self.handle.wait();
        self.finisher.finish(&result)
    }

    /// Blocks at most `timeout`; `None` while the wait is still running.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<Waited, WaitForError>> {
        let result = self.handle.wait_timeout(timeout)?;
        Some(self.finisher.finish(&result))
    }
}

/// Starts a wait on the global engine; returns at once.
///
/// ```
/// use std::time::Duration;
/// use waitfor::ouro::{start, CommandTemplate, Resume, WaitForOptions, WaitRead, WaitState};
/// let resume = Resume::Template(CommandTemplate::parse("again {cursor}").unwrap());
/// let read = |c: Option<&str>| Ok(WaitRead { cursor: c.map(String::from), ..WaitRead::default() });
/// let running = start(WaitForOptions::new("never", None, read, resume)
///     .cursor(Some("c0".into()))).unwrap();
/// running.cancel();
/// let done = running.wait().unwrap();
/// assert_eq!(done.wait.state, WaitState::TimedOut);
/// assert_eq!(done.wait.resume.unwrap().command, "again c0");
/// ```
pub fn start(options: WaitForOptions) -> Result<EventWait, WaitForError> {
    start_built(build(options, None)?)
}

fn start_built(built: Built) -> Result<EventWait, WaitForError> {
    let options = WaitOptions::default().policy(built.policy);
    let handle = Engine::global()
        .start_with(built.spec, Some(Box::new(built.probe)), options)
        .map_err(|e| WaitForError::Engine(e.to_string()))?;
    Ok(EventWait {
        handle,
        finisher: built.finisher,
    })
}

/// Waits until a matching event, the time limit or `gone` (the seed's
/// `waitFor`), on the global engine.
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use waitfor::ouro::{wait_for, CommandTemplate, Resume, WaitForOptions, WaitRead, WaitState};
/// let event: waitfor::ouro::AxEvent = serde_json::from_value(json!({"cursor": "c1", "type": "build.done",
///     "at": "t1", "by": "ci", "target": null, "summary": "build 7 passed"})).unwrap();
/// let read = move |_: Option<&str>| Ok(WaitRead {
///     events: vec![event.clone()], cursor: Some("c1".into()), ..WaitRead::default() });
/// let resume = Resume::Template(CommandTemplate::parse("again {cursor}").unwrap());
/// let done = wait_for(WaitForOptions::new("build 7", Some(Duration::from_secs(5)), read, resume)).unwrap();
/// assert_eq!(done.wait.state, WaitState::Satisfied);
/// assert_eq!(done.wait.cursor.as_deref(), Some("c1"));
/// ```
pub fn wait_for(options: WaitForOptions) -> Result<Waited, WaitForError> {
    start(options)?.wait()
}

/// Streams a wait: `on_line` gets a `waiting` envelope at the starting
/// cursor first, then every matching event as it is read (on an engine
/// worker thread), until the time limit, `gone` or cancel. Returns the
/// final envelope (`timed-out` or `gone`; its `events` are empty, since
/// they were streamed, and its cursor is after the last one).
///
/// ```
/// use std::time::Duration;
/// use waitfor::ouro::{follow, CommandTemplate, FollowLine, Resume, WaitForOptions, WaitRead};
/// let resume = Resume::Template(CommandTemplate::parse("again {cursor}").unwrap());
/// let read = |_: Option<&str>| Ok(WaitRead { cursor: Some("c0".into()),
///     gone: Some("closed".into()), ..WaitRead::default() });
/// let mut lines = Vec::new();
/// let (tx, rx) = std::sync::mpsc::channel();
/// let done = follow(WaitForOptions::new("x", Some(Duration::from_secs(5)), read, resume)
///     .cursor(Some("c0".into())), move |line| { let _ = tx.send(line.clone()); }).unwrap();
/// lines.extend(rx.try_iter());
/// assert!(matches!(lines[0], FollowLine::Waiting(_)));
/// assert_eq!(done.wait.state, waitfor::ouro::WaitState::Gone);
/// ```
pub fn follow(
    options: WaitForOptions,
    on_line: impl FnMut(&FollowLine) + Send + 'static,
) -> Result<Waited, WaitForError> {
    start_follow(options, on_line)?.wait()
}

/// Starts a streamed wait ([`follow`]) and returns at once; the `waiting`
/// line is given to `on_line` before this returns.
pub fn start_follow(
    options: WaitForOptions,
    on_line: impl FnMut(&FollowLine) + Send + 'static,
) -> Result<EventWait, WaitForError> {
    let (built, _) = build_follow(options, on_line)?;
    start_built(built)
}

fn build_follow(
    options: WaitForOptions,
    mut on_line: impl FnMut(&FollowLine) + Send + 'static,
) -> Result<(Built, Wait), WaitForError> {
    let cursor = options.cursor.clone();
    let mut built = build(options, None)?;
    let waiting = built.finisher.waiting(cursor.as_deref())?;
    on_line(&FollowLine::Waiting(waiting.clone()));
    built.probe.emit = Some(Box::new(move |e: &AxEvent| {
        on_line(&FollowLine::Event(e.clone()))
    }));
    Ok((built, waiting))
}

/// Runs a wait on virtual time ([`crate::simulate::simulate_probe`]): reads answer at
/// once, at the virtual times the engine's schedule gives, and `controls`
/// (cancel, wake) act at theirs. The envelope is exact: set
/// [`WaitForOptions::started_at`] for fixed timestamps.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use waitfor::ouro::{simulate_wait_for, CommandTemplate, Resume, WaitForOptions, WaitRead};
/// let resume = Resume::Template(CommandTemplate::parse("again {cursor}").unwrap());
/// let read = |c: Option<&str>| Ok(WaitRead { cursor: c.map(String::from), ..WaitRead::default() });
/// let options = WaitForOptions::new("x", Some(Duration::from_secs(1)), read, resume)
///     .cursor(Some("c0".into())).interval(Duration::from_millis(300)).started_at(UNIX_EPOCH);
/// let (done, sim) = simulate_wait_for(options, &[]).unwrap();
/// assert_eq!(sim.call_starts_ms, vec![0, 300, 600, 900]);
/// assert_eq!(done.wait.until.as_deref(), Some("1970-01-01T00:00:01.000Z"));
/// ```
pub fn simulate_wait_for(
    options: WaitForOptions,
    controls: &[(Duration, Control)],
) -> Result<(Waited, Simulation), WaitForError> {
    let mut built = build(options, None)?;
    let sim = simulate_probe(&built.spec, &built.policy, &mut built.probe, controls)
        .map_err(|e| WaitForError::Engine(e.to_string()))?;
    let waited = built.finisher.finish(&sim.result)?;
    Ok((waited, sim))
}

/// Like [`follow`], on virtual time: returns the streamed lines in order
/// and the final envelope.
pub fn simulate_follow(
    options: WaitForOptions,
    controls: &[(Duration, Control)],
) -> Result<(Vec<FollowLine>, Waited), WaitForError> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let (mut built, _) = build_follow(options, move |l| sink.lock().push(l.clone()))?;
    let sim = simulate_probe(&built.spec, &built.policy, &mut built.probe, controls)
        .map_err(|e| WaitForError::Engine(e.to_string()))?;
    let waited = built.finisher.finish(&sim.result)?;
    let lines = std::mem::take(&mut *lines.lock());
    Ok((lines, waited))
}

/// Builds a finished wait's envelope from the engine's result.
pub(crate) type Finish = Box<dyn Fn(&WaitResult) -> Result<Waited, WaitForError> + Send + Sync>;

/// The parts of a wait for a profile: spec, probe, policy and a finisher.
pub(crate) fn prepare_parts(
    options: WaitForOptions,
) -> Result<(Spec, Box<dyn Probe>, Policy, Finish), WaitForError> {
    let built = build(options, None)?;
    let finisher = built.finisher;
    Ok((
        built.spec,
        Box::new(built.probe),
        built.policy,
        Box::new(move |r: &WaitResult| finisher.finish(r)),
    ))
}
