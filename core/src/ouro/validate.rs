//! Shape checks ([`is_wait`]) and rule checks ([`validate_wait`]) on JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::envelope::{WAIT_STATES, WAIT_VERSION};

/// The answer of [`validate_wait`]: `ok` when `errors` is empty; each error
/// starts with the field it is about (`"resume: ..."`, `"events[0].at: ..."`).
///
/// ```
/// let v = waitfor::ouro::validate_wait(&serde_json::json!(null));
/// assert!(!v.ok);
/// assert_eq!(v.errors, ["wait: must be an object"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validation {
    /// Whether the wait passed every check.
    pub ok: bool,
    /// What is wrong, one message per problem.
    pub errors: Vec<String>,
}

const WAIT_FIELDS: [&str; 13] = [
    "ax", "for", "target", "state", "since", "until", "cursor", "events", "fresh", "resume",
    "reason", "callback", "next",
];
const EVENT_FIELDS: [&str; 7] = ["cursor", "type", "at", "by", "target", "summary", "data"];

/// Whether a value has the shape of a `wait/1` envelope: every field present
/// with the right JSON type, `ax` equal to [`WAIT_VERSION`], a known
/// `state`, and no unknown fields (a step may carry its own). It does not check the rules (see
/// [`validate_wait`]).
///
/// ```
/// use serde_json::json;
/// let w = json!({"ax": "wait/1", "for": "x", "target": null, "state": "waiting",
///     "since": "t0", "until": null, "cursor": null, "events": [], "fresh": null,
///     "resume": null, "reason": null, "callback": null, "next": []});
/// assert!(waitfor::ouro::is_wait(&w)); // shape only: the missing resume is a rule
/// assert!(!waitfor::ouro::is_wait(&json!({"ax": "wait/2"})));
/// ```
pub fn is_wait(v: &Value) -> bool {
    shape_errors(v).is_empty()
}

/// Checks a wait: its shape (as [`is_wait`]) and the seed's rules:
/// a `timed-out` or `waiting` wait names `resume`, and a `satisfied` one
/// carries at least one event.
///
/// ```
/// use serde_json::json;
/// let mut w = json!({"ax": "wait/1", "for": "x", "target": null, "state": "timed-out",
///     "since": "t0", "until": null, "cursor": "c", "events": [], "fresh": null,
///     "resume": null, "reason": null, "callback": null, "next": []});
/// let v = waitfor::ouro::validate_wait(&w);
/// assert_eq!(v.errors, ["resume: a timed-out wait must say how to resume it"]);
/// w["resume"] = json!({"command": "waitfor events log.jsonl --cursor c"});
/// assert!(waitfor::ouro::validate_wait(&w).ok);
/// ```
pub fn validate_wait(v: &Value) -> Validation {
    let mut errors = shape_errors(v);
    if let Some(obj) = v.as_object() {
        rule_errors(obj, &mut errors);
    }
    Validation {
        ok: errors.is_empty(),
        errors,
    }
}

fn rule_errors(obj: &Map<String, Value>, errors: &mut Vec<String>) {
    let state = obj.get("state").and_then(Value::as_str);
    let resume_missing = matches!(obj.get("resume"), None | Some(Value::Null));
    match state {
        Some(s @ ("timed-out" | "waiting")) if resume_missing => {
            errors.push(format!("resume: a {s} wait must say how to resume it"));
        }
        Some("satisfied") => {
            let carries = matches!(obj.get("events"), Some(Value::Array(a)) if !a.is_empty());
            if !carries {
                errors.push("events: a satisfied wait must carry at least one event".into());
            }
        }
        _ => {}
    }
}

fn shape_errors(v: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(obj) = v.as_object() else {
        return vec!["wait: must be an object".into()];
    };
    unknown_fields(obj, &WAIT_FIELDS, "", &mut errors);
    match obj.get("ax") {
        Some(Value::String(s)) if s == WAIT_VERSION => {}
        _ => errors.push(format!("ax: must be \"{WAIT_VERSION}\"")),
    }
    match obj.get("state").and_then(Value::as_str) {
        Some(s) if WAIT_STATES.contains(&s) => {}
        _ => errors.push(format!("state: must be one of {}", WAIT_STATES.join(", "))),
    }
    string(obj, "for", "", &mut errors);
    string(obj, "since", "", &mut errors);
    present(obj, "target", "", &mut errors);
    for name in ["until", "cursor", "reason", "callback"] {
        string_or_null(obj, name, "", &mut errors);
    }
    match obj.get("fresh") {
        Some(Value::Null) => {}
        Some(Value::Object(f)) => fresh_errors(f, &mut errors),
        _ => errors.push("fresh: must be an object or null".into()),
    }
    match obj.get("resume") {
        Some(Value::Null) => {}
        Some(step) => step_errors(step, "resume", &mut errors),
        None => errors.push("resume: is required (may be null)".into()),
    }
    match obj.get("next") {
        Some(Value::Array(steps)) => {
            for (i, step) in steps.iter().enumerate() {
                step_errors(step, &format!("next[{i}]"), &mut errors);
            }
        }
        _ => errors.push("next: must be an array".into()),
    }
    match obj.get("events") {
        Some(Value::Array(events)) => {
            for (i, event) in events.iter().enumerate() {
                event_errors(event, &format!("events[{i}]"), &mut errors);
            }
        }
        _ => errors.push("events: must be an array".into()),
    }
    errors
}

fn event_errors(v: &Value, at: &str, errors: &mut Vec<String>) {
    let Some(obj) = v.as_object() else {
        errors.push(format!("{at}: must be an object"));
        return;
    };
    let prefix = format!("{at}.");
    unknown_fields(obj, &EVENT_FIELDS, &prefix, errors);
    for name in ["cursor", "type", "at", "by", "summary"] {
        string(obj, name, &prefix, errors);
    }
    present(obj, "target", &prefix, errors);
    match obj.get("data") {
        None | Some(Value::Object(_)) => {}
        Some(_) => errors.push(format!("{prefix}data: must be an object when present")),
    }
}

fn fresh_errors(obj: &Map<String, Value>, errors: &mut Vec<String>) {
    unknown_fields(obj, &["state", "asOf"], "fresh.", errors);
    string(obj, "state", "fresh.", errors);
    string_or_null(obj, "asOf", "fresh.", errors);
}

fn step_errors(v: &Value, at: &str, errors: &mut Vec<String>) {
    let Some(obj) = v.as_object() else {
        errors.push(format!("{at}: must be an object"));
        return;
    };
    let prefix = format!("{at}.");
    // A step may carry fields of the tool's own: accepted, as the seed does.
    match obj.get("command") {
        Some(Value::String(s)) if !s.trim().is_empty() => {}
        _ => errors.push(format!("{prefix}command: must be a non-empty string")),
    }
    match obj.get("description") {
        None | Some(Value::String(_)) => {}
        Some(_) => errors.push(format!(
            "{prefix}description: must be a string when present"
        )),
    }
}

fn unknown_fields(
    obj: &Map<String, Value>,
    known: &[&str],
    prefix: &str,
    errors: &mut Vec<String>,
) {
    for key in obj.keys() {
        if !known.contains(&key.as_str()) {
            // Named as every refused field is: a key of a megabyte is cut.
            let field = crate::error::shown_field(format!("{prefix}{key}"));
            errors.push(format!("{field}: unknown field"));
        }
    }
}

fn string(obj: &Map<String, Value>, name: &str, prefix: &str, errors: &mut Vec<String>) {
    if !matches!(obj.get(name), Some(Value::String(_))) {
        errors.push(format!("{prefix}{name}: must be a string"));
    }
}

fn string_or_null(obj: &Map<String, Value>, name: &str, prefix: &str, errors: &mut Vec<String>) {
    if !matches!(obj.get(name), Some(Value::String(_) | Value::Null)) {
        errors.push(format!("{prefix}{name}: must be a string or null"));
    }
}

fn present(obj: &Map<String, Value>, name: &str, prefix: &str, errors: &mut Vec<String>) {
    if !obj.contains_key(name) {
        errors.push(format!("{prefix}{name}: is required (may be null)"));
    }
}
