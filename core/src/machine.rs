//! The wait itself as a state machine: time comes in as a value, decisions
//! come out. The threaded engine and the virtual-time simulator both drive
//! it, so they cannot disagree.

use crate::condition::{CompiledCondition, PatternScan, Sample};
use crate::error::SpecError;
use crate::pattern::PatternSet;
use crate::policy::Policy;
use crate::probe::{Observation, ProbeError, ProbeMode};
use crate::result::{tail_of, tail_of_lines, Outcome, ProbeAccounting, WaitResult};
use crate::resume::ResumeToken;
use crate::spec::{Backoff, ErrorPolicy, Spec, TailLimits};
use crate::view::View;
use std::time::Duration;

/// Text bytes times program bytes past which reading a sample is costly
/// (see [`Machine::costly_to_read`]): about a millisecond at worst.
/// Measured at the worst, with programs of 2.2 MB each (`\w{38}X\w{2}`,
/// any case) on Unicode words: a microsecond a byte. Common patterns take
/// 5-60 KB, so a sample of tens of kilobytes is read where it came in.
/// The estimate errs high: a stream's or a growing snapshot's new bytes
/// are all that is searched, but the whole observation is counted.
const COSTLY_READ: usize = 2 << 30;

/// A probe call the driver must start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProbeCall {
    pub sample: u64,
    pub elapsed: Duration,
    pub budget: Duration,
    /// The sample at the deadline ([`Spec::sample_at_deadline`]), begun
    /// when the deadline has passed: the driver must fire the deadline
    /// again, or a call that ignores its (empty) budget holds the wait.
    pub at_deadline: bool,
}

/// What the driver does next.
#[derive(Debug)]
pub(crate) enum Step {
    /// Start a probe call.
    Probe(ProbeCall),
    /// Nothing to do until [`Machine::next_timer`] or an event.
    Idle,
    /// The wait is over: [`Machine::result`] turns this into its result.
    Done(Ending),
}

/// How a wait ended, as decided when it ended. The result proper (tail,
/// last observation, counts) is built from it and the machine by
/// [`Machine::result`], which the engine runs on a delivery thread: when
/// thousands of waits end together, the scheduler only decides.
#[derive(Debug)]
pub(crate) struct Ending {
    outcome: Outcome,
    matched_index: Option<usize>,
    matched_lines: Vec<String>,
    error: Option<String>,
    woken: bool,
    at: Duration,
}

/// A throttled progress report.
///
/// ```
/// let p = waitfor::Progress { samples: 3, elapsed_ms: 1500, last_line: Some("building".into()) };
/// assert_eq!(p.samples, 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Progress {
    /// Samples taken so far.
    pub samples: u64,
    /// Time since the wait began.
    pub elapsed_ms: u64,
    /// The last non-empty line of the last observation.
    pub last_line: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Waiting for its conditions (see `Machine::start`).
    Compiling,
    Probing {
        woken: bool,
    },
    Sleeping {
        until: Duration,
    },
    Done,
}

/// What decides a wait: its success condition and its stop markers,
/// compiled. Compiling large patterns can take seconds, so the engine does
/// it in the wait's own time, on a worker (see [`Machine::start`]).
#[derive(Clone)]
pub(crate) struct Conditions {
    until: CompiledCondition,
    stop: PatternScan,
    /// What the programs that read a sample report taking: with the
    /// sample's length, what reading it may cost (see
    /// [`Machine::costly_to_read`]).
    program_bytes: usize,
}

impl Conditions {
    /// Compiles `spec`'s conditions.
    pub fn compile(spec: &Spec) -> Result<Self, SpecError> {
        crate::pattern::within_wait_budget(|| {
            let until = CompiledCondition::compile(&spec.until, "until")?;
            let stop = PatternScan::new(PatternSet::compile(&spec.stop, "stop")?, false);
            let program_bytes = until.program_bytes() + stop.program_bytes();
            Ok(Self {
                until,
                stop,
                program_bytes,
            })
        })
    }

    /// Before the real ones are compiled: nothing holds.
    fn none() -> Self {
        Self {
            until: CompiledCondition::Any(Vec::new()),
            stop: PatternScan::new(PatternSet::default(), false),
            program_bytes: 0,
        }
    }
}

/// Cloned when a sample too costly to read on the scheduler thread is read
/// on a worker (see `engine/evaluate.rs`): the clone stands in meanwhile.
#[derive(Clone)]
pub(crate) struct Machine {
    view: View,
    conditions: Conditions,
    interval: Duration,
    /// When the next sample is planned: samples keep to a grid `interval`
    /// apart from the first (see [`Machine::next_on_grid`]).
    grid: Duration,
    /// The sample planned at `grid` has been taken: the next call to
    /// [`Machine::next_on_grid`] moves the plan on.
    on_grid: bool,
    /// When the call in flight was planned (see [`Spec::quiet_on_plan`]).
    planned: Duration,
    sample_at_deadline: bool,
    quiet_on_plan: bool,
    backoff: Option<Backoff>,
    on_probe_error: ErrorPolicy,
    output_cap: usize,
    tail: TailLimits,
    progress_every: Duration,
    started: Duration,
    deadline: Duration,
    effective: Duration,
    clamped: bool,
    state: State,
    calls: u64,
    samples: u64,
    probe: ProbeAccounting,
    consecutive_errors: u32,
    last_change: Duration,
    wake_pending: bool,
    /// Stand-in only: the call answered and the answer is being read on a
    /// worker (see [`Machine::stands_in`]).
    reading: bool,
    exit_code: Option<i32>,
    entry_matched: bool,
    alternate_screen: bool,
    last_progress: Option<Duration>,
    progress: Option<Progress>,
}

impl Machine {
    /// A machine for `spec` whose clock reads `now`; `mode` is the probe's.
    pub fn new(
        spec: &Spec,
        policy: &Policy,
        mode: ProbeMode,
        now: Duration,
    ) -> Result<Self, SpecError> {
        // The rest of `Spec::validate` is checking the patterns and
        // decoding the token, done here in the same order (so the same
        // first error), the token for keeps. Patterns compile at `start`.
        spec.validate_fields()?;
        spec.check_patterns()?;
        // The host's cap bounds what one wait holds: a spec may ask less.
        let output_cap = spec
            .output_cap
            .map_or(policy.output_cap, |asked| asked.min(policy.output_cap));
        let anchor = match spec
            .resume
            .as_deref()
            .map(ResumeToken::decode)
            .transpose()?
        {
            Some(ResumeToken::Lines { lines }) => Some(lines.join("\n")),
            _ => None,
        };
        let effective = spec.max_wait.min(policy.max_wait_ceiling);
        Ok(Self {
            view: View::new(spec.view, mode, output_cap.saturating_mul(2), anchor),
            conditions: Conditions::none(),
            interval: spec.interval,
            grid: now,
            on_grid: false,
            planned: now,
            sample_at_deadline: spec.sample_at_deadline,
            quiet_on_plan: spec.quiet_on_plan,
            backoff: spec.backoff,
            on_probe_error: spec.on_probe_error,
            output_cap,
            tail: spec.tail,
            progress_every: spec.progress_every,
            started: now,
            deadline: now.saturating_add(effective),
            effective,
            clamped: effective < spec.max_wait,
            state: State::Compiling,
            calls: 0,
            samples: 0,
            probe: ProbeAccounting::default(),
            consecutive_errors: 0,
            last_change: now,
            wake_pending: false,
            reading: false,
            exit_code: None,
            entry_matched: false,
            alternate_screen: false,
            last_progress: None,
            progress: None,
        })
    }

    /// The output cap in force.
    pub fn output_cap(&self) -> usize {
        self.output_cap
    }

    /// The wait's conditions are compiled: the first sample is taken at
    /// once. The deadline runs from the machine's creation: the time
    /// compiling took counts.
    pub fn start(&mut self, now: Duration, conditions: Conditions) -> Step {
        self.conditions = conditions;
        self.begin_probe(now, false)
    }

    /// When the driver must call [`Machine::on_timer`] next, if ever.
    pub fn next_timer(&self) -> Option<Duration> {
        match self.state {
            State::Compiling | State::Probing { .. } => Some(self.deadline),
            State::Sleeping { until } => Some(until.min(self.deadline)),
            State::Done => None,
        }
    }

    /// When the next sample is due, while sleeping before the deadline.
    pub fn sleeping_until(&self) -> Option<Duration> {
        match self.state {
            State::Sleeping { until } if until < self.deadline => Some(until),
            _ => None,
        }
    }

    /// The clock reading at which the wait times out.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Whether a probe call is in flight.
    pub fn is_probing(&self) -> bool {
        matches!(self.state, State::Probing { .. })
    }

    /// A progress report, if one is due since the last call.
    pub fn take_progress(&mut self) -> Option<Progress> {
        self.progress.take()
    }

    /// The view's last lines, for a resume token of a snapshot probe.
    pub fn resume_lines(&self) -> Option<ResumeToken> {
        Some(ResumeToken::Lines {
            lines: self.view.anchor_lines(20),
        })
    }

    fn begin_probe(&mut self, now: Duration, woken: bool) -> Step {
        if now >= self.deadline {
            return self.at_deadline(now);
        }
        self.calls += 1;
        self.wake_pending = false;
        // A woken call right after a planned one leaves that plan to be
        // moved on after it.
        self.on_grid |= !woken;
        self.planned = if woken { now } else { self.grid };
        self.state = State::Probing { woken };
        Step::Probe(ProbeCall {
            sample: self.calls,
            elapsed: now.saturating_sub(self.started),
            budget: self.deadline.saturating_sub(now),
            at_deadline: false,
        })
    }

    /// The timer set by [`Machine::next_timer`] fired.
    pub fn on_timer(&mut self, now: Duration) -> Step {
        match self.state {
            State::Done => Step::Idle,
            State::Compiling if now >= self.deadline => {
                // A timeout like any other: the limit passed before the
                // first sample could be taken; the error says why.
                let message = format!(
                    "the time limit ({} ms) passed while the wait's patterns were compiled",
                    millis(self.effective)
                );
                Step::Done(self.end(now, Outcome::Timeout, None, Vec::new(), Some(message)))
            }
            State::Compiling => Step::Idle,
            State::Sleeping { .. } if now >= self.deadline && self.sample_at_deadline => {
                self.probe_at_deadline(now)
            }
            _ if now >= self.deadline => self.at_deadline(now),
            State::Sleeping { until } if now >= until => self.begin_probe(now, false),
            _ => Step::Idle,
        }
    }

    /// The last sample of [`Spec::sample_at_deadline`]: planned at the
    /// deadline, with no budget left.
    fn probe_at_deadline(&mut self, now: Duration) -> Step {
        self.calls += 1;
        self.wake_pending = false;
        self.planned = self.deadline;
        self.state = State::Probing { woken: false };
        Step::Probe(ProbeCall {
            sample: self.calls,
            elapsed: now.saturating_sub(self.started),
            budget: Duration::ZERO,
            at_deadline: true,
        })
    }

    /// The host asked for a sample now.
    pub fn on_wake(&mut self, now: Duration) -> Step {
        match self.state {
            State::Sleeping { .. } => self.begin_probe(now, true),
            State::Probing { .. } => {
                self.wake_pending = true;
                Step::Idle
            }
            State::Compiling | State::Done => Step::Idle,
        }
    }

    /// The host cancelled the wait.
    pub fn on_cancel(&mut self, now: Duration) -> Step {
        if self.state == State::Done {
            return Step::Idle;
        }
        if self.is_probing() && !self.reading {
            self.probe.abandoned += 1;
        }
        Step::Done(self.end(now, Outcome::Cancelled, None, Vec::new(), None))
    }

    /// Something failed while the driver ran this wait (a panic): the wait
    /// ends with outcome `error` and `message`.
    pub fn fail(&mut self, now: Duration, message: String) -> Ending {
        if self.is_probing() && !self.reading {
            self.probe.abandoned += 1;
        }
        self.end(now, Outcome::Error, None, Vec::new(), Some(message))
    }

    /// Whether reading `answer` may take long enough to hold other waits
    /// up: its text (and the screen at entry, read at the first sample)
    /// times what the programs that search it take. A search is linear in
    /// the text, but each byte can cost up to the size of the automata when
    /// their cache cannot hold the states the text needs: 150 KB of
    /// Unicode words under eight case-insensitive `\w{38}X\w{2}` took
    /// over a second.
    pub fn costly_to_read(&self, answer: &Result<Observation, ProbeError>) -> bool {
        let Ok(observation) = answer else {
            return false;
        };
        let entry = observation.at_entry.as_deref().map_or(0, str::len);
        let bytes = observation.text.len().saturating_add(entry);
        bytes.saturating_mul(self.conditions.program_bytes) > COSTLY_READ
    }

    /// Makes this clone the stand-in for the machine reading the answer
    /// to the call in flight: should the deadline pass first, the wait
    /// times out saying the reading took too long, as the probe answered.
    pub fn stands_in(&mut self) {
        self.reading = true;
    }

    /// Whether this is the stand-in for a machine reading a sample on a
    /// worker (see [`Machine::stands_in`]): its call has returned.
    pub fn is_standing_in(&self) -> bool {
        self.reading
    }

    /// A wake came while the call was out: the next sample is taken at
    /// once (see [`Machine::on_wake`]).
    pub fn wake_pending(&self) -> bool {
        self.wake_pending
    }

    /// A probe call returned.
    pub fn on_probe(&mut self, now: Duration, result: Result<Observation, ProbeError>) -> Step {
        let State::Probing { woken } = self.state else {
            return Step::Idle;
        };
        match result {
            Err(err) => self.on_probe_error(now, err),
            Ok(observation) => self.on_observation(now, observation, woken),
        }
    }

    fn on_probe_error(&mut self, now: Duration, err: ProbeError) -> Step {
        // A call's budget ends at the deadline: a call that failed by then
        // (a command or a tmux client killed when its time ran out, on a
        // loaded machine before the deadline's timer fired) is abandoned,
        // as one still running would be, not a failure of the probe. A
        // refusal says why the wait cannot go on, and is kept, save for
        // the sample at the deadline, which had no time to answer at all.
        if now >= self.deadline && (self.sample_at_deadline || !err.refused) {
            return self.at_deadline(now);
        }
        self.probe.errors += 1;
        self.consecutive_errors += 1;
        // Bounded here too: a `ProbeError` built field by field skips `new`.
        let err = ProbeError {
            message: ProbeError::bounded(err.message),
            ..err
        };
        self.probe.last_error = Some(err.message.clone());
        let tolerated = match self.on_probe_error {
            ErrorPolicy::Fail => 0,
            ErrorPolicy::Tolerate(n) => n,
        };
        if err.refused || self.consecutive_errors > tolerated {
            let message = format!("probe failed: {}", err.message);
            return Step::Done(self.end(now, Outcome::ProbeError, None, Vec::new(), Some(message)));
        }
        self.schedule_next(now)
    }

    fn on_observation(&mut self, now: Duration, mut observation: Observation, woken: bool) -> Step {
        self.samples += 1;
        self.consecutive_errors = 0;
        if observation.exit_code.is_some() {
            self.exit_code = observation.exit_code;
        }
        if observation.len_read() > self.output_cap {
            let message = format!(
                "output of sample {} exceeds the cap of {} bytes ({} bytes read)",
                self.samples,
                self.output_cap,
                observation.len_read()
            );
            return Step::Done(self.end(now, Outcome::Error, None, Vec::new(), Some(message)));
        }
        if self.samples == 1 {
            if let Some(before) = observation.at_entry.as_deref() {
                self.entry_matched = self.conditions.until.matches_text(before);
            }
        }
        if observation.alternate_screen {
            // Not output: nothing is compared or matched while it lasts.
            self.alternate_screen = true;
            if observation.gone {
                return self.finish_woken(now, woken, Outcome::Gone, None, Vec::new());
            }
            return self.schedule_next(now);
        }
        let update = self.view.update(std::mem::take(&mut observation.text));
        let seen = if self.quiet_on_plan {
            self.planned
        } else {
            now
        };
        if update.changed {
            self.last_change = seen;
        }
        if self.view.is_entry() {
            self.entry_matched = self.conditions.until.matches_text(self.view.display());
        }
        let sample = Sample {
            text: self.view.text(),
            new_from: update.new_from,
            reset: update.reset,
            quiet: seen.saturating_sub(self.last_change),
            has_output: self.view.has_output(),
            observation: &observation,
        };
        let stopped = self.conditions.stop.scan(&sample);
        let matched = self.conditions.until.evaluate(&sample);
        if let Some(hit) = stopped {
            return self.finish_woken(now, woken, Outcome::Stopped, hit.index, hit.lines);
        }
        if let Some(hit) = matched {
            return self.finish_woken(now, woken, hit.outcome, hit.index, hit.lines);
        }
        if observation.gone {
            return self.finish_woken(now, woken, Outcome::Gone, None, Vec::new());
        }
        if self
            .last_progress
            .is_none_or(|at| now.saturating_sub(at) >= self.progress_every)
        {
            self.last_progress = Some(now);
            self.progress = Some(Progress {
                samples: self.samples,
                elapsed_ms: millis(now.saturating_sub(self.started)),
                last_line: last_line(self.view.display()),
            });
        }
        self.schedule_next(now)
    }

    fn schedule_next(&mut self, now: Duration) -> Step {
        if self.wake_pending {
            return self.begin_probe(now, true);
        }
        let until = self.next_on_grid(now);
        self.state = State::Sleeping { until };
        if now >= self.deadline {
            return self.at_deadline(now);
        }
        Step::Idle
    }

    /// The next planned sample, at `now` after a call. Samples are planned
    /// `interval` apart from the first, whenever each call really started
    /// and ended, so a driver that starts calls a little late (a timer
    /// tick) adds no drift, and waits started apart stay apart. A planned
    /// time that passed while the call ran is skipped, not made up: calls
    /// never overlap or run back to back, and the next comes at the
    /// following planned time. A woken sample leaves the plan as it was.
    fn next_on_grid(&mut self, now: Duration) -> Duration {
        // Saturating throughout: a spec may ask for any factor and limit
        // (the largest plan only ends at the deadline).
        if std::mem::take(&mut self.on_grid) {
            self.grid = self.grid.saturating_add(self.interval);
            if let Some(backoff) = self.backoff {
                self.interval = grown(self.interval, backoff);
            }
        }
        if self.grid < now {
            let missed = (now - self.grid)
                .as_nanos()
                .div_ceil(self.interval.as_nanos());
            self.grid = self.grid.saturating_add(Duration::from_nanos(
                u64::try_from(missed.saturating_mul(self.interval.as_nanos())).unwrap_or(u64::MAX),
            ));
        }
        self.grid
    }

    fn at_deadline(&mut self, now: Duration) -> Step {
        if self.reading {
            let message = format!(
                "the time limit ({} ms) passed while sample {} was read: its output is \
                 costly for the patterns to search (use fewer or simpler patterns, or less output)",
                millis(self.effective),
                self.samples + 1
            );
            return Step::Done(self.end(now, Outcome::Timeout, None, Vec::new(), Some(message)));
        }
        if self.is_probing() && !self.reading {
            self.probe.abandoned += 1;
        }
        if self.samples == 0 {
            let message = match &self.probe.last_error {
                Some(last) => format!("probe failed: {last}"),
                None => format!(
                    "probe timed out: no sample completed within {} ms",
                    millis(self.effective)
                ),
            };
            return Step::Done(self.end(now, Outcome::ProbeError, None, Vec::new(), Some(message)));
        }
        Step::Done(self.end(now, Outcome::Timeout, None, Vec::new(), None))
    }

    fn finish_woken(
        &mut self,
        now: Duration,
        woken: bool,
        outcome: Outcome,
        index: Option<usize>,
        lines: Vec<String>,
    ) -> Step {
        let mut ending = self.end(now, outcome, index, lines, None);
        ending.woken = woken;
        Step::Done(ending)
    }

    /// Ends the wait: the result is built from this and the machine.
    fn end(
        &mut self,
        now: Duration,
        outcome: Outcome,
        matched_index: Option<usize>,
        matched_lines: Vec<String>,
        error: Option<String>,
    ) -> Ending {
        self.state = State::Done;
        Ending {
            outcome,
            matched_index,
            matched_lines,
            error,
            woken: false,
            at: now,
        }
    }

    /// The result of the wait that ended as `ending`.
    pub fn result(&self, ending: Ending) -> WaitResult {
        let display = self.view.display();
        let tail = tail_of(display, self.tail.lines, self.tail.bytes);
        let matched_lines = tail_of_lines(ending.matched_lines, self.tail.lines, self.tail.bytes);
        WaitResult {
            outcome: ending.outcome,
            matched_index: ending.matched_index,
            matched_lines,
            matched_at_entry: self.entry_matched && ending.outcome != Outcome::Matched,
            saw_new_output: self.view.has_output(),
            tail,
            exit_code: self.exit_code,
            samples: self.samples,
            elapsed_ms: millis(ending.at.saturating_sub(self.started)),
            effective_max_wait_ms: millis(self.effective),
            clamped: self.clamped,
            probe: self.probe.clone(),
            error: ending.error,
            resume: None,
            woken: ending.woken,
            alternate_screen: self.alternate_screen,
            notices: Vec::new(),
            last_observation: display.to_string(),
        }
    }
}

/// `interval` grown by `backoff`: at most its `max_interval`, whatever
/// the factor (`Duration::mul_f64` panics past the largest duration).
fn grown(interval: Duration, backoff: Backoff) -> Duration {
    Duration::try_from_secs_f64(interval.as_secs_f64() * backoff.factor)
        .map_or(backoff.max_interval, |longer| {
            longer.min(backoff.max_interval)
        })
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn last_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.chars().take(200).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Condition, Pattern};

    fn ms(ms: f64) -> Duration {
        Duration::from_secs_f64(ms / 1e3)
    }

    /// The stand-in for a machine reading a costly sample on a CPU thread:
    /// at the deadline the wait times out saying so, and its call counts
    /// as answered, not abandoned; cancelled, likewise.
    #[test]
    fn a_stand_in_ends_at_the_deadline_as_the_reading_took_too_long() {
        let spec = Spec::from_json(
            r#"{"until": {"matches": "ok"}, "interval_ms": 100, "max_wait_ms": 1000}"#,
        )
        .unwrap();
        let mut machine =
            Machine::new(&spec, &Policy::default(), ProbeMode::Snapshot, ms(0.0)).unwrap();
        let conditions = Conditions::compile(&spec).unwrap();
        assert!(matches!(machine.start(ms(0.0), conditions), Step::Probe(_)));
        let mut cancelled = machine.clone();
        machine.stands_in();
        let Step::Done(ending) = machine.on_timer(ms(1000.0)) else {
            panic!("the deadline ends it")
        };
        let result = machine.result(ending);
        assert_eq!(result.outcome, Outcome::Timeout);
        assert!(result
            .error
            .unwrap()
            .contains("passed while sample 1 was read"));
        assert_eq!(result.probe.abandoned, 0);
        cancelled.stands_in();
        let Step::Done(ending) = cancelled.on_cancel(ms(10.0)) else {
            panic!("cancelling ends it")
        };
        assert_eq!(cancelled.result(ending).probe.abandoned, 0);
    }

    /// A driver whose timer fires late (a 1 ms timer tick, a busy
    /// scheduler) must not stretch the period: samples stay on the plan.
    #[test]
    fn calls_started_late_keep_the_planned_times() {
        let spec = Spec::from_json(r#"{"until": {"matches": "ok"}, "interval_ms": 100}"#).unwrap();
        let mut machine =
            Machine::new(&spec, &Policy::default(), ProbeMode::Snapshot, ms(0.0)).unwrap();
        let conditions = Conditions::compile(&spec).unwrap();
        assert!(matches!(machine.start(ms(0.0), conditions), Step::Probe(_)));
        let mut now = ms(0.3);
        for sample in 1..=20 {
            machine.on_probe(now, Ok(Observation::text("no")));
            let planned = ms(100.0 * f64::from(sample));
            assert_eq!(machine.next_timer(), Some(planned), "sample {sample}");
            // The timer fires 0.9 ms late and the call takes 0.3 ms.
            assert!(matches!(
                machine.on_timer(planned + ms(0.9)),
                Step::Probe(_)
            ));
            now = planned + ms(1.2);
        }
    }

    /// The machine checks a spec's rules itself (a spec built in code was
    /// never validated) without compiling its patterns twice: whatever is
    /// wrong, it reports the error `Spec::validate` reports first.
    #[test]
    fn a_machine_refuses_a_spec_with_the_error_validate_gives() {
        let bad_until = Condition::Matches(Pattern::regex("("));
        let fine = || Spec::new(Condition::Matches(Pattern::literal("ok")));
        let specs = [
            // A rule checked before the patterns, with a bad pattern too.
            Spec::new(bad_until.clone()).max_wait(Duration::ZERO),
            // Each bad pattern and token, alone and with the later ones.
            Spec::new(bad_until.clone())
                .stop([Pattern::regex("[")])
                .resume("not a token"),
            fine().stop([Pattern::regex("[")]).resume("not a token"),
            fine().resume("not a token"),
        ];
        for spec in specs {
            let expected = spec.validate().expect_err("the spec breaks a rule");
            let got = Machine::new(&spec, &Policy::default(), ProbeMode::Snapshot, ms(0.0))
                .err()
                .expect("the machine refuses it");
            assert_eq!(got.to_string(), expected.to_string());
        }
    }
}
