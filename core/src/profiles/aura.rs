//! AURA's `wait_for`: poll an MCP tool until a condition holds
//! (`seeds/aura-wait_for.md`).

use super::builtin_tools::Builtin;
use super::tool::{is_unknown_tool, Host, ToolCaller, ToolError};
use super::{schema, CallSlot, Prepared, Report};
use crate::error::{Rule, SpecError};
use crate::pattern::Pattern;
use crate::policy::{Policy, DEFAULT_OUTPUT_CAP};
use crate::probe::{probe_fn, Observation, ProbeContext, ProbeError};
use crate::process::start_turns;
use crate::result::{Outcome, WaitResult};
use crate::spec::{Condition, Spec};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub(crate) const PROFILE: &str = "aura/wait_for";

/// The ceiling AURA clamps `max_wait_sec` to.
const CEILING_SEC: u64 = 300;
const DEFAULT_POLL_SEC: u64 = 2;
const DEFAULT_MAX_WAIT_SEC: u64 = 120;

/// AURA's own description of the tool, word for word: the profile is a
/// drop-in, so a model sees what it would see in AURA.
const DESCRIPTION: &str = "Poll an MCP tool repeatedly until a stop condition you supply holds, \
instead of sleeping blind. Give a probe (an MCP-provided tool, with its arguments), a stop condition \
(a regex the output must match or stop matching, or a quiet period after which unchanged output counts \
as settled), and optional poll/bound seconds. Returns the stop reason, the last probe output, elapsed \
seconds, and the sample count. A timeout is a normal result carrying the last observation, not an error.";

/// AURA's tool definition: its description and parameter schema as its
/// code has them (`until` a `oneOf` of three single-key objects, a probe
/// needing `tool` and `args`), with the MCP output schema and annotations.
pub(crate) fn definition() -> Value {
    json!({
        "name": "wait_for",
        "title": "Wait for a condition",
        "description": DESCRIPTION,
        "inputSchema": schema(include_str!("schemas/aura_wait_for.input.json")),
        "outputSchema": schema(include_str!("schemas/aura_wait_for.output.json")),
        "annotations": schema(include_str!("schemas/aura_wait_for.annotations.json")),
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
                crate::error::cut_quote(format!(
                    "unknown field `{key}`, expected one of: {}",
                    known.join(", ")
                )),
            ))
        }
        None => Ok(()),
    }
}

/// A whole number of seconds, as AURA reads it: an unsigned integer
/// (`2.0` is refused, as AURA's decoder refuses it); zero is checked later.
fn seconds(value: Option<&Value>, field: &str) -> Result<Option<u64>, ToolError> {
    match value {
        None => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or_else(|| {
            invalid(
                field,
                Rule::WrongType,
                format!("{field} must be a whole number of seconds, got {value}"),
            )
        }),
    }
}

/// An optional top-level number of seconds: AURA decodes it as an
/// `Option`, so `null` is the same as leaving it out.
fn optional_seconds(top: &Map<String, Value>, field: &str) -> Result<Option<u64>, ToolError> {
    seconds(top.get(field).filter(|v| !v.is_null()), field)
}

/// At least one second, or AURA's "must be at least 1".
fn at_least_one(value: u64, field: &str) -> Result<u64, ToolError> {
    if value == 0 {
        return Err(invalid(
            field,
            Rule::NotPositive,
            format!("{field} must be at least 1"),
        ));
    }
    Ok(value)
}

/// A regex as AURA compiles it: the `regex` crate's default flags (`^`
/// and `$` at the ends of the whole output, not of lines), and an empty
/// regex matches anything. The syntax is checked here in linear time; the
/// wait compiles it in its own time.
fn regex(value: &Value, field: &str) -> Result<Pattern, ToolError> {
    let text = value
        .as_str()
        .ok_or_else(|| invalid(field, Rule::WrongType, format!("{field} must be a string")))?;
    regex_syntax::Parser::new().parse(text).map_err(|e| {
        invalid(
            field,
            Rule::InvalidRegex,
            format!("condition regex is invalid: {e}"),
        )
    })?;
    // The engine's patterns are multi-line; turn that off for the whole
    // pattern (a flag group the text cannot close).
    Ok(Pattern::regex(format!("(?-m){text}")))
}

/// The arguments as AURA decodes them, before its rules are checked.
struct Arguments<'a> {
    tool: &'a str,
    tool_args: &'a Value,
    until: (&'a str, &'a Value),
    poll_sec: Option<u64>,
    max_wait_sec: Option<u64>,
}

/// The shape of the arguments: fields, their types, unknown fields.
fn decode(args: &Value) -> Result<Arguments<'_>, ToolError> {
    let top = object(args, "")?;
    reject_unknown(top, "", &["probe", "until", "poll_sec", "max_wait_sec"])?;
    let probe = object(top.get("probe").ok_or_else(|| missing("probe"))?, "probe")?;
    reject_unknown(probe, "probe", &["tool", "args"])?;
    let tool = match probe.get("tool") {
        Some(Value::String(tool)) => tool,
        Some(_) => {
            return Err(invalid(
                "probe.tool",
                Rule::WrongType,
                "probe.tool must be a string",
            ))
        }
        None => return Err(missing("probe.tool")),
    };
    let tool_args = probe.get("args").ok_or_else(|| missing("probe.args"))?;
    let until = object(top.get("until").ok_or_else(|| missing("until"))?, "until")?;
    reject_unknown(until, "until", &["matches", "not_matches", "quiet_for_sec"])?;
    let mut conditions = until.iter();
    let (Some((key, value)), None) = (conditions.next(), conditions.next()) else {
        return Err(invalid(
            "until",
            if until.is_empty() {
                Rule::Empty
            } else {
                Rule::Conflict
            },
            "until needs exactly one of matches, not_matches, quiet_for_sec",
        ));
    };
    Ok(Arguments {
        tool,
        tool_args,
        until: (key.as_str(), value),
        poll_sec: optional_seconds(top, "poll_sec")?,
        max_wait_sec: optional_seconds(top, "max_wait_sec")?,
    })
}

/// AURA's rules, in its order: the probe, the condition, the poll
/// interval, the bound (clamped to the ceiling first), then the interval
/// and the quiet window against the clamped bound.
pub(crate) fn prepare(args: &Value, host: &Host) -> Result<Prepared, ToolError> {
    let decoded = decode(args)?;
    if decoded.tool.is_empty() {
        return Err(invalid(
            "probe.tool",
            Rule::Empty,
            "probe.tool must be a non-empty tool name",
        ));
    }
    let Value::Object(_) = decoded.tool_args else {
        return Err(invalid(
            "probe.args",
            Rule::WrongType,
            "probe.args must be a JSON object",
        ));
    };
    let (key, value) = decoded.until;
    let field = format!("until.{key}");
    let condition = match key {
        "matches" => Condition::Matches(regex(value, &field)?),
        "not_matches" => Condition::NotMatches(regex(value, &field)?),
        _ => {
            let quiet = seconds(Some(value), &field)?.unwrap_or_default();
            Condition::QuietFor(Duration::from_secs(at_least_one(quiet, &field)?))
        }
    };
    let poll_sec = at_least_one(decoded.poll_sec.unwrap_or(DEFAULT_POLL_SEC), "poll_sec")?;
    let max_wait_sec = at_least_one(
        decoded.max_wait_sec.unwrap_or(DEFAULT_MAX_WAIT_SEC),
        "max_wait_sec",
    )?;
    let ceiling = host
        .max_wait_ceiling
        .unwrap_or(Duration::from_secs(CEILING_SEC));
    let poll = Duration::from_secs(poll_sec);
    let bound = Duration::from_secs(max_wait_sec).min(ceiling);
    let (bound_sec, ceiling_sec) = (bound.as_secs_f64(), ceiling.as_secs_f64());
    if poll >= bound {
        return Err(invalid(
            "poll_sec",
            Rule::IntervalNotBelowLimit,
            format!(
                "poll_sec {poll_sec}s must be strictly less than max_wait_sec {bound_sec}s; the loop \
                 could never take a second sample inside the bound (max_wait_sec is capped at {ceiling_sec}s)"
            ),
        ));
    }
    if let Condition::QuietFor(quiet) = condition {
        if quiet > bound {
            return Err(invalid(
                &field,
                Rule::QuietAboveLimit,
                format!(
                    "quiet_for_sec {}s exceeds max_wait_sec {bound_sec}s; the condition could never \
                     hold (max_wait_sec is capped at {ceiling_sec}s)",
                    quiet.as_secs()
                ),
            ));
        }
    }
    let mut spec = Spec::new(condition)
        .interval(poll)
        .max_wait(Duration::from_secs(max_wait_sec));
    spec.sample_at_deadline = true;
    spec.quiet_on_plan = true;
    spec.validate()?;
    let policy = Policy::default()
        .max_wait_ceiling(ceiling)
        .output_cap(DEFAULT_OUTPUT_CAP);
    let tool = decoded.tool.to_string();
    let tool_args = decoded.tool_args.clone();
    let (tools, starts): (Arc<dyn ToolCaller>, _) = match host.tools.clone() {
        Some(tools) => (tools, None),
        None => {
            let builtin = Builtin::prepare(&tool, &tool_args, &host.grants)?;
            let starts = builtin.start_log();
            (Arc::new(builtin), starts)
        }
    };
    let probe_tool = tool.clone();
    // The size of the last answer, for AURA's over-the-cap error.
    let last_bytes = Arc::new(AtomicUsize::new(0));
    let seen_bytes = last_bytes.clone();
    let probe = probe_fn(move |ctx: &ProbeContext| {
        let text = tools.call_tool(&probe_tool, &tool_args, ctx)?;
        seen_bytes.store(text.len(), Ordering::Relaxed);
        Ok::<_, ProbeError>(Observation::text(text))
    })
    .named(tool.clone());
    Ok(Prepared {
        slot: CallSlot::uncounted(),
        spec,
        probe: Box::new(probe),
        policy,
        render: Box::new(move |result| {
            let starved = starts
                .as_ref()
                .and_then(|log| crate::probe::starved_notice(&log.read(), start_turns(), result));
            render(
                result,
                &tool,
                last_bytes.load(Ordering::Relaxed),
                starved.as_deref(),
            )
        }),
        // AURA sends no progress of its own.
        report: Report::elapsed_of(bound),
    })
}

pub(super) fn missing(field: &str) -> ToolError {
    invalid(field, Rule::MissingField, format!("{field} is required"))
}

/// AURA's result, or the runtime error AURA raises, naming the probe tool
/// and the sample as AURA does; `last_bytes` is the size of the last
/// answer of the probe tool. `starved` says why the built-in
/// `run_command` gave nothing, when its command waited for a start turn
/// (see `process/starts.rs`) rather than hung.
fn render(
    result: &WaitResult,
    tool: &str,
    last_bytes: usize,
    starved: Option<&str>,
) -> Result<Value, ToolError> {
    let reason = match result.outcome {
        Outcome::Matched => "matched",
        Outcome::Settled => "settled",
        Outcome::Timeout => "timeout",
        Outcome::Cancelled => return Err(ToolError::Runtime("wait_for was cancelled".into())),
        Outcome::ProbeError => {
            // A failed call ends the wait: it is the sample after the last.
            let message = match &result.probe.last_error {
                Some(error) if is_unknown_tool(error) => {
                    format!("probe tool '{tool}' is not exposed by any connected MCP server")
                }
                Some(error) => format!(
                    "probe tool '{tool}' failed on sample {}: {error}",
                    result.samples + 1
                ),
                None => {
                    let bound = result.effective_max_wait_ms / 1000;
                    match starved {
                        // Not hanging: this process's other commands held
                        // every start turn.
                        Some(why) => format!(
                            "probe tool '{tool}' returned nothing within max_wait_sec {bound}s: {why}"
                        ),
                        None => format!(
                            "probe tool '{tool}' returned nothing within max_wait_sec {bound}s; the \
                             probe itself is hanging, so no observation is available"
                        ),
                    }
                }
            };
            return Err(ToolError::Runtime(message));
        }
        // The only error the engine ends an AURA wait with: an answer
        // over the cap, which counts as a sample.
        Outcome::Error if last_bytes > DEFAULT_OUTPUT_CAP => {
            return Err(ToolError::Runtime(format!(
                "probe tool '{tool}' returned {last_bytes} bytes on sample {}, over the \
                 {DEFAULT_OUTPUT_CAP}-byte cap; narrow the probe so it returns less",
                result.samples
            )));
        }
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
