//! Virtual time: the wait machine driven by a scripted probe, so timing
//! behaviour is exact, fast and never flaky. The shared test vectors of
//! every language run through this. [`Sampler`] feeds observations to a
//! wait by hand, for benchmarks of what a sample costs.

use crate::cancel::CancelToken;
use crate::error::SpecError;
use crate::machine::{Conditions, Machine, ProbeCall, Progress, Step};
use crate::policy::Policy;
use crate::probe::{Answer, Inbox, Observation, Probe, ProbeContext, ProbeError, ProbeMode, Waker};
use crate::result::WaitResult;
use crate::spec::Spec;
use serde::Deserialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use crate::sampler::Sampler;

/// The most bytes the `fill` of a script's steps may add in all: the
/// vectors' large outputs fit, a hostile script cannot ask for gigabytes.
const MAX_SCRIPT_FILL: usize = 16 << 20;

/// One scripted probe call: how long it takes and what it answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptStep {
    /// Virtual time the call takes.
    pub takes: Duration,
    /// The answer; `None` means the call never returns (a hung probe).
    pub answer: Option<Result<Observation, ProbeError>>,
}

/// A host action at a virtual time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// Cancel the wait.
    Cancel,
    /// Wake the wait (probe now).
    Wake,
}

/// What the scripted probe does, call by call; the last step repeats.
///
/// ```
/// let script = waitfor::simulate::Script::from_json(r#"{
///     "steps": [{"text": "starting"}, {"after_ms": 100, "text": "ready"}]
/// }"#).unwrap();
/// assert_eq!(script.steps.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    /// Snapshot or stream.
    pub mode: ProbeMode,
    /// The calls, in order.
    pub steps: Vec<ScriptStep>,
    /// Host actions and their times.
    pub controls: Vec<(Duration, Control)>,
}

/// The result of a simulated wait and what happened on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    /// The wait's result.
    pub result: WaitResult,
    /// Virtual start time of every probe call, in milliseconds.
    pub call_starts_ms: Vec<u64>,
    /// Progress reports, in order.
    pub progress: Vec<Progress>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    #[serde(default)]
    mode: Option<String>,
    steps: Vec<RawStep>,
    #[serde(default)]
    controls: Vec<RawControl>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    #[serde(default)]
    after_ms: u64,
    #[serde(default)]
    text: Option<String>,
    /// Appends this many `x` bytes to `text`: large outputs without large
    /// vector files (at most [`MAX_SCRIPT_FILL`] in all).
    #[serde(default)]
    fill: usize,
    #[serde(default)]
    json: Option<serde_json::Value>,
    #[serde(default)]
    exit_code: Option<i32>,
    #[serde(default)]
    gone: bool,
    #[serde(default)]
    alternate_screen: bool,
    #[serde(default)]
    at_entry: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    hang: bool,
    // A tmux pane's facts (the tmux profiles' scripts).
    #[serde(default)]
    screen: Option<Vec<String>>,
    #[serde(default)]
    height: Option<usize>,
    #[serde(default)]
    history: Option<Vec<String>>,
    #[serde(default)]
    history_size: Option<u64>,
    #[serde(default)]
    history_limit: Option<u64>,
    #[serde(default)]
    cursor_row: Option<u32>,
    #[serde(default)]
    pane_id: Option<String>,
    #[serde(default)]
    pid: Option<u32>,
    #[serde(default)]
    dead: bool,
    #[serde(default)]
    typed: Option<String>,
}

impl RawStep {
    /// The first pane fact the step gives, if any.
    fn pane_fact(&self) -> Option<&'static str> {
        [
            ("screen", self.screen.is_some()),
            ("height", self.height.is_some()),
            ("history", self.history.is_some()),
            ("history_size", self.history_size.is_some()),
            ("history_limit", self.history_limit.is_some()),
            ("cursor_row", self.cursor_row.is_some()),
            ("pane_id", self.pane_id.is_some()),
            ("pid", self.pid.is_some()),
            ("dead", self.dead),
            ("typed", self.typed.is_some()),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
    }

    /// The first field of a probe's answer the step gives, if any (a
    /// pane's probe works them out from the pane).
    #[cfg(unix)]
    fn answer_field(&self) -> Option<&'static str> {
        [
            ("text", self.text.is_some()),
            ("fill", self.fill > 0),
            ("json", self.json.is_some()),
            ("exit_code", self.exit_code.is_some()),
            ("at_entry", self.at_entry.is_some()),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
    }
}

/// A step field that does not belong in this kind of script.
fn misplaced(step: usize, field: &str, why: &str) -> SpecError {
    SpecError::new(
        format!("script.steps[{step}].{field}"),
        crate::error::Rule::UnknownField,
        why,
    )
}

fn raw_script(value: &serde_json::Value) -> Result<RawScript, SpecError> {
    serde_path_to_error::deserialize(value)
        .map_err(|e| SpecError::from_serde(format!("script.{}", e.path()), e.inner()))
}

fn controls_of(raw: &[RawControl]) -> Vec<(Duration, Control)> {
    raw.iter()
        .map(|c| (Duration::from_millis(c.at_ms), c.action))
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawControl {
    at_ms: u64,
    action: Control,
}

impl Script {
    /// Reads the JSON form used by `tests/vectors`: `steps` of
    /// `{after_ms, text | json | error | hang, fill?, exit_code?, gone?,
    /// alternate_screen?, at_entry?}`,
    /// `mode` (`snapshot` or `stream`), `controls` of `{at_ms, action}`.
    ///
    /// A tmux profile's script (read by `vectors::run`) describes the pane
    /// at each call instead, as tmux reports it to the pane probe, which
    /// works out the answer itself: `{after_ms, screen, height?, history?,
    /// history_size?, history_limit?, cursor_row?, pane_id?, pid?, dead?,
    /// alternate_screen?, typed?}`, or `{gone: true}` (the pane is gone),
    /// `{error}` (every tmux command fails with that text), `{hang: true}`.
    /// `screen` is the visible rows, one line each (no soft wraps), padded with
    /// blank rows to `height`; `history` the rows right above it, oldest
    /// first, in a history of `history_size` rows (default: as many as
    /// listed; older ones are blank) out of `history_limit` (2000); the
    /// cursor is on `cursor_row` (default: the last non-blank row);
    /// `pane_id` is `%1` and `pid` 1000 unless given; `dead`: the
    /// program exited; `typed`: text the host typed into the pane right
    /// before the call, as a `send_keys` tool records it (a `\n` submits
    /// the line). These facts are refused here, and `text`, `json`,
    /// `fill`, `exit_code` and `at_entry` are refused in a pane's script.
    ///
    /// The text is read as every caller JSON is ([`crate::input::parse`]):
    /// past 4 MiB it is refused unread (rule `too_large`), and a fault
    /// inside a string (a lone surrogate escape) names that string, under
    /// `script.` as every other refusal of a script does.
    ///
    /// ```
    /// use waitfor::simulate::Script;
    /// let err = Script::from_json(r#"{"steps": [{"text": "\ud800"}]}"#).unwrap_err();
    /// assert_eq!((err.field.as_str(), err.rule), ("script.steps[0].text", waitfor::Rule::InvalidJson));
    /// ```
    pub fn from_json(text: &str) -> Result<Self, SpecError> {
        let value = crate::input::parse(text).map_err(|e| match e.field.as_str() {
            "" => e,
            inside => SpecError {
                field: format!("script.{inside}"),
                ..e
            },
        })?;
        Self::from_value(&value)
    }

    /// Reads the JSON form from a decoded value.
    pub fn from_value(value: &serde_json::Value) -> Result<Self, SpecError> {
        let raw = raw_script(value)?;
        for (i, step) in raw.steps.iter().enumerate() {
            if let Some(field) = step.pane_fact() {
                return Err(misplaced(
                    i,
                    field,
                    "pane facts are for the tmux profiles' scripts",
                ));
            }
        }
        let mode = match raw.mode.as_deref() {
            None | Some("snapshot") => ProbeMode::Snapshot,
            Some("stream") => ProbeMode::Stream,
            Some(other) => {
                return Err(SpecError::new(
                    "script.mode",
                    crate::error::Rule::UnknownField,
                    format!(
                        "unknown mode {}, expected snapshot or stream",
                        crate::error::echo(other)
                    ),
                ))
            }
        };
        let controls = controls_of(&raw.controls);
        let filled = raw
            .steps
            .iter()
            .fold(0usize, |sum, s| sum.saturating_add(s.fill));
        if filled > MAX_SCRIPT_FILL {
            return Err(SpecError::new(
                "script.steps",
                crate::error::Rule::OutOfRange,
                format!(
                    "`fill` may add at most {MAX_SCRIPT_FILL} bytes in all, these add {filled}"
                ),
            ));
        }
        let steps = raw
            .steps
            .into_iter()
            .map(|s| {
                let answer = if s.hang {
                    None
                } else if let Some(message) = s.error {
                    Some(Err(ProbeError::new(message)))
                } else {
                    let mut obs = match s.json {
                        Some(json) => Observation::json(json),
                        None => Observation::text(s.text.unwrap_or_default() + &"x".repeat(s.fill)),
                    };
                    obs.exit_code = s.exit_code;
                    obs.gone = s.gone;
                    obs.alternate_screen = s.alternate_screen;
                    obs.at_entry = s.at_entry;
                    Some(Ok(obs))
                };
                ScriptStep {
                    takes: Duration::from_millis(s.after_ms),
                    answer,
                }
            })
            .collect();
        Ok(Self {
            mode,
            steps,
            controls,
        })
    }
}

/// Runs a wait on virtual time with a scripted probe.
///
/// ```
/// use waitfor::simulate::{simulate, Script};
/// use waitfor::{Policy, Spec};
/// let spec = Spec::from_json(r#"{"until": {"matches": "ready"}, "interval_ms": 2000, "max_wait_ms": 60000}"#).unwrap();
/// let script = Script::from_json(r#"{"steps": [{"text": "a"}, {"text": "a"}, {"text": "ready"}]}"#).unwrap();
/// let sim = simulate(&spec, &Policy::default(), &script).unwrap();
/// assert_eq!(sim.result.elapsed_ms, 4000);
/// assert_eq!(sim.call_starts_ms, vec![0, 2000, 4000]);
/// ```
pub fn simulate(spec: &Spec, policy: &Policy, script: &Script) -> Result<Simulation, SpecError> {
    simulate_reporting(spec, policy, script, &mut |_| {})
}

/// [`simulate`], handing each progress report to `report` as it is made.
pub(crate) fn simulate_reporting(
    spec: &Spec,
    policy: &Policy,
    script: &Script,
    report: &mut dyn FnMut(&Progress),
) -> Result<Simulation, SpecError> {
    if script.steps.is_empty() {
        return Err(no_steps());
    }
    let mut calls = 0usize;
    drive(spec, policy, script.mode, &script.controls, report, |_| {
        let scripted = &script.steps[calls.min(script.steps.len() - 1)];
        calls += 1;
        match &scripted.answer {
            Some(answer) => (Some(scripted.takes), answer.clone(), false),
            None => (None, Err(ProbeError::new("hung")), false),
        }
    })
}

fn no_steps() -> SpecError {
    SpecError::new(
        "script.steps",
        crate::error::Rule::Empty,
        "needs at least one step",
    )
}

/// Runs a wait on virtual time with a live probe: each call answers at
/// once (it takes no virtual time), sees the virtual `elapsed` and `budget`
/// in its context, and `controls` act at their virtual times. The probe's
/// [`Waker`], woken during a call, asks for the next call at once, as on
/// the engine. For hosts
/// that build their own probe (such as the Ouro event wait)
/// and want their state machine tested exactly.
///
/// ```
/// use waitfor::simulate::simulate_probe;
/// use waitfor::{probe_fn, Condition, Observation, Pattern, Policy, Spec};
/// use std::time::Duration;
/// let spec = Spec::new(Condition::Matches(Pattern::literal("ready")))
///     .interval(Duration::from_millis(100));
/// let mut probe = probe_fn(|ctx| Ok(Observation::text(
///     if ctx.elapsed >= Duration::from_millis(300) { "ready" } else { "wait" })));
/// let sim = simulate_probe(&spec, &Policy::default(), &mut probe, &[]).unwrap();
/// assert_eq!(sim.call_starts_ms, vec![0, 100, 200, 300]);
/// ```
pub fn simulate_probe(
    spec: &Spec,
    policy: &Policy,
    probe: &mut dyn Probe,
    controls: &[(Duration, Control)],
) -> Result<Simulation, SpecError> {
    simulate_live(spec, policy, probe, controls, &mut |_| {}, &mut |_| {})
}

/// [`simulate_probe`], handing each progress report to `report`, and
/// calling `before` with each probe call's virtual start time right before
/// the probe answers it (to change the world the probe reads).
fn simulate_live(
    spec: &Spec,
    policy: &Policy,
    probe: &mut dyn Probe,
    controls: &[(Duration, Control)],
    report: &mut dyn FnMut(&Progress),
    before: &mut dyn FnMut(Duration),
) -> Result<Simulation, SpecError> {
    let woken = Arc::new(Woken::default());
    probe.watch(Waker::new(0, woken.clone(), std::process::id()));
    let mut sample = live_sampler(spec, policy);
    drive(spec, policy, probe.mode(), controls, report, |call| {
        before(call.elapsed);
        let answer = sample(probe, call);
        (
            Some(Duration::ZERO),
            answer,
            woken.0.swap(false, Ordering::SeqCst),
        )
    })
}

/// Where a simulated probe's [`Waker`] posts: whether it was woken.
#[derive(Default)]
struct Woken(AtomicBool);

impl Inbox for Woken {
    fn wake(&self, _: &mut dyn Iterator<Item = u64>) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// A simulated probe answers its calls itself; nothing comes here.
    fn answer(&self, _: &mut dyn Iterator<Item = Answer>) {}
}

/// Calls a live probe with the context of a virtual call.
fn live_sampler(
    spec: &Spec,
    policy: &Policy,
) -> impl FnMut(&mut dyn Probe, &ProbeCall) -> Result<Observation, ProbeError> {
    let cancel = CancelToken::new();
    let output_cap = spec.output_cap.unwrap_or(policy.output_cap);
    move |probe, call| {
        let ctx = ProbeContext {
            sample: call.sample,
            elapsed: call.elapsed,
            budget: call.budget,
            cancel: cancel.clone(),
            output_cap,
        };
        probe.sample(&ctx)
    }
}

/// The virtual-time loop: `answer` is asked for each probe call and says
/// how long the call takes (`None`: it never returns), what it answers and
/// whether the probe asked for the next call at once; `report` gets each
/// progress report when the wait makes it.
fn drive(
    spec: &Spec,
    policy: &Policy,
    mode: ProbeMode,
    controls: &[(Duration, Control)],
    report: &mut dyn FnMut(&Progress),
    mut answer: impl FnMut(&ProbeCall) -> (Option<Duration>, Result<Observation, ProbeError>, bool),
) -> Result<Simulation, SpecError> {
    let mut machine = Machine::new(spec, policy, mode, Duration::ZERO)?;
    let mut controls = controls.to_vec();
    controls.sort_by_key(|(at, _)| *at);
    let mut controls = controls.into_iter().peekable();
    let mut now = Duration::ZERO;
    let mut call_starts_ms = Vec::new();
    let mut progress = Vec::new();
    // The call in flight: when it answers (None: never) and what.
    let mut in_flight: Option<(Option<Duration>, Result<Observation, ProbeError>)> = None;
    let mut step = machine.start(now, Conditions::compile(spec)?);
    loop {
        match step {
            Step::Done(ending) => {
                return Ok(Simulation {
                    result: machine.result(ending),
                    call_starts_ms,
                    progress,
                })
            }
            Step::Probe(call) => {
                call_starts_ms.push(now.as_millis() as u64);
                let (takes, result, woken) = answer(&call);
                in_flight = Some((takes.map(|t| now.saturating_add(t)), result));
                if woken {
                    machine.on_wake(now);
                }
            }
            Step::Idle => {}
        }
        let answer_at = in_flight.as_ref().and_then(|(at, _)| *at);
        let control_at = controls.peek().map(|(at, _)| *at);
        let timer_at = machine.next_timer();
        // Ties: an answer first, then a host action, then the timer.
        let next = [answer_at, control_at, timer_at]
            .into_iter()
            .flatten()
            .min();
        let Some(next) = next else {
            unreachable!("a running wait always has a deadline");
        };
        now = next;
        step = if answer_at == Some(next) {
            let (_, answer) = in_flight.take().expect("an answer is due");
            let step = machine.on_probe(now, answer);
            if let Some(made) = machine.take_progress() {
                report(&made);
                progress.push(made);
            }
            step
        } else if control_at == Some(next) {
            let (_, control) = controls.next().expect("a control is due");
            match control {
                Control::Cancel => machine.on_cancel(now),
                Control::Wake => machine.on_wake(now),
            }
        } else {
            machine.on_timer(now)
        };
    }
}

impl Simulation {
    /// `{result, call_starts_ms, progress}`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "result": self.result.to_json(),
            "call_starts_ms": self.call_starts_ms,
            "progress": self.progress,
        })
    }
}

/// The tmux profiles' vectors: a scripted tmux server shows the pane each
/// step describes, and the profile's own probe reads it.
#[cfg(unix)]
pub(crate) mod pane {
    use super::*;
    use crate::tmux::scripted::{PaneAnswer, PaneState, ScriptedServer};

    /// A pane script's steps and host actions.
    type PaneScript = (Vec<PaneStep>, Vec<(Duration, Control)>);

    /// One probe call: how long it takes and what the pane shows while it
    /// runs (`None`: the call never returns).
    struct PaneStep {
        takes: Duration,
        shows: Option<PaneAnswer>,
        typed: Option<String>,
    }

    const ANSWERS: &str = "the pane probe works out its answer from the pane: describe the pane";

    /// Most rows a scripted pane's screen, and its history, may have.
    const MAX_ROWS: usize = 10_000;

    fn pane_state(i: usize, step: RawStep) -> Result<PaneState, SpecError> {
        let too_many = |field: &str| {
            SpecError::new(
                format!("script.steps[{i}].{field}"),
                crate::error::Rule::OutOfRange,
                format!("a scripted pane has at most {MAX_ROWS} rows of screen and of history"),
            )
        };
        let mut screen = step.screen.unwrap_or_default();
        let height = step.height.unwrap_or(screen.len()).max(screen.len()).max(1);
        if height > MAX_ROWS {
            return Err(too_many("height"));
        }
        screen.resize(height, String::new());
        let history = step.history.unwrap_or_default();
        let history_size = step.history_size.unwrap_or(0).max(history.len() as u64);
        if history_size > MAX_ROWS as u64 {
            return Err(too_many("history_size"));
        }
        let last_written = screen.iter().rposition(|r| !r.trim().is_empty());
        let cursor_y = step.cursor_row.unwrap_or(last_written.unwrap_or(0) as u32);
        if cursor_y as usize >= height {
            return Err(SpecError::new(
                format!("script.steps[{i}].cursor_row"),
                crate::error::Rule::OutOfRange,
                "the cursor is on a row of the screen",
            ));
        }
        Ok(PaneState {
            pane_id: step.pane_id.unwrap_or_else(|| "%1".into()),
            history_size,
            history,
            screen,
            history_limit: step.history_limit.unwrap_or(2000),
            cursor_y,
            pid: step.pid.unwrap_or(1000),
            dead: step.dead,
            alternate: step.alternate_screen,
        })
    }

    fn pane_steps(script: &serde_json::Value) -> Result<PaneScript, SpecError> {
        let raw = raw_script(script)?;
        if raw.mode.is_some() {
            return Err(SpecError::new(
                "script.mode",
                crate::error::Rule::UnknownField,
                "the pane probe has its own mode",
            ));
        }
        if raw.steps.is_empty() {
            return Err(no_steps());
        }
        let controls = controls_of(&raw.controls);
        let mut steps = Vec::new();
        for (i, step) in raw.steps.into_iter().enumerate() {
            if let Some(field) = step.answer_field() {
                return Err(misplaced(i, field, ANSWERS));
            }
            let takes = Duration::from_millis(step.after_ms);
            let typed = step.typed.clone();
            let shows = if step.hang {
                None
            } else if let Some(message) = step.error.clone() {
                Some(PaneAnswer::Fails(message))
            } else if step.gone {
                Some(PaneAnswer::Gone)
            } else {
                Some(PaneAnswer::Shows(pane_state(i, step)?))
            };
            steps.push(PaneStep {
                takes,
                shows,
                typed,
            });
        }
        Ok((steps, controls))
    }

    /// Drives `probe` (a tmux profile's own pane probe, on `server`'s
    /// scripted tmux) through `script`'s pane timeline on virtual time.
    pub(crate) fn simulate_pane(
        spec: &Spec,
        policy: &Policy,
        probe: &mut dyn Probe,
        report: &mut dyn FnMut(&Progress),
        script: &serde_json::Value,
        server: &ScriptedServer,
    ) -> Result<Simulation, SpecError> {
        let (steps, controls) = pane_steps(script)?;
        let mut sample = live_sampler(spec, policy);
        let mut calls = 0usize;
        drive(spec, policy, probe.mode(), &controls, report, |call| {
            let step = &steps[calls.min(steps.len() - 1)];
            calls += 1;
            let Some(shows) = &step.shows else {
                return (None, Err(ProbeError::new("hung")), false);
            };
            if let (Some(text), PaneAnswer::Shows(pane)) = (&step.typed, shows) {
                server.typed(&pane.pane_id, text);
            }
            server.show(shows.clone());
            (Some(step.takes), sample(probe, call), false)
        })
    }
}

/// A vector's `policy` (`max_wait_ceiling_ms`, `output_cap_bytes`).
pub(crate) fn policy_from(value: Option<&serde_json::Value>) -> Result<Policy, SpecError> {
    let mut policy = Policy::default();
    let Some(value) = value else {
        return Ok(policy);
    };
    let field = |name: &str| -> Result<Option<u64>, SpecError> {
        match value.get(name) {
            None => Ok(None),
            Some(v) => v.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(|| {
                SpecError::new(
                    format!("policy.{name}"),
                    crate::error::Rule::NotPositive,
                    "must be a positive integer",
                )
            }),
        }
    };
    if let Some(ms) = field("max_wait_ceiling_ms")? {
        policy.max_wait_ceiling = Duration::from_millis(ms);
    }
    if let Some(bytes) = field("output_cap_bytes")? {
        policy.output_cap = usize::try_from(bytes).unwrap_or(usize::MAX);
    }
    Ok(policy)
}

/// The `ouro/wait` profile's vectors: JSON Lines event files in a
/// directory the vector's host grants, changed at virtual times while the
/// profile's own event probe reads them, on a virtual wall clock.
pub(crate) mod event_log {
    use super::*;
    use crate::error::Rule;
    use serde_json::{Map, Value};
    use std::collections::BTreeMap;
    use std::io::Write;
    use std::path::Path;

    /// Most files a vector names, and most bytes its files, or one
    /// script's edits, hold in all.
    const MAX_FILES: usize = 16;
    const MAX_BYTES: usize = 16 << 20;
    /// Most edits one script makes.
    const MAX_EDITS: usize = 1024;

    /// A line of an event file: an object is written as its JSON and a
    /// newline; a string as it is (a malformed line, a line still without
    /// its newline).
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum RawLine {
        Text(String),
        Event(Map<String, Value>),
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawEdit {
        #[serde(default)]
        at_ms: u64,
        file: String,
        #[serde(default)]
        append: Option<Vec<RawLine>>,
        #[serde(default)]
        write: Option<Vec<RawLine>>,
        #[serde(default)]
        remove: bool,
    }

    #[derive(Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    struct RawLogScript {
        #[serde(default)]
        log: Vec<RawEdit>,
        #[serde(default)]
        controls: Vec<RawControl>,
    }

    enum Change {
        /// Bytes added at the end (the file is made if missing).
        Append(Vec<u8>),
        /// The file's bytes replaced in place (same file, truncated).
        Write(Vec<u8>),
        /// The file removed.
        Remove,
    }

    struct Edit {
        at: Duration,
        file: String,
        change: Change,
    }

    /// What happens to the files while a call runs: edits in time order,
    /// each made right before the first probe call at or after its time,
    /// and host actions.
    pub(crate) struct LogScript {
        edits: Vec<Edit>,
        controls: Vec<(Duration, Control)>,
    }

    /// A vector's files before the call: names and bytes.
    pub(crate) type Files = BTreeMap<String, Vec<u8>>;

    fn deserialize<T: serde::de::DeserializeOwned>(
        value: &Value,
        field: &str,
    ) -> Result<T, SpecError> {
        serde_path_to_error::deserialize(value)
            .map_err(|e| SpecError::from_serde(format!("{field}.{}", e.path()), e.inner()))
    }

    fn bytes_of(lines: Vec<RawLine>, field: &str, used: &mut usize) -> Result<Vec<u8>, SpecError> {
        let mut bytes = Vec::new();
        for line in lines {
            match line {
                RawLine::Text(text) => bytes.extend_from_slice(text.as_bytes()),
                RawLine::Event(event) => {
                    bytes.extend_from_slice(sorted(Value::Object(event)).to_string().as_bytes());
                    bytes.push(b'\n');
                }
            }
        }
        *used = used.saturating_add(bytes.len());
        if *used > MAX_BYTES {
            return Err(SpecError::new(
                field,
                Rule::OutOfRange,
                format!("the files of a vector hold at most {MAX_BYTES} bytes in all"),
            ));
        }
        Ok(bytes)
    }

    /// `value` with every object's keys in sorted order: an event's line is
    /// the same bytes whatever order a runner's JSON library gave its keys.
    fn sorted(value: Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(String, Value)> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
            other => other,
        }
    }

    /// A file's name: one plain name inside the vector's directory, on
    /// every platform (not a Windows device such as `NUL` or `COM1.log`,
    /// which Windows opens instead of a file, nor a name ending in a dot
    /// or a space, which it changes).
    fn file_name(name: &str, field: &str) -> Result<String, SpecError> {
        const DEVICES: [&str; 6] = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];
        let stem = name.split('.').next().unwrap_or_default().trim_end();
        let numbered = |prefix: &str| {
            stem.len() == 4
                && stem[..3].eq_ignore_ascii_case(prefix)
                && stem[3..].chars().all(|c| ('1'..='9').contains(&c))
        };
        let device = DEVICES.iter().any(|d| stem.eq_ignore_ascii_case(d))
            || numbered("COM")
            || numbered("LPT");
        let plain = !name.is_empty()
            && name.len() <= 255
            && !name.ends_with(['.', ' '])
            && !device
            && !name.contains(['/', '\\', '\0', ':']);
        if plain {
            Ok(name.to_string())
        } else {
            Err(SpecError::new(
                field,
                Rule::OutOfRange,
                format!("{name:?} is not a plain file name in the vector's directory"),
            ))
        }
    }

    /// Reads a vector's `files`: `{name: [line, ...]}`.
    pub(crate) fn files(value: &Value, field: &str) -> Result<Files, SpecError> {
        let raw: BTreeMap<String, Vec<RawLine>> = deserialize(value, field)?;
        if raw.len() > MAX_FILES {
            return Err(SpecError::new(
                field,
                Rule::OutOfRange,
                format!("a vector writes at most {MAX_FILES} files"),
            ));
        }
        let mut used = 0;
        raw.into_iter()
            .map(|(name, lines)| {
                let at = format!("{field}.{name}");
                Ok((file_name(&name, &at)?, bytes_of(lines, &at, &mut used)?))
            })
            .collect()
    }

    /// Reads a log script, `{log: [{at_ms, file, append | write | remove}],
    /// controls: [{at_ms, action}]}` (absent: nothing happens).
    pub(crate) fn log_script(value: Option<&Value>, field: &str) -> Result<LogScript, SpecError> {
        let raw: RawLogScript = match value {
            None => RawLogScript::default(),
            Some(value) => deserialize(value, field)?,
        };
        if raw.log.len() > MAX_EDITS {
            return Err(SpecError::new(
                format!("{field}.log"),
                Rule::OutOfRange,
                format!("a script makes at most {MAX_EDITS} edits"),
            ));
        }
        let mut used = 0;
        let mut edits = Vec::new();
        for (i, edit) in raw.log.into_iter().enumerate() {
            let at = format!("{field}.log[{i}]");
            let file = file_name(&edit.file, &format!("{at}.file"))?;
            let change = match (edit.append, edit.write, edit.remove) {
                (Some(lines), None, false) => {
                    Change::Append(bytes_of(lines, &format!("{at}.append"), &mut used)?)
                }
                (None, Some(lines), false) => {
                    Change::Write(bytes_of(lines, &format!("{at}.write"), &mut used)?)
                }
                (None, None, true) => Change::Remove,
                _ => {
                    return Err(SpecError::new(
                        at,
                        Rule::Conflict,
                        "an edit does one of append, write or remove",
                    ))
                }
            };
            edits.push(Edit {
                at: Duration::from_millis(edit.at_ms),
                file,
                change,
            });
        }
        // Stable: edits at the same time happen in the order listed.
        edits.sort_by_key(|e| e.at);
        Ok(LogScript {
            edits,
            controls: controls_of(&raw.controls),
        })
    }

    /// Refuses a vector whose files and scripts' edits name more than
    /// [`MAX_FILES`] files in all.
    pub(crate) fn check_file_count(files: &Files, scripts: &[&LogScript]) -> Result<(), SpecError> {
        let edited = scripts.iter().flat_map(|s| s.edits.iter().map(|e| &e.file));
        let names: std::collections::BTreeSet<&String> = files.keys().chain(edited).collect();
        if names.len() > MAX_FILES {
            return Err(SpecError::new(
                "files",
                Rule::OutOfRange,
                format!("a vector writes at most {MAX_FILES} files, its scripts' included"),
            ));
        }
        Ok(())
    }

    fn unwritable(what: &str, e: std::io::Error) -> SpecError {
        SpecError::new(
            "files",
            Rule::Unsupported,
            format!("cannot {what} in the vector's directory: {e}"),
        )
    }

    /// Writes `files` into `dir`.
    pub(crate) fn write_files(dir: &Path, files: &Files) -> Result<(), SpecError> {
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes).map_err(|e| unwritable("write a file", e))?;
        }
        Ok(())
    }

    impl Edit {
        fn apply(&self, dir: &Path) -> Result<(), SpecError> {
            let path = dir.join(&self.file);
            let open = |append: bool| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(append)
                    .write(true)
                    .truncate(!append)
                    .open(&path)
            };
            match &self.change {
                Change::Append(bytes) => open(true).and_then(|mut f| f.write_all(bytes)),
                Change::Write(bytes) => open(false).and_then(|mut f| f.write_all(bytes)),
                Change::Remove => match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                },
            }
            .map_err(|e| unwritable("change a file", e))
        }
    }

    /// Drives `probe` (`ouro/wait`'s own event probe, reading `dir`)
    /// through `script` on virtual time: before each probe call, the edits
    /// due by then are made and `now` is told the call's virtual time (to
    /// set the wall clock the probe reads).
    pub(crate) fn simulate_log(
        spec: &Spec,
        policy: &Policy,
        probe: &mut dyn Probe,
        report: &mut dyn FnMut(&Progress),
        script: &LogScript,
        dir: &Path,
        now: &mut dyn FnMut(Duration),
    ) -> Result<Simulation, SpecError> {
        let mut pending = script.edits.iter().peekable();
        let mut failed = None;
        let mut before = |at: Duration| {
            while let Some(edit) = pending.next_if(|e| e.at <= at) {
                if let Err(e) = edit.apply(dir) {
                    failed.get_or_insert(e);
                }
            }
            now(at);
        };
        let sim = simulate_live(spec, policy, probe, &script.controls, report, &mut before)?;
        match failed {
            Some(e) => Err(e),
            None => Ok(sim),
        }
    }
}
