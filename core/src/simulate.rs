//! Virtual time: the wait machine driven by a scripted probe, so timing
//! behaviour is exact, fast and never flaky. The shared test vectors of
//! every language run through this. [`Sampler`] feeds observations to a
//! wait by hand, for benchmarks of what a sample costs.

use crate::cancel::CancelToken;
use crate::error::SpecError;
use crate::machine::{Conditions, Machine, ProbeCall, Progress, Step};
use crate::policy::Policy;
use crate::probe::{Observation, Probe, ProbeContext, ProbeError, ProbeMode};
use crate::result::WaitResult;
use crate::spec::Spec;
use serde::Deserialize;
use std::time::Duration;

pub use crate::sampler::Sampler;

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
    /// vector files.
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
    pub fn from_json(text: &str) -> Result<Self, SpecError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| SpecError::from_serde(String::new(), &e))?;
        Self::from_value(&value)
    }

    /// Reads the JSON form from a decoded value.
    pub fn from_value(value: &serde_json::Value) -> Result<Self, SpecError> {
        let raw: RawScript = serde_path_to_error::deserialize(value)
            .map_err(|e| SpecError::from_serde(format!("script.{}", e.path()), e.inner()))?;
        let mode = match raw.mode.as_deref() {
            None | Some("snapshot") => ProbeMode::Snapshot,
            Some("stream") => ProbeMode::Stream,
            Some(other) => {
                return Err(SpecError::new(
                    "script.mode",
                    crate::error::Rule::UnknownField,
                    format!("unknown mode `{other}`, expected snapshot or stream"),
                ))
            }
        };
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
        let controls = raw
            .controls
            .into_iter()
            .map(|c| (Duration::from_millis(c.at_ms), c.action))
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
    if script.steps.is_empty() {
        return Err(SpecError::new(
            "script.steps",
            crate::error::Rule::Empty,
            "needs at least one step",
        ));
    }
    let mut calls = 0usize;
    drive(spec, policy, script.mode, &script.controls, |_| {
        let scripted = &script.steps[calls.min(script.steps.len() - 1)];
        calls += 1;
        match &scripted.answer {
            Some(answer) => (Some(scripted.takes), answer.clone()),
            None => (None, Err(ProbeError::new("hung"))),
        }
    })
}

/// Runs a wait on virtual time with a live probe: each call answers at
/// once (it takes no virtual time), sees the virtual `elapsed` and `budget`
/// in its context, and `controls` act at their virtual times. For hosts
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
    let cancel = CancelToken::new();
    let output_cap = spec.output_cap.unwrap_or(policy.output_cap);
    drive(spec, policy, probe.mode(), controls, |call| {
        let ctx = ProbeContext {
            sample: call.sample,
            elapsed: call.elapsed,
            budget: call.budget,
            cancel: cancel.clone(),
            output_cap,
        };
        (Some(Duration::ZERO), probe.sample(&ctx))
    })
}

/// The virtual-time loop: `answer` is asked for each probe call and says
/// how long the call takes (`None`: it never returns) and what it answers.
fn drive(
    spec: &Spec,
    policy: &Policy,
    mode: ProbeMode,
    controls: &[(Duration, Control)],
    mut answer: impl FnMut(&ProbeCall) -> (Option<Duration>, Result<Observation, ProbeError>),
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
                let (takes, result) = answer(&call);
                in_flight = Some((takes.map(|t| now.saturating_add(t)), result));
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
            progress.extend(machine.take_progress());
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

/// Runs one test vector (JSON) on virtual time. A vector names either a
/// `spec` (with an optional `policy` of `max_wait_ceiling_ms` and
/// `output_cap_bytes`) or a `profile` with its `arguments`, plus a
/// `script`. The answer holds `result` (the engine's result JSON),
/// `call_starts_ms` and `progress`, and for a profile its `output` or its
/// `tool_error` (`code`, `field`, `rule` as [`crate::ErrorInfo`], and the tool's own `message`). Every binding runs the shared
/// vectors through this, so all languages answer identically.
///
/// ```
/// let answer = waitfor::simulate::simulate_json(&serde_json::json!({
///     "spec": {"until": {"matches": "ok"}, "interval_ms": 100},
///     "script": {"steps": [{"text": "no"}, {"text": "ok"}]}
/// })).unwrap();
/// assert_eq!(answer["result"]["elapsed_ms"], 100);
/// ```
pub fn simulate_json(vector: &serde_json::Value) -> Result<serde_json::Value, SpecError> {
    use crate::profiles::{self, Host, ToolError};
    let (spec, policy, render) = match vector.get("profile").and_then(|p| p.as_str()) {
        Some(profile) => {
            let args = vector.get("arguments").cloned().unwrap_or_default();
            match profiles::prepare(profile, &args, &Host::default()) {
                Ok(prepared) => (prepared.spec, prepared.policy, Some(prepared.render)),
                Err(err) => return Ok(serde_json::json!({ "tool_error": tool_error_json(&err) })),
            }
        }
        None => {
            let spec = Spec::from_value(vector.get("spec").unwrap_or(&serde_json::Value::Null))?;
            (spec, policy_from(vector.get("policy"))?, None)
        }
    };
    let script = Script::from_value(vector.get("script").unwrap_or(&serde_json::Value::Null))?;
    let sim = simulate(&spec, &policy, &script)?;
    let mut answer = serde_json::json!({
        "result": sim.result.to_json(),
        "call_starts_ms": sim.call_starts_ms,
        "progress": sim.progress,
    });
    if let Some(render) = render {
        match render(&sim.result) {
            Ok(output) => answer["output"] = output,
            Err(err) => answer["tool_error"] = tool_error_json(&err),
        }
    }
    /// The error's shape, with the tool's own text (`invalid arguments:
    /// ...` in AURA's words) as an MCP tool result would carry it.
    fn tool_error_json(err: &ToolError) -> serde_json::Value {
        let mut json = crate::error::ErrorInfo::from(err).to_json();
        json["message"] = err.to_string().into();
        json
    }
    Ok(answer)
}

fn policy_from(value: Option<&serde_json::Value>) -> Result<Policy, SpecError> {
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
