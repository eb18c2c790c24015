//! [`wait_for`]: the seed's `waitFor`, run on the engine.
//!
//! The wait reads its event source through the host's `read` function, as
//! an engine probe on an engine worker: the engine owns timing, the
//! deadline, cancel and wake, exactly as for every other wait. A host that
//! keeps its own clock and reads on its own loop drives the same machine
//! step by step with a [`super::Stepper`]. The probe keeps the cursor between
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
use crate::probe::{Observation, Probe, ProbeContext, ProbeError, Waker};
use crate::result::{Outcome, WaitResult};
use crate::simulate::{simulate_probe, Control, Simulation};
use crate::spec::{Condition, JsonTest, Spec, MIN_INTERVAL};

use super::clock::rfc3339;
use super::envelope::{
    wait, AxEvent, AxRef, Fresh, NextStep, Wait, WaitError, WaitFields, WaitState,
};
use super::jsonl::{Malformed, WaitRead, MAX_MALFORMED};
use super::matcher::EventMatcher;
use super::stepper::Ended;
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
#[derive(Default)]
pub enum EventFilter {
    /// Every event.
    #[default]
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

/// What a wait is about and how long it runs: the options of [`wait_for`]
/// that are not the host's functions, which is all a [`Stepper`](super::Stepper) takes.
///
/// ```
/// use std::time::Duration;
/// let plan = waitfor::ouro::WaitPlan {
///     cursor: Some("c0".into()),
///     ..waitfor::ouro::WaitPlan::new("build 7", Some(Duration::from_secs(90)))
/// };
/// assert_eq!(plan.interval, waitfor::ouro::DEFAULT_INTERVAL);
/// ```
pub struct WaitPlan {
    /// What is awaited, in words (the envelope's `for`).
    pub for_: String,
    /// The reference the wait is about.
    pub target: Option<AxRef>,
    /// Where to start: only events after it count (`None`: the source's start).
    pub cursor: Option<String>,
    /// The time limit; `None` waits until a match, `gone` or cancel.
    pub timeout: Option<Duration>,
    /// Which events count.
    pub filter: EventFilter,
    /// Where the host reports the outcome later, if anywhere.
    pub callback: Option<String>,
    /// Time between reads (at least [`MIN_INTERVAL`]).
    pub interval: Duration,
    /// Wall-clock time of the start (`since`); `None`: now. Virtual-time
    /// tests set it so envelopes are exact.
    pub started_at: Option<SystemTime>,
}

impl WaitPlan {
    /// A plan with the required parts; every event matches, no cursor,
    /// the default interval.
    pub fn new(for_: impl Into<String>, timeout: Option<Duration>) -> WaitPlan {
        WaitPlan {
            for_: for_.into(),
            target: None,
            cursor: None,
            timeout,
            filter: EventFilter::Any,
            callback: None,
            interval: DEFAULT_INTERVAL,
            started_at: None,
        }
    }
}

/// What [`wait_for`] takes (the seed's `WaitForOptions`): the plan and the
/// host's functions. Build it with [`WaitForOptions::new`] and the builder
/// methods.
pub struct WaitForOptions {
    /// What the wait is about and how long it runs.
    pub plan: WaitPlan,
    /// Reads the source.
    pub read: ReadFn,
    /// How to resume.
    pub resume: Resume,
    /// Next steps after a satisfied wait.
    pub next: Option<NextFn>,
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
    /// assert_eq!(options.plan.for_, "build 7");
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
            plan: WaitPlan::new(for_, timeout),
            read: Box::new(read),
            resume,
            next: None,
        }
    }

    /// Sets the target.
    pub fn target(mut self, target: Option<AxRef>) -> Self {
        self.plan.target = target;
        self
    }

    /// Sets the starting cursor.
    pub fn cursor(mut self, cursor: Option<String>) -> Self {
        self.plan.cursor = cursor;
        self
    }

    /// Sets which events count.
    pub fn filter(mut self, filter: EventFilter) -> Self {
        self.plan.filter = filter;
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
        self.plan.callback = callback;
        self
    }

    /// Sets the time between reads.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.plan.interval = interval;
        self
    }

    /// Sets the wall-clock start.
    pub fn started_at(mut self, at: SystemTime) -> Self {
        self.plan.started_at = Some(at);
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
    /// Lines the source could not read as events (reported once each; the
    /// first [`MAX_MALFORMED`](super::MAX_MALFORMED)).
    pub malformed: Vec<Malformed>,
    /// Reads of the source that finished.
    pub reads: u64,
    /// The engine's result (timing, samples, probe accounting).
    pub result: WaitResult,
}

/// One line of a followed wait ([`follow`]).
#[derive(Debug, Clone, PartialEq)]
pub enum FollowLine {
    /// The first line: a `waiting` envelope at the starting cursor, sent
    /// once the wait truly waits (its first read came back), or as it
    /// ends if no read did; a wait refused first (a filter that does not
    /// compile, a cursor that does not fit) sends none.
    Waiting(Wait),
    /// A matching event, as it was read.
    Event(AxEvent),
}

/// What the probe and the envelope builder share.
#[derive(Default)]
pub(super) struct Shared {
    pub(super) cursor: Option<String>,
    filter: EventFilter,
    /// Where matching events go as they are read ([`follow`]); `None`:
    /// into `matched`.
    emit: Option<EmitFn>,
    /// The `waiting` line [`emit`](Self::emit) has not been given yet.
    waiting: Option<Wait>,
    matched: Vec<AxEvent>,
    gone: Option<String>,
    fresh: Option<Fresh>,
    malformed: Vec<Malformed>,
    error: Option<Arc<ReadError>>,
    reads: u64,
    /// The wait ended: a read that finishes now is dropped.
    closed: bool,
}

type EmitFn = Box<dyn FnMut(&FollowLine) + Send>;

impl Shared {
    /// Gives the `waiting` line to `emit`, if it has not had it.
    fn send_waiting(&mut self) {
        if let (Some(waiting), Some(emit)) = (self.waiting.take(), &mut self.emit) {
            emit(&FollowLine::Waiting(waiting));
        }
    }
}

/// Keeps what a read brought, unless the wait no longer wants it (it
/// ended, or the engine abandoned the call: `cancel`), and says what the
/// engine sees.
pub(super) fn take(
    shared: &Mutex<Shared>,
    read: Result<WaitRead, ReadError>,
    cancel: &CancelToken,
) -> Result<Observation, ProbeError> {
    let mut guard = shared.lock();
    let s = &mut *guard;
    // Abandoned (the deadline, a cancel): the read's result, or the
    // error it gave up with, is no longer wanted.
    if s.closed || cancel.is_cancelled() {
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
    s.send_waiting();
    let mut found = 0usize;
    for event in read.events {
        if s.filter.matches(&event) {
            found += 1;
            match &mut s.emit {
                Some(emit) => emit(&FollowLine::Event(event)),
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
    let room = MAX_MALFORMED.saturating_sub(s.malformed.len());
    s.malformed.extend(read.malformed.into_iter().take(room));
    let gone = read.gone.is_some();
    s.gone = read.gone;
    // What the engine sees (and keeps as its last observation): how
    // many matched and where the cursor is; the events stay here.
    let key = if s.emit.is_none() && found > 0 {
        "matched"
    } else {
        "streamed"
    };
    let mut observation = Observation::json(json!({ key: found, "cursor": s.cursor }));
    observation.gone = gone;
    Ok(observation)
}

/// Whether `read`, made from `cursor`, is to be followed by the next
/// read at once: it says it stopped short, and it moved the cursor (a
/// source saying so without moving would be read on for good).
pub(super) fn reads_on(cursor: Option<&str>, read: &Result<WaitRead, ReadError>) -> bool {
    matches!(read, Ok(r) if r.more && r.cursor.is_some() && r.cursor.as_deref() != cursor)
}

struct EventProbe {
    read: ReadFn,
    shared: Arc<Mutex<Shared>>,
    /// Asks for the next read at once when a read stopped at its limit.
    waker: Option<Waker>,
}

impl Probe for EventProbe {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        let cursor = self.shared.lock().cursor.clone();
        let read = (self.read)(cursor.as_deref(), &ctx.cancel);
        let more = reads_on(cursor.as_deref(), &read);
        let observation = take(&self.shared, read, &ctx.cancel)?;
        // A backlog is read at the speed of reading, not a read an interval
        // (a stream's; a wait that matched ends with this read).
        if let Some(waker) = self.waker.as_ref().filter(|_| more) {
            waker.wake();
        }
        Ok(observation)
    }

    fn watch(&mut self, waker: Waker) {
        self.waker = Some(waker);
    }

    fn name(&self) -> &str {
        "ouro-events"
    }
}

/// The plan's parts of every envelope, and the reads' state: builds a
/// wait's envelope from its result.
pub(super) struct Report {
    pub(super) shared: Arc<Mutex<Shared>>,
    for_: String,
    target: Option<AxRef>,
    callback: Option<String>,
    since: SystemTime,
    timeout: Option<Duration>,
}

/// How a wait ended, decided from its result and the reads' state; the
/// envelope still needs the host's `resume` and `next` steps.
pub(super) struct Decided {
    pub(super) ended: Ended,
    reason: Option<String>,
    fresh: Option<Fresh>,
    malformed: Vec<Malformed>,
    reads: u64,
    result: WaitResult,
}

impl Report {
    fn fields(&self, state: WaitState) -> WaitFields {
        WaitFields {
            target: self.target.clone(),
            callback: self.callback.clone(),
            ..WaitFields::new(self.for_.clone(), state, rfc3339(self.since))
        }
    }

    /// The `waiting` envelope at `cursor`, before anything was read.
    fn waiting(&self, cursor: Option<&str>, resume: NextStep) -> Result<Wait, WaitForError> {
        Ok(wait(WaitFields {
            // A limit past the latest time the clock holds is none.
            until: self
                .timeout
                .and_then(|t| self.since.checked_add(t))
                .map(rfc3339),
            cursor: cursor.map(str::to_string),
            resume: Some(resume),
            ..self.fields(WaitState::Waiting)
        })?)
    }

    /// Ends the reads (a later one is dropped) and decides the state.
    pub(super) fn decide(&self, result: &WaitResult) -> Result<Decided, WaitForError> {
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
        Ok(Decided {
            ended: Ended {
                state,
                resume: gone.is_none(),
                cursor,
                events: matched,
            },
            reason,
            fresh,
            malformed,
            reads,
            result: result.clone(),
        })
    }

    /// The envelope of a decided wait with the host's steps.
    pub(super) fn envelope(
        &self,
        decided: Decided,
        resume: Option<NextStep>,
        next: Vec<NextStep>,
    ) -> Result<Waited, WaitForError> {
        let ended = self
            .since
            .checked_add(Duration::from_millis(decided.result.elapsed_ms))
            .ok_or_else(|| WaitForError::Engine("the wait ended past the latest time".into()))?;
        let envelope = wait(WaitFields {
            until: Some(rfc3339(ended)),
            cursor: decided.ended.cursor,
            events: decided.ended.events,
            fresh: decided.fresh,
            resume,
            reason: decided.reason,
            next,
            ..self.fields(decided.ended.state)
        })?;
        Ok(Waited {
            wait: envelope,
            malformed: decided.malformed,
            reads: decided.reads,
            result: decided.result,
        })
    }
}

/// A [`Report`] with the host's `resume` and `next`: builds envelopes
/// from the engine's result alone.
struct Finisher {
    report: Report,
    resume: Resume,
    next: Option<NextFn>,
}

impl Finisher {
    fn waiting(&self, cursor: Option<&str>) -> Result<Wait, WaitForError> {
        self.report.waiting(cursor, self.resume.step(cursor)?)
    }

    fn finish(&self, result: &WaitResult) -> Result<Waited, WaitForError> {
        let decided = self.report.decide(result)?;
        // Ended before any read came back, but not refused: the stream
        // still begins with its `waiting` line.
        self.report.shared.lock().send_waiting();
        let ended = &decided.ended;
        let resume = match ended.resume {
            true => Some(self.resume.step(ended.cursor.as_deref())?),
            false => None,
        };
        let next = match &self.next {
            Some(next) if ended.wants_next() => next(&ended.events),
            _ => Vec::new(),
        };
        self.report.envelope(decided, resume, next)
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

/// What a plan runs as: the engine's spec and policy, and how its result
/// becomes an envelope.
pub(super) struct Planned {
    pub(super) spec: Spec,
    pub(super) policy: Policy,
    pub(super) report: Report,
}

pub(super) fn planned(plan: WaitPlan) -> Result<Planned, WaitForError> {
    let limit = match plan.timeout {
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
    let interval = plan.interval.max(MIN_INTERVAL).min(limit - MIN_INTERVAL);
    let until = Condition::Json {
        pointer: "/matched".into(),
        test: JsonTest::Exists(true),
    };
    let shared = Shared {
        cursor: plan.cursor,
        filter: plan.filter,
        ..Shared::default()
    };
    Ok(Planned {
        spec: Spec::new(until).interval(interval).max_wait(limit),
        policy: Policy::default().max_wait_ceiling(limit),
        report: Report {
            shared: Arc::new(Mutex::new(shared)),
            for_: plan.for_,
            target: plan.target,
            callback: plan.callback,
            since: plan.started_at.unwrap_or_else(SystemTime::now),
            timeout: plan.timeout,
        },
    })
}

/// The parts of a wait on the engine.
struct Built {
    spec: Spec,
    policy: Policy,
    probe: EventProbe,
    finisher: Finisher,
}

fn build(options: WaitForOptions) -> Result<Built, WaitForError> {
    let planned = planned(options.plan)?;
    Ok(Built {
        spec: planned.spec,
        policy: planned.policy,
        probe: EventProbe {
            read: options.read,
            shared: planned.report.shared.clone(),
            waker: None,
        },
        finisher: Finisher {
            report: planned.report,
            resume: options.resume,
            next: options.next,
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
    start_engine(build(options)?, WaitOptions::default())
}

fn start_engine(built: Built, options: WaitOptions) -> Result<EventWait, WaitForError> {
    let handle = Engine::global()
        .start_with(
            built.spec,
            Some(Box::new(built.probe)),
            options.policy(built.policy),
        )
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
/// cursor first (once the first read came back: a filter that does not
/// compile or a cursor that does not fit ends the wait with an error and
/// no line), then every matching event as it is read (on an engine
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

/// Starts a streamed wait ([`follow`]) and returns at once.
pub fn start_follow(
    options: WaitForOptions,
    on_line: impl FnMut(&FollowLine) + Send + 'static,
) -> Result<EventWait, WaitForError> {
    start_engine(build_follow(options, on_line)?, WaitOptions::default())
}

fn build_follow(
    options: WaitForOptions,
    on_line: impl FnMut(&FollowLine) + Send + 'static,
) -> Result<Built, WaitForError> {
    let cursor = options.plan.cursor.clone();
    let built = build(options)?;
    let waiting = built.finisher.waiting(cursor.as_deref())?;
    let mut shared = built.finisher.report.shared.lock();
    shared.waiting = Some(waiting);
    shared.emit = Some(Box::new(on_line));
    drop(shared);
    Ok(built)
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
    let built = build(options)?;
    let mut probe = built.probe;
    let sim = simulate_probe(&built.spec, &built.policy, &mut probe, controls)
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
    let built = build_follow(options, move |l| sink.lock().push(l.clone()))?;
    let mut probe = built.probe;
    let sim = simulate_probe(&built.spec, &built.policy, &mut probe, controls)
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
    let built = build(options)?;
    let finisher = built.finisher;
    Ok((
        built.spec,
        Box::new(built.probe),
        built.policy,
        Box::new(move |r: &WaitResult| finisher.finish(r)),
    ))
}
