//! Ouro AX's typed wait as an MCP tool, `wait_for_event`
//! (`seeds/ouro-ax-wait.md`): wait on a JSON Lines event file until a
//! matching event after a cursor, the time limit, or the target is gone;
//! the output is the `wait/1` envelope.
//!
//! `resume` (and the text an agent reads) is this same tool call with the
//! cursor filled in: `wait_for_event {arguments as JSON}`, where the
//! arguments are the call's own with `cursor` set to the cursor the wait
//! reached. Hosts that want another command form (a CLI line) run
//! [`crate::ouro::EventsQuery`] with their own [`crate::ouro::Resume`].
//!
//! The tool reads only a regular file inside the host's file roots
//! ([`Host::grants`]); nothing is granted by default.

use super::tool::{Host, ToolError};
use super::{CallSlot, Prepared, Report};
use crate::duration::parse_duration;
use crate::error::{Rule, SpecError};
use crate::ouro::{
    Clock, EventMatchSpec, EventsQuery, JsonlError, MatchError, NextStep, Resume, WaitForError,
    WAIT_STATES, WAIT_VERSION,
};
use serde_json::{json, Map, Value};
use std::time::Duration;

pub(crate) const PROFILE: &str = "ouro/wait";
const TOOL: &str = "wait_for_event";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
const CEILING: Duration = Duration::from_secs(300);

const DESCRIPTION: &str = "Wait for an event in an append-only JSON Lines event file (one event per line: \
`type`, `at`, `by`, `summary`, optional `target` and `data`), instead of polling yourself. \
Name the file (`path`), what you wait for (`for`, in words), and filters (`type`, `by`, `target`, `summary` \
substring or regex, `data` JSON pointer conditions); pass the `cursor` of an earlier wait to see only events \
after it (`\"end\"`: only events written from now on; omitted: from the file's start). \
Returns the wait/1 envelope: `satisfied` with the matching `events` (the first 1000 at most; its `resume` \
call reads on after them), `timed-out` with a `resume` call that \
waits again from the same cursor (nothing is lost or seen twice), or `gone` when the file is missing (removed, or never made) or a \
terminal event (`deleted`, `left`, `closed`, `gone`) arrived. `timeout` is a duration such as \"90s\" or \
\"5m\" or milliseconds (default 60s, at most 300s). A cursor is opaque and fits only the file it came from, \
as this server process left it: if the file was replaced or rewritten, or the server restarted, the call \
fails on `cursor`; wait again from \"end\".";

const FILTERS: [&str; 7] = [
    "type",
    "by",
    "target",
    "summary",
    "summaryRegex",
    "ignoreCase",
    "data",
];
/// The arguments besides the filters.
const ARGS: [&str; 4] = ["path", "for", "cursor", "timeout"];

pub(crate) fn definition() -> Value {
    json!({
        "name": TOOL,
        "title": "Wait for an event",
        "description": DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "additionalProperties": false,
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "The JSON Lines event file."},
                "for": {"type": "string", "description": "What you wait for, in words (default: an event in the file)."},
                "cursor": {"type": "string", "minLength": 1, "description": "Only events after this cursor count: a cursor from an earlier wait, or \"end\"."},
                "timeout": {
                    "oneOf": [
                        {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)?$"},
                        {"type": "integer", "minimum": 20}
                    ],
                    "description": "How long to wait: \"90s\", \"5m\", \"1h\", \"500ms\", a bare number of seconds as a string, or milliseconds as an integer. Default 60s, at most 300s."
                },
                "type": {"type": "string", "description": "The event type must equal this."},
                "by": {"type": "string", "description": "Who did it must equal this."},
                "target": {"description": "The event's target must equal this (JSON); also the wait's target."},
                "summary": {"type": "string", "minLength": 1, "description": "The summary must contain this (a literal unless summaryRegex)."},
                "summaryRegex": {"type": "boolean", "default": false, "description": "Read summary as a regular expression."},
                "ignoreCase": {"type": "boolean", "default": false, "description": "Match summary ignoring case."},
                "data": {
                    "type": "array",
                    "description": "Conditions on the event's data, all of which must hold.",
                    "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["pointer"],
                        "properties": {
                            "pointer": {"type": "string", "description": "RFC 6901 JSON pointer into data."},
                            "equals": {"description": "The value there equals this."},
                            "exists": {"type": "boolean", "description": "Something is (true) or is not (false) there."}
                        }
                    }
                }
            }
        },
        "outputSchema": wait_schema(),
        "annotations": {
            "title": "Wait for an event",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false
        }
    })
}

/// JSON Schema of the `wait/1` envelope.
fn wait_schema() -> Value {
    let nullable_string = json!({"type": ["string", "null"]});
    let step = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["command"],
        "properties": {
            "command": {"type": "string", "description": "The command to run."},
            "description": {"type": "string"}
        }
    });
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["ax", "for", "target", "state", "since", "until", "cursor", "events",
                     "fresh", "resume", "reason", "callback", "next"],
        "properties": {
            "ax": {"const": WAIT_VERSION},
            "for": {"type": "string", "description": "What is awaited."},
            "target": {"description": "The reference the wait is about, or null."},
            "state": {"enum": WAIT_STATES, "description": "satisfied: it happened (events). waiting: a stream's first line. timed-out: nothing happened in time; resume waits again from the same cursor. gone: it cannot happen any more."},
            "since": {"type": "string", "description": "When the wait began (RFC 3339)."},
            "until": nullable_string.clone(),
            "cursor": nullable_string.clone(),
            "events": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["cursor", "type", "at", "by", "target", "summary"],
                    "properties": {
                        "cursor": {"type": "string"},
                        "type": {"type": "string"},
                        "at": {"type": "string"},
                        "by": {"type": "string"},
                        "target": {},
                        "summary": {"type": "string"},
                        "data": {"type": "object"}
                    }
                }
            },
            "fresh": {
                "oneOf": [
                    {"type": "null"},
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["state", "asOf"],
                        "properties": {"state": {"type": "string"}, "asOf": nullable_string}
                    }
                ]
            },
            "resume": {"oneOf": [{"type": "null"}, step.clone()]},
            "reason": {"type": ["string", "null"]},
            "callback": {"type": ["string", "null"]},
            "next": {"type": "array", "items": step}
        }
    })
}

fn invalid(field: &str, rule: Rule, message: impl Into<String>) -> ToolError {
    ToolError::InvalidArguments(SpecError::new(field, rule, message))
}

fn string(args: &Map<String, Value>, field: &str) -> Result<Option<String>, ToolError> {
    match args.get(field) {
        None => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Err(invalid(
            field,
            Rule::Empty,
            format!("{field} must not be empty"),
        )),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(
            field,
            Rule::WrongType,
            format!("{field} must be a string"),
        )),
    }
}

fn timeout(value: Option<&Value>, ceiling: Duration) -> Result<Duration, ToolError> {
    let ms = match value {
        None => return Ok(DEFAULT_TIMEOUT.min(ceiling)),
        Some(Value::String(s)) => parse_duration(s).ok_or_else(|| {
            invalid(
                "timeout",
                Rule::WrongType,
                format!(
                    "timeout {s:?} is not a duration such as \"90s\", \"5m\", \"1h\" or \"500ms\""
                ),
            )
        })?,
        Some(v) => v.as_u64().ok_or_else(|| {
            invalid(
                "timeout",
                Rule::WrongType,
                "timeout must be a duration string or a whole number of milliseconds",
            )
        })?,
    };
    let t = Duration::from_millis(ms);
    if t < crate::ouro::MIN_TIMEOUT {
        return Err(invalid(
            "timeout",
            Rule::OutOfRange,
            format!(
                "timeout must be at least {} ms",
                crate::ouro::MIN_TIMEOUT.as_millis()
            ),
        ));
    }
    Ok(t.min(ceiling))
}

fn filter(args: &Map<String, Value>) -> Result<EventMatchSpec, ToolError> {
    let subset: Map<String, Value> = args
        .iter()
        .filter(|(k, _)| FILTERS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // Checked here; the summary compiles in the wait's own time.
    EventMatchSpec::from_json(&Value::Object(subset)).map_err(|e| filter_refused(&e))
}

/// The refusal of a filter, naming its field.
fn filter_refused(e: &MatchError) -> ToolError {
    let (MatchError::Shape { field, message } | MatchError::Invalid { field, message }) = e;
    let rule = if field == "summary" {
        Rule::InvalidRegex
    } else {
        Rule::WrongType
    };
    // The message alone: the refusal names its field itself.
    invalid(field, rule, message.clone())
}

pub(crate) fn prepare(args: &Value, host: &Host) -> Result<Prepared, ToolError> {
    prepare_on(args, host, &Clock::default())
}

/// [`prepare`] on `clock`: the envelope's `since` and `fresh.asOf` are its
/// times (the shared vectors run the tool on a virtual clock).
pub(crate) fn prepare_on(args: &Value, host: &Host, clock: &Clock) -> Result<Prepared, ToolError> {
    let top = args
        .as_object()
        .ok_or_else(|| invalid("", Rule::WrongType, "the arguments must be an object"))?;
    let known = || ARGS.iter().chain(&FILTERS);
    if let Some(key) = top.keys().find(|k| !known().any(|a| a == k)) {
        let known: Vec<&str> = known().copied().collect();
        return Err(invalid(
            key,
            Rule::UnknownField,
            crate::error::cut_quote(format!(
                "unknown field `{key}`, expected one of: {}",
                known.join(", ")
            )),
        ));
    }
    let path = string(top, "path")?
        .ok_or_else(|| invalid("path", Rule::MissingField, "path is required"))?;
    let ceiling = host.max_wait_ceiling.unwrap_or(CEILING);
    let query = EventsQuery {
        for_: string(top, "for")?,
        target: top.get("target").filter(|t| !t.is_null()).cloned(),
        filter: filter(top)?,
        cursor: string(top, "cursor")?,
        timeout: Some(timeout(top.get("timeout"), ceiling)?),
        grants: host.grants.clone(),
        ..EventsQuery::new(path)
    };
    SpecError::check_no_nul("path", &query.path.to_string_lossy())?;
    // Checked again when the file is opened, where a FIFO, a device or a
    // directory is refused too.
    host.grants
        .resolve_file(&query.path)
        .map_err(|r| invalid("path", Rule::NotGranted, r.0))?;
    let call_args = top.clone();
    let resume = Resume::Step(Box::new(move |cursor| {
        let mut again = call_args.clone();
        if let Some(c) = cursor {
            again.insert("cursor".into(), c.into());
        }
        Ok(NextStep::new(format!("{TOOL} {}", Value::Object(again)))
            .with_description("call wait_for_event again with these arguments"))
    }));
    let options = query.options_on(resume, clock).map_err(|e| match e {
        WaitForError::Read(source) => invalid("cursor", Rule::InvalidResume, source.to_string()),
        other => ToolError::Runtime(other.to_string()),
    })?;
    let (spec, probe, policy, finish) = crate::ouro::prepare_parts(options)
        .map_err(|e| invalid("timeout", Rule::OutOfRange, e.to_string()))?;
    // The original sends no progress of its own.
    let report = Report::elapsed_of(spec.max_wait.min(ceiling));
    Ok(Prepared {
        slot: CallSlot::uncounted(),
        spec,
        probe,
        policy,
        report,
        render: Box::new(move |result| {
            let done = finish(result).map_err(|e| {
                if let Some(refused) = crate::ouro::match_error(&e) {
                    return filter_refused(refused);
                }
                match crate::ouro::jsonl_error(&e) {
                    // The cursor does not fit the file (any more): the agent
                    // must start again from "end" or the file's start.
                    Some(j @ (JsonlError::Replaced { .. } | JsonlError::BadCursor { .. })) => {
                        invalid("cursor", Rule::InvalidResume, j.to_string())
                    }
                    _ => ToolError::Runtime(e.to_string()),
                }
            })?;
            serde_json::to_value(&done.wait).map_err(|e| ToolError::Runtime(e.to_string()))
        }),
    })
}
