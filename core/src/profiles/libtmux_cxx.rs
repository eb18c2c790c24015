//! libtmux-cxx's `wait_for_text`: wait for literal text in a pane,
//! discounting the server's own typed input
//! (`seeds/tmux-cpp-wait_for_text.md`).
//!
//! Text already on the visible screen at entry counts when it is confirmed
//! output (mode `capture-at-entry`); after entry only fresh output counts.
//! As in the original:
//!
//! - `mode` names the step that answered or was under way at the deadline
//!   ([`mode`]), with `-unconfirmed` when the text was on screen only as
//!   the server's own echo;
//! - `text` is the pane as the answering capture showed it (`capture-pane
//!   -p -J`: wrapped lines joined, spaces written at a line's end kept),
//!   empty when no capture was taken;
//! - `matched_at_entry` is whether the text was in that capture at entry;
//! - a deadline that passes before the pane is found is a timeout in mode
//!   `pane-lookup`, with no `pane_id`; a target tmux cannot resolve is
//!   the error "tmux could not resolve the requested pane";
//! - progress, once a second, is the milliseconds elapsed of the time
//!   limit, with the step under way ("waiting via capture-polling").
//!
//! A wait that this process's other waits starved of tmux turns (see
//! [`crate::tmux::PaneReport::starved_notice`]) says so in the engine's
//! result (`notices`) only: the original sends no log message and its
//! output's fields are fixed.
//!
//! Keys the server typed are recorded with [`crate::tmux::record_keys`].

use super::aura::{invalid, missing, object, reject_unknown};
use super::libtmux_mcp::longer_than;
use super::notice::{Notice, ToolProgress};
use super::tool::{Host, ToolError};
use super::{schema, CallSlot, Prepared, Report};
use crate::error::{Rule, SpecError};
use crate::pattern::Pattern;
use crate::policy::{Policy, DEFAULT_OUTPUT_CAP};
use crate::result::{Outcome, WaitResult};
use crate::spec::{Condition, Spec};
use crate::tmux::{
    PaneProbe, PaneReport, PaneReportHandle, PaneTarget, PushPath, Tmux, Unresolved,
};
use serde_json::{json, Map, Value};
use std::time::Duration;

pub(crate) const PROFILE: &str = "libtmux-cxx/wait_for_text";

const MAX_TARGET_CHARS: usize = 512;
const MAX_TEXT_CHARS: usize = 4096;
const MAX_TIMEOUT_MS: u64 = 60_000;
const DEFAULT_TIMEOUT_MS: u64 = 10_000;
const INTERVAL: Duration = Duration::from_millis(50);

const DESCRIPTION: &str = "Discount this server\u{2019}s pending input and recent submitted echoes; unmodelled keys stop tracking the current line. \
Wait for a new shell\u{2019}s prompt before typing. matched_at_entry reports visible text at entry; a mode ending in -unconfirmed identifies input that was still unconfirmed at the deadline. \
Read pane output; accepts no client-supplied executable input. Returned content may be sensitive or untrusted.";

pub(crate) fn definition() -> Value {
    let annotations = schema(include_str!(
        "schemas/libtmux_cxx_wait_for_text.annotations.json"
    ));
    json!({
        "name": "wait_for_text",
        "title": annotations["title"],
        "description": DESCRIPTION,
        "inputSchema": schema(include_str!("schemas/libtmux_cxx_wait_for_text.input.json")),
        "outputSchema": schema(include_str!("schemas/libtmux_cxx_wait_for_text.output.json")),
        "annotations": annotations,
    })
}

fn bounded_string(map: &Map<String, Value>, field: &str, max: usize) -> Result<String, ToolError> {
    let value = map.get(field).ok_or_else(|| missing(field))?;
    let text = value.as_str().ok_or_else(|| {
        invalid(
            field,
            Rule::WrongType,
            format!("{field} must be a string, got {value}"),
        )
    })?;
    let chars = text.chars().count();
    if chars > max {
        return Err(invalid(
            field,
            Rule::OutOfRange,
            format!("{field} must be at most {max} characters, got {chars}"),
        ));
    }
    Ok(text.to_string())
}

fn timeout_ms(map: &Map<String, Value>) -> Result<u64, ToolError> {
    let Some(value) = map.get("timeout_ms") else {
        return Ok(DEFAULT_TIMEOUT_MS);
    };
    let whole = value
        .as_i64()
        .or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                .map(|f| f as i64)
        })
        .ok_or_else(|| {
            invalid(
                "timeout_ms",
                Rule::WrongType,
                format!("timeout_ms must be an integer, got {value}"),
            )
        })?;
    if !(1..=MAX_TIMEOUT_MS as i64).contains(&whole) {
        return Err(invalid(
            "timeout_ms",
            Rule::OutOfRange,
            format!("timeout_ms must be between 1 and {MAX_TIMEOUT_MS}, got {whole}"),
        ));
    }
    Ok(whole as u64)
}

/// A `%N` id is taken exactly; anything else is a tmux target.
fn pane_target(target: &str) -> PaneTarget {
    if crate::pane_id::parse_pane_id(target, "target").is_ok() {
        PaneTarget {
            pane_id: Some(target.to_string()),
            ..Default::default()
        }
    } else {
        PaneTarget {
            target: Some(target.to_string()),
            ..Default::default()
        }
    }
}

pub(crate) fn prepare(args: &Value, host: &Host) -> Result<Prepared, ToolError> {
    prepare_on(args, host, Tmux::new())
}

/// [`prepare`], reaching the pane through `tmux` (the simulator's scripted
/// server, or a tmux program).
pub(crate) fn prepare_on(args: &Value, host: &Host, tmux: Tmux) -> Result<Prepared, ToolError> {
    let map = object(args, "")?;
    reject_unknown(map, "", &["target", "text", "timeout_ms"])?;
    let target = bounded_string(map, "target", MAX_TARGET_CHARS)?;
    let text = bounded_string(map, "text", MAX_TEXT_CHARS)?;
    let timeout = timeout_ms(map)?;
    if target.is_empty() {
        return Err(invalid("target", Rule::Empty, "target must not be empty"));
    }
    SpecError::check_no_nul("target", &target)?;
    if text.is_empty() {
        return Err(invalid("text", Rule::Empty, "text must not be empty"));
    }
    let spec = Spec::new(Condition::Matches(Pattern::literal(text.clone())))
        .interval(INTERVAL)
        .max_wait(longer_than(Duration::from_millis(timeout), INTERVAL));
    spec.validate()?;
    let probe = PaneProbe::new(tmux, pane_target(&target)).credit_entry(true);
    let report = probe.report();
    // The deadline is `timeout_ms` exactly, even below the poll interval.
    let ceiling = host
        .max_wait_ceiling
        .unwrap_or(Duration::from_millis(MAX_TIMEOUT_MS))
        .min(Duration::from_millis(timeout));
    let policy = Policy::default()
        .max_wait_ceiling(ceiling)
        .output_cap(DEFAULT_OUTPUT_CAP);
    Ok(Prepared {
        slot: CallSlot::uncounted(),
        spec,
        probe: Box::new(probe),
        policy,
        report: progress(report.clone(), ceiling),
        render: Box::new(move |result| render(result, &report, &text)),
    })
}

/// The original's progress: the milliseconds elapsed of the time limit,
/// and the step under way ("waiting via capture-polling"); the engine
/// reports once a second, as the original does.
fn progress(seen: PaneReportHandle, limit: Duration) -> Report {
    let total = limit.as_millis() as f64;
    Report::new(
        move |p| {
            let step = mode(&seen.get(), false, p.samples);
            vec![Notice::Progress(ToolProgress {
                progress: (p.elapsed_ms as f64).min(total),
                total: Some(total),
                message: Some(format!("waiting via {step}")),
            })]
        },
        |_| Vec::new(),
    )
}

/// The original's name for the step that answered (`matched`) or was
/// under way when the deadline passed: looking the pane up, the capture at
/// entry, attaching the control client, the capture right after it
/// attached, waiting on its `%output`, or polling without it.
fn mode(seen: &PaneReport, matched: bool, samples: u64) -> &'static str {
    if seen.pane.is_none() {
        return "pane-lookup";
    }
    if seen.captures == 0 || (matched && samples == 1) {
        return "capture-at-entry";
    }
    match (&seen.push, seen.attached_at) {
        (PushPath::ControlMode, Some(at)) => {
            let after_attach = seen.captures - at;
            if after_attach == 0 || (matched && after_attach == 1) {
                "capture-after-control-connect"
            } else {
                "control-output"
            }
        }
        (PushPath::Polling, _) if seen.captures == 1 => "capture-before-control",
        _ => "capture-polling",
    }
}

/// Whether a wait that ended in its probe's failure ran out of time, a
/// timeout in the original: a tmux call cut short by the deadline or out
/// of budget waiting for its turn, or a first step that never came back.
fn out_of_time(result: &WaitResult, seen: &PaneReport) -> bool {
    seen.failed_without_turn(result)
        || result.outcome == Outcome::ProbeError
            && (seen.unresponsive.is_some()
                || result.samples == 0 && result.probe.last_error.is_none())
}

fn render(result: &WaitResult, report: &PaneReportHandle, text: &str) -> Result<Value, ToolError> {
    let seen = report.get();
    let pane_id = seen.pane.as_ref().map(|p| p.pane_id.clone());
    let out_of_time = out_of_time(result, &seen);
    let matched = match result.outcome {
        Outcome::Matched => true,
        Outcome::Timeout => false,
        _ if out_of_time => false,
        Outcome::Gone => {
            return Err(ToolError::Runtime(format!(
                "pane {} died or was respawned during the wait",
                pane_id.unwrap_or_default()
            )))
        }
        Outcome::Cancelled => return Err(ToolError::Runtime("request cancelled".into())),
        _ if seen.unresolved == Some(Unresolved::Missing) => {
            return Err(ToolError::Runtime(
                "tmux could not resolve the requested pane".into(),
            ))
        }
        _ => {
            return Err(ToolError::Runtime(
                result
                    .error
                    .clone()
                    .unwrap_or_else(|| result.outcome.as_str().to_string()),
            ))
        }
    };
    let mut mode = mode(&seen, matched, result.samples).to_string();
    if !matched && (seen.region.only_echo(text) || seen.entry.only_echo(text)) {
        mode.push_str("-unconfirmed");
    }
    // In the original's order: nlohmann::json over a std::map, its keys
    // sorted.
    let mut out = Map::new();
    out.insert("elapsed_ms".into(), json!(result.elapsed_ms));
    out.insert("matched".into(), json!(matched));
    let at_entry = seen.entry_screen.contains(text);
    out.insert("matched_at_entry".into(), json!(at_entry));
    out.insert("mode".into(), json!(mode));
    if let Some(id) = pane_id {
        out.insert("pane_id".into(), Value::String(id));
    }
    out.insert("text".into(), json!(seen.screen));
    out.insert("timed_out".into(), json!(!matched));
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tmux call out of budget waiting for its turn is a timeout, as a
    /// call cut short by the deadline is; another tmux error is not.
    #[test]
    fn a_call_without_a_turn_is_out_of_time() {
        let mut result = crate::engine::error_result(String::new());
        result.outcome = Outcome::ProbeError;
        result.samples = 3;
        result.probe.last_error = Some("tmux capture-pane got no turn within 1.00s".into());
        let no_turn = PaneReport {
            no_turn: true,
            ..PaneReport::default()
        };
        assert!(out_of_time(&result, &no_turn));
        assert!(!out_of_time(&result, &PaneReport::default()));
    }
}
