//! libtmux-mcp's `wait_for_text`: wait for new output in a tmux pane
//! (`seeds/tmux-python-wait_for_text.md`).
//!
//! Fresh output only (the pane probe's anchor), `patterns` or any new
//! output, `stop` markers that win a tie, the alternate screen reported,
//! and a timeout clamped by the server's ceiling
//! ([`ceiling_from_env`]: `LIBTMUX_MCP_WAIT_MAX_SECONDS`, default 30 s,
//! kept within 1..=120 s).

use super::aura::{invalid, object, reject_unknown};
use super::tool::{Host, ToolError};
use super::Prepared;
use crate::error::Rule;
use crate::pattern::Pattern;
use crate::policy::{Policy, DEFAULT_OUTPUT_CAP};
use crate::result::{tail_of_lines, Outcome, WaitResult};
use crate::spec::{Condition, Spec};
use crate::tmux::{PaneProbe, PaneReportHandle, PaneTarget, Tmux};
use serde_json::{json, Map, Value};
use std::time::Duration;

pub(crate) const PROFILE: &str = "libtmux-mcp/wait_for_text";

/// The environment variable libtmux-mcp reads its ceiling from.
pub const CEILING_ENV: &str = "LIBTMUX_MCP_WAIT_MAX_SECONDS";
const CEILING_DEFAULT: f64 = 30.0;
const CEILING_FLOOR: f64 = 1.0;
const CEILING_LIMIT: f64 = 120.0;
const TAIL_LINES: usize = 20;
const TAIL_BYTES: usize = 2_000;
/// Longest wait or interval a number may ask for, so that any finite
/// number converts to a duration (the ceiling is far below it anyway).
const LONGEST: f64 = 1e9;

const DESCRIPTION: &str = "Wait for NEW output in a tmux pane, then return.\n\n\
Polls until one of patterns appears on a line written after this call starts, one of stop appears (immediate failure exit), or the timeout expires. \
Pass patterns=null to wait for any new output at all. Use this instead of polling capture_pane in a loop.\n\n\
Pre-existing scrollback is never matched, and neither is paint left below the cursor at entry — only rows written after the call began count. \
If a pattern was already on screen the result says so via matched_at_entry.\n\n\
Last resort: reserve for output you did not author. Commands you send are AUTHORED — use run_command (returns exit status) or compose ; tmux wait-for -S <channel> with wait_for_channel instead, both cheaper and exact. \
For unattributable recurring prompts or background log lines, bracket your own command with a unique sentinel (cmd; echo __WAIT_$RANDOM__) and wait for that.\n\n\
stop is the cheap way to avoid burning the whole budget: pass the failure markers you already know (\"error:\", \"FAILED\", \"Traceback\") and a failed run returns in milliseconds instead of at the ceiling.\n\n\
The server caps timeout. An over-large value is not an error — the wait returns at the ceiling and reports effective_timeout.";

pub(crate) fn definition() -> Value {
    json!({
        "name": "wait_for_text",
        "title": "Wait for new pane output",
        "description": DESCRIPTION,
        "inputSchema": input_schema(),
        "outputSchema": output_schema(),
        "annotations": serde_json::from_str::<Value>(include_str!("schemas/libtmux_mcp_wait_for_text.annotations.json")).expect("valid JSON"),
    })
}

/// The seed's input schema.
pub(crate) fn input_schema() -> Value {
    serde_json::from_str(include_str!("schemas/libtmux_mcp_wait_for_text.input.json"))
        .expect("valid JSON")
}

/// The seed's output schema.
pub(crate) fn output_schema() -> Value {
    serde_json::from_str(include_str!(
        "schemas/libtmux_mcp_wait_for_text.output.json"
    ))
    .expect("valid JSON")
}

/// The ceiling as libtmux-mcp resolves `LIBTMUX_MCP_WAIT_MAX_SECONDS`:
/// unset, unparsable or not finite gives 30 s; anything else is kept
/// within 1..=120 s.
///
/// ```
/// use waitfor::profiles::libtmux_mcp_ceiling;
/// assert_eq!(libtmux_mcp_ceiling(None), 30.0);
/// assert_eq!(libtmux_mcp_ceiling(Some("5")), 5.0);
/// assert_eq!(libtmux_mcp_ceiling(Some("500")), 120.0);
/// assert_eq!(libtmux_mcp_ceiling(Some("0.1")), 1.0);
/// assert_eq!(libtmux_mcp_ceiling(Some("soon")), 30.0);
/// ```
pub fn ceiling_from_env(value: Option<&str>) -> f64 {
    match value.map(|v| v.trim().parse::<f64>()) {
        Some(Ok(v)) if v.is_finite() => v.clamp(CEILING_FLOOR, CEILING_LIMIT),
        _ => CEILING_DEFAULT,
    }
}

fn number(map: &Map<String, Value>, field: &str, default: f64) -> Result<f64, ToolError> {
    match map.get(field) {
        None => Ok(default),
        Some(v) => v.as_f64().ok_or_else(|| {
            invalid(
                field,
                Rule::WrongType,
                format!("{field} must be a number, got {v}"),
            )
        }),
    }
}

fn boolean(map: &Map<String, Value>, field: &str) -> Result<bool, ToolError> {
    match map.get(field) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(invalid(
            field,
            Rule::WrongType,
            format!("{field} must be a boolean, got {v}"),
        )),
    }
}

fn string(map: &Map<String, Value>, field: &str) -> Result<Option<String>, ToolError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(invalid(
            field,
            Rule::WrongType,
            format!("{field} must be a string or null, got {v}"),
        )),
    }
}

fn list(map: &Map<String, Value>, field: &str) -> Result<Option<Vec<String>>, ToolError> {
    let wrong = || {
        invalid(
            field,
            Rule::WrongType,
            format!("{field} must be a list of strings or null"),
        )
    };
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string).ok_or_else(wrong))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(wrong()),
    }
}

fn patterns(
    values: &[String],
    field: &str,
    regex: bool,
    match_case: bool,
) -> Result<Vec<Pattern>, ToolError> {
    values
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let at = format!("{field}[{i}]");
            if text.is_empty() {
                return Err(invalid(
                    &at,
                    Rule::Empty,
                    format!("{field} pattern must be a non-empty string"),
                ));
            }
            let p = if regex {
                Pattern::regex(text)
            } else {
                Pattern::literal(text)
            };
            let p = if match_case { p } else { p.case_insensitive() };
            p.compile(&at).map_err(|e| {
                invalid(&at, e.rule, format!("Invalid regex pattern: {}", e.message))
            })?;
            Ok(p)
        })
        .collect()
}

/// The pane a call names, in the seed's order (pane, window, session id,
/// session name, first session).
fn target(map: &Map<String, Value>) -> Result<PaneTarget, ToolError> {
    Ok(PaneTarget {
        pane_id: string(map, "pane_id")?,
        window_id: string(map, "window_id")?,
        session_id: string(map, "session_id")?,
        session_name: string(map, "session_name")?,
        target: None,
    })
}

pub(crate) fn prepare(args: &Value, host: &Host) -> Result<Prepared, ToolError> {
    let map = object(args, "")?;
    reject_unknown(
        map,
        "",
        &[
            "interval",
            "match_case",
            "pane_id",
            "patterns",
            "regex",
            "session_id",
            "session_name",
            "socket_name",
            "stop",
            "timeout",
            "window_id",
        ],
    )?;
    let interval = number(map, "interval", 0.05)?;
    let timeout = number(map, "timeout", 8.0)?;
    let match_case = boolean(map, "match_case")?;
    let regex = boolean(map, "regex")?;
    let wanted = list(map, "patterns")?;
    let stop = list(map, "stop")?.unwrap_or_default();
    let target = target(map)?;
    let socket_name = string(map, "socket_name")?;
    if interval < 0.01 {
        return Err(invalid(
            "interval",
            Rule::OutOfRange,
            format!("interval must be at least 0.01 s (received {interval})"),
        ));
    }
    if timeout <= 0.0 {
        return Err(invalid(
            "timeout",
            Rule::NotPositive,
            format!("timeout must be positive (received {timeout})"),
        ));
    }
    if wanted.as_ref().is_some_and(Vec::is_empty) {
        return Err(invalid(
            "patterns",
            Rule::Empty,
            "patterns must be a non-empty list, or null to wait for any new output",
        ));
    }
    let until = match &wanted {
        Some(list) => Condition::Patterns(patterns(list, "patterns", regex, match_case)?),
        None => Condition::AnyOutput,
    };
    let stop = patterns(&stop, "stop", regex, match_case)?;
    let ceiling = host
        .max_wait_ceiling
        .map(|d| d.as_secs_f64())
        .unwrap_or_else(|| ceiling_from_env(std::env::var(CEILING_ENV).ok().as_deref()));
    let effective = timeout.min(ceiling);
    let interval = Duration::from_secs_f64(interval.min(LONGEST));
    let spec = Spec::new(until.clone())
        .stop(stop)
        .interval(interval)
        .max_wait(longer_than(Duration::from_secs_f64(effective), interval));
    spec.validate()?;
    let mut tmux = Tmux::new();
    if let Some(name) = socket_name {
        host.grants
            .check_tmux_socket_name(&name)
            .map_err(|r| invalid("socket_name", Rule::NotGranted, r.0))?;
        tmux = tmux.with_socket_name(name);
    }
    let probe = PaneProbe::new(tmux, target);
    let report = probe.report();
    let policy = Policy::default()
        .max_wait_ceiling(Duration::from_secs_f64(effective))
        .output_cap(DEFAULT_OUTPUT_CAP);
    let listed = match until {
        Condition::Patterns(list) => list,
        _ => Vec::new(),
    };
    let stop_listed = spec.stop.clone();
    Ok(Prepared {
        spec,
        probe: Box::new(probe),
        policy,
        render: Box::new(move |result| render(result, &report, &listed, &stop_listed, effective)),
    })
}

/// The engine wants the interval below the limit; a seed takes any pair
/// (one poll, then the deadline). The limit asked of the engine is then
/// just above the interval and the policy's ceiling enforces `limit`.
pub(super) fn longer_than(limit: Duration, interval: Duration) -> Duration {
    limit.max(interval + Duration::from_millis(1))
}

fn capped(lines: Vec<String>) -> Vec<String> {
    tail_of_lines(lines, TAIL_LINES, TAIL_BYTES)
}

/// Every fresh line the pattern at `index` matches, as the seed lists them.
fn lines_matching(result: &WaitResult, list: &[Pattern], index: Option<usize>) -> Vec<String> {
    let Some(pattern) = index.and_then(|i| list.get(i)) else {
        return result.matched_lines.clone();
    };
    let Ok(compiled) = pattern.compile("") else {
        return result.matched_lines.clone();
    };
    result
        .last_observation
        .split('\n')
        .filter(|l| compiled.regex.is_match(l))
        .map(str::to_string)
        .collect()
}

fn render(
    result: &WaitResult,
    report: &PaneReportHandle,
    patterns: &[Pattern],
    stop: &[Pattern],
    effective: f64,
) -> Result<Value, ToolError> {
    let seen = report.get();
    let pane_id = seen
        .pane
        .as_ref()
        .map(|p| p.pane_id.clone())
        .unwrap_or_default();
    let alternate = result.alternate_screen || seen.alternate_screen;
    let (outcome, lines) = match result.outcome {
        Outcome::Matched => (
            "matched",
            lines_matching(result, patterns, result.matched_index),
        ),
        Outcome::Stopped => (
            "stopped",
            lines_matching(result, stop, result.matched_index),
        ),
        Outcome::AnyOutput => (
            "any_output",
            result
                .last_observation
                .split('\n')
                .map(str::to_string)
                .collect(),
        ),
        Outcome::Timeout if alternate => ("alternate_screen", Vec::new()),
        Outcome::Timeout => ("timeout", Vec::new()),
        Outcome::Gone => {
            return Err(ToolError::Runtime(format!(
                "pane {pane_id} died or was respawned; cursor/baseline anchor is no longer valid"
            )))
        }
        Outcome::Cancelled => return Err(ToolError::Runtime("wait_for_text was cancelled".into())),
        _ => {
            return Err(ToolError::Runtime(
                result
                    .error
                    .clone()
                    .unwrap_or_else(|| result.outcome.as_str().to_string()),
            ))
        }
    };
    let found = matches!(outcome, "matched" | "any_output");
    Ok(json!({
        "found": found,
        "outcome": outcome,
        "matched_index": result.matched_index,
        "matched_lines": capped(lines),
        "saw_new_output": result.saw_new_output,
        "matched_at_entry": result.matched_at_entry && !found,
        "alternate_screen": alternate,
        "tail": capped(seen.region.original.clone()),
        "pane_id": pane_id,
        "elapsed_seconds": result.elapsed_ms as f64 / 1000.0,
        "effective_timeout": effective,
    }))
}
