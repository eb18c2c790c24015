//! AURA's `wait_for`: poll an MCP tool until a condition holds
//! (`seeds/aura-wait_for.md`).

use super::builtin_tools::Builtin;
use super::tool::{Host, ToolCaller, ToolError};
use super::Prepared;
use crate::error::{Rule, SpecError};
use crate::pattern::Pattern;
use crate::policy::{Policy, DEFAULT_OUTPUT_CAP};
use crate::probe::{probe_fn, Observation, ProbeContext, ProbeError};
use crate::result::{Outcome, WaitResult};
use crate::spec::{Condition, Spec};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

pub(crate) const PROFILE: &str = "aura/wait_for";

/// The ceiling AURA clamps `max_wait_sec` to.
const CEILING_SEC: u64 = 300;
const DEFAULT_POLL_SEC: u64 = 2;
const DEFAULT_MAX_WAIT_SEC: u64 = 120;

const DESCRIPTION: &str = "Poll an MCP tool until a condition holds, instead of sleeping for a blind fixed duration. \
Supply a `probe` (an MCP tool plus its arguments) and an `until` condition with exactly one of `matches` (regex the output must start matching), \
`not_matches` (regex it must stop matching), or `quiet_for_sec` (integer seconds of unchanged output) — prefer `matches`/`not_matches` since quiescence only proves idleness, not completion. \
The probe is re-run every `poll_sec` seconds (default 2). `max_wait_sec` (default 120) is clamped to a 300s ceiling (reported back as `effective_max_wait_sec`) and enforced independently of the probe, \
so a hung probe can't extend the wait; issue another `wait_for` after a `timeout` if you need longer. Probe output over 256 KiB fails mid-poll as a runtime error. \
A `timeout` is a normal result, not an error: it still returns `last_observation`.";

pub(crate) fn definition() -> Value {
    json!({
        "name": "wait_for",
        "title": "Wait for a condition",
        "description": DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "additionalProperties": false,
            "required": ["probe", "until"],
            "properties": {
                "probe": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["tool"],
                    "description": "The MCP tool to poll and its arguments.",
                    "properties": {
                        "tool": {"type": "string", "minLength": 1, "description": "Name of the MCP tool to call (not a built-in tool)."},
                        "args": {"type": "object", "default": {}, "description": "Arguments passed to the tool on every poll."}
                    }
                },
                "until": {
                    "type": "object",
                    "additionalProperties": false,
                    "minProperties": 1,
                    "maxProperties": 1,
                    "description": "Exactly one stop condition.",
                    "properties": {
                        "matches": {"type": "string", "minLength": 1, "description": "Regex the output must start matching."},
                        "not_matches": {"type": "string", "minLength": 1, "description": "Regex the output must stop matching."},
                        "quiet_for_sec": {"type": "integer", "minimum": 1, "description": "Seconds of unchanged output."}
                    }
                },
                "poll_sec": {"type": "integer", "minimum": 1, "default": DEFAULT_POLL_SEC, "description": "Seconds between probe runs; must be less than max_wait_sec."},
                "max_wait_sec": {"type": "integer", "minimum": 1, "default": DEFAULT_MAX_WAIT_SEC, "description": "Time bound in seconds, clamped to 300."}
            }
        },
        "outputSchema": {
            "type": "object",
            "additionalProperties": false,
            "required": ["reason", "last_observation", "elapsed_sec", "samples", "effective_max_wait_sec"],
            "properties": {
                "reason": {"enum": ["matched", "settled", "timeout"], "description": "matched: a matches or not_matches predicate held. settled: the quiet_for_sec window held. timeout: the time bound elapsed without the condition holding."},
                "last_observation": {"type": "string", "description": "The most recent probe output."},
                "elapsed_sec": {"type": "integer", "minimum": 0, "description": "Elapsed time in seconds before the wait stopped."},
                "samples": {"type": "integer", "minimum": 0, "description": "Number of probe samples taken."},
                "effective_max_wait_sec": {"type": "integer", "minimum": 1, "description": "The enforced time bound, after clamping to the 300-second ceiling."}
            }
        },
        "annotations": {
            "title": "Wait for a condition",
            "readOnlyHint": false,
            "destructiveHint": false,
            "idempotentHint": false,
            "openWorldHint": true
        }
    })
}

pub(super) fn invalid(field: &str, rule: Rule, message: impl Into<String>) -> ToolError {
    ToolError::InvalidArguments(SpecError::new(field, rule, message))
}

pub(super) fn object<'a>(
    value: &'a Value,
    field: &str,
) -> Result<&'a Map<String, Value>, ToolError> {
    value.as_object().ok_or_else(|| {
        invalid(
            field,
            Rule::WrongType,
            format!("{} must be an object", display(field)),
        )
    })
}

fn display(field: &str) -> &str {
    if field.is_empty() {
        "the arguments"
    } else {
        field
    }
}

pub(super) fn reject_unknown(
    map: &Map<String, Value>,
    field: &str,
    known: &[&str],
) -> Result<(), ToolError> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => {
            let at = if field.is_empty() {
                key.clone()
            } else {
                format!("{field}.{key}")
            };
            Err(invalid(
                &at,
                Rule::UnknownField,
                format!(
                    "unknown field `{key}`, expected one of: {}",
                    known.join(", ")
                ),
            ))
        }
        None => Ok(()),
    }
}

/// A whole number of seconds, at least 1.
fn seconds(value: Option<&Value>, field: &str, default: u64) -> Result<u64, ToolError> {
    let Some(value) = value else {
        return Ok(default);
    };
    let seconds = value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1e15)
            .map(|f| f as u64)
    });
    match seconds {
        Some(0) => Err(invalid(
            field,
            Rule::NotPositive,
            format!("{field} must not be zero"),
        )),
        Some(n) => Ok(n),
        None if value.is_number() => Err(invalid(
            field,
            Rule::WrongType,
            format!("{field} must be a positive whole number of seconds, got {value}"),
        )),
        None => Err(invalid(
            field,
            Rule::WrongType,
            format!("{field} must be an integer, got {value}"),
        )),
    }
}

fn regex(value: &Value, field: &str) -> Result<Pattern, ToolError> {
    let text = value
        .as_str()
        .ok_or_else(|| invalid(field, Rule::WrongType, format!("{field} must be a string")))?;
    let pattern = Pattern::regex(text);
    pattern.compile(field)?;
    Ok(pattern)
}

pub(crate) fn prepare(args: &Value, host: &Host) -> Result<Prepared, ToolError> {
    let top = object(args, "")?;
    reject_unknown(top, "", &["probe", "until", "poll_sec", "max_wait_sec"])?;
    let probe = object(top.get("probe").ok_or_else(|| missing("probe"))?, "probe")?;
    reject_unknown(probe, "probe", &["tool", "args"])?;
    let tool = match probe.get("tool") {
        Some(Value::String(tool)) if !tool.is_empty() => tool.clone(),
        Some(Value::String(_)) => {
            return Err(invalid(
                "probe.tool",
                Rule::Empty,
                "probe.tool must not be empty",
            ))
        }
        Some(_) => {
            return Err(invalid(
                "probe.tool",
                Rule::WrongType,
                "probe.tool must be a string",
            ))
        }
        None => return Err(missing("probe.tool")),
    };
    let tool_args = match probe.get("args") {
        None => Value::Object(Map::new()),
        Some(args @ Value::Object(_)) => args.clone(),
        Some(_) => {
            return Err(invalid(
                "probe.args",
                Rule::WrongType,
                "probe.args must be an object",
            ))
        }
    };
    let until = object(top.get("until").ok_or_else(|| missing("until"))?, "until")?;
    reject_unknown(until, "until", &["matches", "not_matches", "quiet_for_sec"])?;
    if until.len() != 1 {
        return Err(invalid(
            "until",
            if until.is_empty() {
                Rule::Empty
            } else {
                Rule::Conflict
            },
            "until needs exactly one of matches, not_matches, quiet_for_sec",
        ));
    }
    let poll_sec = seconds(top.get("poll_sec"), "poll_sec", DEFAULT_POLL_SEC)?;
    let max_wait_sec = seconds(
        top.get("max_wait_sec"),
        "max_wait_sec",
        DEFAULT_MAX_WAIT_SEC,
    )?;
    let condition = if let Some(v) = until.get("matches") {
        Condition::Matches(regex(v, "until.matches")?)
    } else if let Some(v) = until.get("not_matches") {
        Condition::NotMatches(regex(v, "until.not_matches")?)
    } else {
        let quiet = seconds(until.get("quiet_for_sec"), "until.quiet_for_sec", 0)?;
        if quiet > max_wait_sec {
            return Err(invalid(
                "until.quiet_for_sec",
                Rule::QuietAboveLimit,
                format!("quiet_for_sec ({quiet}) must not exceed max_wait_sec ({max_wait_sec})"),
            ));
        }
        Condition::QuietFor(Duration::from_secs(quiet))
    };
    if poll_sec >= max_wait_sec {
        return Err(invalid(
            "poll_sec",
            Rule::IntervalNotBelowLimit,
            format!("poll_sec ({poll_sec}) must be less than max_wait_sec ({max_wait_sec})"),
        ));
    }
    let spec = Spec::new(condition)
        .interval(Duration::from_secs(poll_sec))
        .max_wait(Duration::from_secs(max_wait_sec));
    spec.validate()?;
    let policy = Policy::default()
        .max_wait_ceiling(
            host.max_wait_ceiling
                .unwrap_or(Duration::from_secs(CEILING_SEC)),
        )
        .output_cap(DEFAULT_OUTPUT_CAP);
    let tools: Arc<dyn ToolCaller> = match host.tools.clone() {
        Some(tools) => tools,
        None => Arc::new(Builtin::prepare(&tool, &tool_args, &host.grants)?),
    };
    let probe_tool = tool.clone();
    let probe = probe_fn(move |ctx: &ProbeContext| {
        let text = tools.call_tool(&probe_tool, &tool_args, ctx)?;
        Ok::<_, ProbeError>(Observation::text(text))
    })
    .named(tool)
    // Host tools run anything: keep them off the scheduler thread.
    .blocking();
    Ok(Prepared {
        spec,
        probe: Box::new(probe),
        policy,
        render: Box::new(render),
    })
}

pub(super) fn missing(field: &str) -> ToolError {
    invalid(field, Rule::MissingField, format!("{field} is required"))
}

/// AURA's result, or the runtime error AURA raises.
pub(crate) fn render(result: &WaitResult) -> Result<Value, ToolError> {
    let reason = match result.outcome {
        Outcome::Matched => "matched",
        Outcome::Settled => "settled",
        Outcome::Timeout => "timeout",
        Outcome::Cancelled => return Err(ToolError::Runtime("wait_for was cancelled".into())),
        _ => {
            let why = result
                .error
                .clone()
                .unwrap_or_else(|| result.outcome.as_str().to_string());
            return Err(ToolError::Runtime(format!("wait_for failed: {why}")));
        }
    };
    Ok(json!({
        "reason": reason,
        "last_observation": result.last_observation,
        "elapsed_sec": result.elapsed_ms / 1000,
        "samples": result.samples,
        "effective_max_wait_sec": result.effective_max_wait_ms / 1000,
    }))
}
