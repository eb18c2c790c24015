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

use crate::cancel::CancelToken;
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
