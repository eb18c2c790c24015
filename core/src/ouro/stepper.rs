//! [`Stepper`]: the event wait of [`super::wait_for`] driven by a host
//! that keeps its own clock and reads on its own loop (a JavaScript event
//! loop with the seed's injectable `now` and `sleep`).
//!
//! It is the same wait: the engine's [`Machine`] decides when to read, when
//! the time limit passes and how the wait ends, and the envelope is built
//! by the same code as [`super::wait_for`]'s. The host only tells the time
//! and does what each [`Action`] says. Times are the host's clock readings
//! as time since the Unix epoch (JavaScript's `Date.now()`), so `since` and
//! `until` are its own; a reading past the time limit counts as the limit,
//! as the seed's `until` does. A reading earlier than the last (a wall
//! clock set back) counts as no time passing, so that it neither stretches
//! a sleep by the step nor stops the reads.

use std::time::{Duration, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::cancel::CancelToken;
use crate::duration::MAX_EXACT_MS;
use crate::error::{ErrorCode, ErrorInfo, Rule, SpecError};
use crate::machine::{Conditions, Machine, Step};
use crate::probe::ProbeMode;

use super::envelope::{AxEvent, NextStep, WaitState};
use super::jsonl::WaitRead;
use super::wait_for::{
    planned, reads_on, take, Decided, ReadError, Report, WaitForError, WaitPlan, Waited,
};

/// What the host does next.
///
/// ```
/// use std::time::Duration;
/// use waitfor::ouro::{Action, Stepper, WaitPlan};
/// let plan = WaitPlan::new("build 7", Some(Duration::from_secs(90)));
/// let (_, first) = Stepper::new(plan, Duration::ZERO).unwrap();
/// assert_eq!(first, Action::Read { cursor: None, within: Duration::from_secs(90) });
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Read the source after `cursor` and give the answer to
    /// [`Stepper::feed`]. A host that can abandon a read does so when
    /// `within` (the time left) passes first, and calls [`Stepper::tick`].
    Read {
        /// Where the read starts (`None`: the source's start).
        cursor: Option<String>,
        /// The time left before the limit.
        within: Duration,
    },
    /// Sleep this long, then call [`Stepper::tick`].
    Sleep(Duration),
    /// The wait is over: call the host's `resume` and `next` as this says,
    /// then [`Stepper::finish`].
    Done(Ended),
}

/// How a wait ended, before its envelope is built.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    /// The envelope's state.
    pub state: WaitState,
    /// Whether the envelope has a `resume` step (from `cursor`); not when
    /// the target is gone.
    pub resume: bool,
    /// Where the wait resumes: after the last event read.
    pub cursor: Option<String>,
    /// The matching events; `next` is called with them when the state is
    /// `satisfied`, and not otherwise.
    pub events: Vec<AxEvent>,
}

impl Ended {
    /// Whether the host's `next` is called (with [`Ended::events`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use waitfor::ouro::{Action, Stepper, WaitPlan, WaitState};
    /// let plan = WaitPlan::new("build 7", Some(Duration::from_secs(90)));
    /// let (mut stepper, _) = Stepper::new(plan, Duration::ZERO).unwrap();
    /// let Action::Done(ended) = stepper.cancel(Duration::from_secs(1)).unwrap() else { panic!() };
    /// assert_eq!((ended.state, ended.wants_next()), (WaitState::TimedOut, false));
    /// ```
    pub fn wants_next(&self) -> bool {
        self.state == WaitState::Satisfied
    }
}

/// An event wait run step by step on the host's clock.
///
/// ```
/// use std::time::Duration;
/// use waitfor::ouro::{Action, NextStep, Stepper, WaitPlan, WaitRead, WaitState};
/// let ms = Duration::from_millis;
/// let plan = WaitPlan { interval: ms(1000), ..WaitPlan::new("build 7", Some(ms(2500))) };
/// // The host's clock starts at 0 (1970): nothing is read, so every read is empty.
/// let (mut stepper, mut action) = Stepper::new(plan, ms(0)).unwrap();
/// let (mut now, mut slept) = (ms(0), Vec::new());
/// let ended = loop {
///     action = match action {
///         Action::Read { .. } => stepper.feed(now, Ok(WaitRead::default())).unwrap(),
///         Action::Sleep(d) => { slept.push(d); now += d; stepper.tick(now).unwrap() }
///         Action::Done(ended) => break ended,
///     };
/// };
/// assert_eq!(slept, [ms(1000), ms(1000), ms(500)]);
/// assert_eq!((ended.state, ended.resume), (WaitState::TimedOut, true));
/// let done = stepper.finish(Some(NextStep::new("again")), Vec::new()).unwrap();
/// assert_eq!(done.wait.until.as_deref(), Some("1970-01-01T00:00:02.500Z"));
/// ```
pub struct Stepper {
    machine: Machine,
    report: Report,
    /// Never cancelled: an abandoned read is one the host no longer feeds.
    cancel: CancelToken,
    /// The decision, once the wait is over.
    decided: Option<Decided>,
    /// The host's last clock reading, and the wait's time then.
    last: (Duration, Duration),
}

impl Stepper {
    /// Starts a wait at the host's clock reading `now` (its `since`,
    /// unless the plan sets `started_at`); the first action is a read.
    pub fn new(plan: WaitPlan, now: Duration) -> Result<(Stepper, Action), WaitForError> {
        let started_at = match plan.started_at {
            Some(at) => at,
            None => UNIX_EPOCH
                .checked_add(now)
                .ok_or_else(|| WaitForError::Options {
                    field: "now",
                    message: "is past the latest time the system clock holds".into(),
                })?,
        };
        let planned = planned(WaitPlan {
            started_at: Some(started_at),
            ..plan
        })?;
        let engine = |e: crate::error::SpecError| WaitForError::Engine(e.to_string());
        let mut machine = Machine::new(&planned.spec, &planned.policy, ProbeMode::Snapshot, now)
            .map_err(engine)?;
        let step = machine.start(now, Conditions::compile(&planned.spec).map_err(engine)?);
        let mut stepper = Stepper {
            machine,
            report: planned.report,
            cancel: CancelToken::new(),
            decided: None,
            last: (now, now),
        };
        let action = stepper.act(now, step)?;
        Ok((stepper, action))
    }

    /// The sleep of the last [`Action::Sleep`] ended, or a read's `within`
    /// passed (the read is then abandoned if the time limit has passed).
    pub fn tick(&mut self, now: Duration) -> Result<Action, WaitForError> {
        let now = self.clamp(now);
        let step = self.machine.on_timer(now);
        self.act(now, step)
    }

    /// The read of the last [`Action::Read`] answered at `now`. An answer
    /// after the time limit is dropped, as on the engine, where the limit
    /// ends the wait while the read runs.
    pub fn feed(
        &mut self,
        now: Duration,
        read: Result<WaitRead, ReadError>,
    ) -> Result<Action, WaitForError> {
        if !self.machine.is_probing() {
            return Err(WaitForError::Options {
                field: "read",
                message: "answered, but no read was asked for".into(),
            });
        }
        let now = self.advance(now);
        if now > self.machine.deadline() {
            let now = self.machine.deadline();
            let step = self.machine.on_timer(now);
            return self.act(now, step);
        }
        let cursor = self.report.shared.lock().cursor.clone();
        let more = reads_on(cursor.as_deref(), &read);
        let answer = take(&self.report.shared, read, &self.cancel);
        let mut step = self.machine.on_probe(now, answer);
        // A read that stopped at its limit is followed by the next at once,
        // as a wait's probe on the engine asks with its waker.
        if more && matches!(step, Step::Idle) {
            step = self.machine.on_wake(now);
        }
        self.act(now, step)
    }

    /// The host cancelled the wait at `now`: it ends `timed-out`, reason
    /// `cancelled before a matching event`; a read in flight is abandoned.
    pub fn cancel(&mut self, now: Duration) -> Result<Action, WaitForError> {
        let now = self.clamp(now);
        let step = self.machine.on_cancel(now);
        self.act(now, step)
    }

    /// The envelope of the ended wait, with the steps the host's `resume`
    /// and `next` gave as [`Action::Done`] asked.
    pub fn finish(
        &mut self,
        resume: Option<NextStep>,
        next: Vec<NextStep>,
    ) -> Result<Waited, WaitForError> {
        let decided = self
            .decided
            .take()
            .ok_or_else(|| WaitForError::Engine("the wait has not ended".into()))?;
        self.report.envelope(decided, resume, next)
    }

    /// The wait's time at the host's reading `now`, at most the limit.
    fn clamp(&mut self, now: Duration) -> Duration {
        self.advance(now).min(self.machine.deadline())
    }

    /// The wait's time at the host's reading `now`: it moves on by what the
    /// host's clock moved on since its last reading, and not back.
    fn advance(&mut self, now: Duration) -> Duration {
        let (last, at) = self.last;
        let at = at.saturating_add(now.saturating_sub(last));
        self.last = (now, at);
        at
    }

    /// The machine's step as the host's action.
    fn act(&mut self, now: Duration, mut step: Step) -> Result<Action, WaitForError> {
        loop {
            match step {
                Step::Probe(call) => {
                    let cursor = self.report.shared.lock().cursor.clone();
                    return Ok(Action::Read {
                        cursor,
                        within: call.budget,
                    });
                }
                Step::Done(ending) => {
                    let decided = self.report.decide(&self.machine.result(ending))?;
                    let ended = decided.ended.clone();
                    self.decided = Some(decided);
                    return Ok(Action::Done(ended));
                }
                Step::Idle => match self.machine.next_timer() {
                    Some(at) if at > now => return Ok(Action::Sleep(at - now)),
                    Some(_) => step = self.machine.on_timer(now),
                    None => return Err(WaitForError::Engine("the wait has ended".into())),
                },
            }
        }
    }
}

/// A [`Stepper`] for a host that speaks JSON and counts time in
/// milliseconds (JavaScript's `Date.now()`): the seed's camelCase names
/// in, each [`Action`] and the envelope out as JSON, and every refusal an
/// [`ErrorInfo`] naming the host's own field (`timeoutMs`, `read`, ...),
/// so a binding forwards both unchanged.
///
/// Actions: `{"do": "read", "cursor", "ms"}` (read after `cursor`; `ms` is
/// the time left), `{"do": "sleep", "ms"}`, and `{"do": "done", "resume",
/// "cursor", "next"}`: call the host's `resume(cursor)` if `resume` is
/// true, and its `next(next)` if `next` is not null, then
/// [`HostStepper::finish`].
///
/// ```
/// use serde_json::json;
/// use waitfor::ouro::HostStepper;
/// let args = json!({"for": "build 7", "timeoutMs": 1000, "intervalMs": 400});
/// let (mut stepper, first) = HostStepper::new(&args, 0.0).unwrap();
/// assert_eq!(first, json!({"do": "read", "cursor": null, "ms": 1000.0}));
/// let read = json!({"events": [], "cursor": "c1"});
/// assert_eq!(stepper.step(0.0, "read", Some(read)).unwrap(), json!({"do": "sleep", "ms": 400.0}));
/// let done = stepper.step(10.0, "cancel", None).unwrap();
/// assert_eq!(done, json!({"do": "done", "resume": true, "cursor": "c1", "next": null}));
/// let wait = stepper.finish(&json!({"resume": {"command": "again c1"}})).unwrap();
/// assert_eq!(wait["reason"], "cancelled before a matching event");
/// ```
pub struct HostStepper(Stepper);

impl HostStepper {
    /// Starts a wait at the host's clock reading `now`: `args` is
    /// `{for, target?, cursor?, callback?, timeoutMs, intervalMs?}`; the
    /// first action (a read).
    pub fn new(args: &Value, now: f64) -> Result<(HostStepper, Value), ErrorInfo> {
        if !args.is_object() {
            return Err(invalid(
                "options",
                Rule::WrongType,
                "must be an object".into(),
            ));
        }
        let text = "must be a string, or null";
        let timeout = args.get("timeoutMs").unwrap_or(&Value::Null);
        let mut plan = WaitPlan {
            target: field(args, "target", "must be a JSON value")?,
            cursor: field(args, "cursor", text)?,
            callback: field(args, "callback", text)?,
            ..WaitPlan::new(
                field::<String>(args, "for", "must be a string")?
                    .ok_or_else(|| invalid("for", Rule::WrongType, "must be a string".into()))?,
                Some(millis_json("timeoutMs", timeout)?),
            )
        };
        if let Some(interval) = args.get("intervalMs").filter(|v| !v.is_null()) {
            plan.interval = millis_json("intervalMs", interval)?;
        }
        let (stepper, first) = Stepper::new(plan, millis("now", now)?).map_err(refused)?;
        Ok((HostStepper(stepper), action(first)))
    }

    /// What happened at `now`: `"tick"` (a sleep or a read's time ran
    /// out), `"cancel"`, or `"read"` with the read's answer `{events,
    /// cursor, fresh?, gone?, more?}` (the events the host's own matcher
    /// kept); the next action.
    pub fn step(&mut self, now: f64, what: &str, read: Option<Value>) -> Result<Value, ErrorInfo> {
        let now = millis("now", now)?;
        let next = match what {
            "cancel" => self.0.cancel(now),
            "read" => {
                let must = "must resolve to {events, cursor}";
                let read: WaitRead = parse("read", read.unwrap_or_default(), must)?;
                self.0.feed(now, Ok(read))
            }
            _ => self.0.tick(now),
        };
        next.map(action).map_err(refused)
    }

    /// The envelope (`wait/1`), given `{resume?, next?}`: what the host's
    /// `resume` and `next` returned, absent when not called.
    pub fn finish(&mut self, returned: &Value) -> Result<Value, ErrorInfo> {
        let steps = "must return steps {command, description?}";
        let resume: Option<NextStep> = match returned.get("resume") {
            Some(v) => Some(parse("resume", v.clone(), steps)?),
            None => None,
        };
        let next: Vec<NextStep> = match returned.get("next") {
            Some(v) => parse("next", v.clone(), steps)?,
            None => Vec::new(),
        };
        let waited = self.0.finish(resume, next).map_err(refused)?;
        serde_json::to_value(&waited.wait)
            .map_err(|e| ErrorInfo::new(ErrorCode::Internal, e.to_string()))
    }
}

fn action(action: Action) -> Value {
    let ms = |d: Duration| d.as_nanos() as f64 / 1e6;
    match action {
        Action::Read { cursor, within } => {
            json!({"do": "read", "cursor": cursor, "ms": ms(within)})
        }
        Action::Sleep(d) => json!({"do": "sleep", "ms": ms(d)}),
        Action::Done(ended) => json!({"do": "done", "resume": ended.resume, "cursor": ended.cursor,
            "next": ended.wants_next().then_some(&ended.events)}),
    }
}

fn invalid(field: &str, rule: Rule, message: String) -> ErrorInfo {
    ErrorInfo::spec(
        ErrorCode::InvalidArguments,
        &SpecError::new(field, rule, message),
    )
}

fn parse<T: DeserializeOwned>(field: &str, value: Value, must: &str) -> Result<T, ErrorInfo> {
    serde_json::from_value(value)
        .map_err(|e| invalid(field, Rule::WrongType, format!("{must}: {e}")))
}

/// `args[name]` as a `T`; absent or null is `None`.
fn field<T: DeserializeOwned>(
    args: &Value,
    name: &str,
    must: &str,
) -> Result<Option<T>, ErrorInfo> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => parse(name, v.clone(), must).map(Some),
    }
}

fn millis_json(field: &str, ms: &Value) -> Result<Duration, ErrorInfo> {
    match ms.as_f64() {
        Some(ms) => millis(field, ms),
        None => Err(invalid(
            field,
            Rule::OutOfRange,
            format!("{MUST_MS} (got {ms})"),
        )),
    }
}

const MUST_MS: &str = "must be a number of milliseconds from 0 to 2^53 - 1";

/// `ms` milliseconds, exact for whole ones; up to [`MAX_EXACT_MS`], as
/// every host's durations are (see [`crate::duration`]), so a limit of
/// `1e300` is refused rather than read as the longest `Duration`.
fn millis(field: &str, ms: f64) -> Result<Duration, ErrorInfo> {
    if !(ms.is_finite() && (0.0..=MAX_EXACT_MS as f64).contains(&ms)) {
        return Err(invalid(
            field,
            Rule::OutOfRange,
            format!("{MUST_MS} (got {ms:?})"),
        ));
    }
    let fraction = Duration::from_nanos((ms.fract() * 1e6).round() as u64);
    Ok(Duration::from_millis(ms.trunc() as u64) + fraction)
}

/// Core's refusal under the host's names (its time limit is `timeoutMs`).
fn refused(e: WaitForError) -> ErrorInfo {
    match e {
        WaitForError::Options { field, message } => {
            let field = if field == "timeout" {
                "timeoutMs"
            } else {
                field
            };
            let rule = if field == "read" {
                Rule::Conflict
            } else {
                Rule::OutOfRange
            };
            invalid(field, rule, message)
        }
        WaitForError::Envelope(_) => ErrorInfo::new(ErrorCode::InvalidWait, e.to_string()),
        _ => ErrorInfo::new(ErrorCode::Runtime, e.to_string()),
    }
}
