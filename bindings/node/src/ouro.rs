//! The Ouro AX `wait/1` envelope, durations and the JSON Lines event
//! source: core's `waitfor::ouro` and `waitfor::duration`, for the
//! package's `libwaitfor/ax` entry point.

use napi_derive::napi;
use serde_json::{json, Value};
use waitfor::duration::{format_duration as format_ms, parse_duration as parse_ms};
use waitfor::ouro::{self, ExitTable, Wait, WaitExits, WaitFields};

use crate::errors;

/// The largest integer JavaScript numbers hold exactly.
const MAX_SAFE: u64 = (1 << 53) - 1;

/// The constants: `{version, states, flags, defaultExits}`.
#[napi]
pub fn ouro_constants() -> Value {
    json!({
        "version": ouro::WAIT_VERSION,
        "states": ouro::WAIT_STATES,
        "flags": *ouro::WAIT_FLAGS,
        "defaultExits": ouro::DEFAULT_WAIT_EXITS,
    })
}

/// Builds a wait with core's `ouro::wait` (it checks the rules).
#[napi]
pub fn ouro_wait(fields: Value) -> napi::Result<Value> {
    let Value::Object(mut obj) = fields else {
        return Err(invalid(vec!["fields: must be an object".into()]));
    };
    if obj.contains_key("ax") {
        return Err(invalid(vec!["ax: is set by wait, leave it out".into()]));
    }
    obj.insert("ax".into(), ouro::WAIT_VERSION.into());
    for (name, empty) in [
        ("target", Value::Null),
        ("until", Value::Null),
        ("cursor", Value::Null),
        ("events", json!([])),
        ("fresh", Value::Null),
        ("resume", Value::Null),
        ("reason", Value::Null),
        ("callback", Value::Null),
        ("next", json!([])),
    ] {
        obj.entry(name).or_insert(empty);
    }
    let shaped = Value::Object(obj);
    let w: Wait = serde_json::from_value(shaped.clone())
        .map_err(|_| invalid(ouro::validate_wait(&shaped).errors))?;
    let built = ouro::wait(WaitFields {
        target: w.target,
        until: w.until,
        cursor: w.cursor,
        events: w.events,
        fresh: w.fresh,
        resume: w.resume,
        reason: w.reason,
        callback: w.callback,
        next: w.next,
        ..WaitFields::new(w.for_, w.state, w.since)
    })
    .map_err(|ouro::WaitError::Invalid { errors }| invalid(errors))?;
    serde_json::to_value(built).map_err(|e| errors::other("invalid_arguments", e))
}

fn invalid(errors: Vec<String>) -> napi::Error {
    errors::typed(json!({
        "code": "invalid_wait",
        "message": format!("invalid wait: {}", errors.join("; ")),
        "errors": errors,
    }))
}

/// Whether `value` has the shape of a `wait/1` envelope.
#[napi]
pub fn ouro_is_wait(value: Value) -> bool {
    ouro::is_wait(&value)
}

/// Checks a wait's shape and rules: `{ok, errors}`.
#[napi]
pub fn ouro_validate_wait(value: Value) -> Value {
    serde_json::to_value(ouro::validate_wait(&value)).unwrap_or(Value::Null)
}

fn envelope(value: Value) -> napi::Result<Wait> {
    let errors = ouro::validate_wait(&value).errors;
    serde_json::from_value(value).map_err(|_| invalid(errors))
}

/// The wait as text.
#[napi]
pub fn ouro_wait_text(wait: Value) -> napi::Result<String> {
    Ok(ouro::wait_text(&envelope(wait)?))
}

/// The exit code of a wait through an exit table `{name: code}` and
/// optional state names.
#[napi]
pub fn ouro_wait_exit(wait: Value, exits: Value, names: Option<Value>) -> napi::Result<i32> {
    let wait = envelope(wait)?;
    let exits: ExitTable = serde_json::from_value(exits).map_err(|e| {
        errors::other(
            "invalid_arguments",
            format!("exits: must map names to integer codes: {e}"),
        )
    })?;
    let names: Option<WaitExits> = names.map(serde_json::from_value).transpose().map_err(|e| {
        errors::other(
            "invalid_arguments",
            format!("names: must name each of the four states: {e}"),
        )
    })?;
    Ok(ouro::wait_exit(&wait, &exits, names.as_ref()))
}

/// `"90s"`, `"2m"`, `"1h"`, `"500ms"` or bare seconds as milliseconds;
/// `null` for anything else (or beyond what a JavaScript number holds).
#[napi]
pub fn parse_duration(text: String) -> Option<f64> {
    parse_ms(&text)
        .filter(|&ms| ms <= MAX_SAFE)
        .map(|ms| ms as f64)
}

/// Milliseconds as the shortest exact duration `parseDuration` reads back.
#[napi]
pub fn format_duration(ms: f64) -> napi::Result<String> {
    if ms.is_finite() && ms >= 0.0 && ms.fract() == 0.0 && ms <= MAX_SAFE as f64 {
        Ok(format_ms(ms as u64))
    } else {
        Err(errors::other(
            "invalid_arguments",
            format!("ms: must be a whole number of milliseconds, 0 or more, got {ms}"),
        ))
    }
}

/// Reads a JSON Lines event log after `cursor` (core's `JsonlSource`):
/// `{events, cursor, fresh, gone, malformed}`. `terminalTypes` replaces the
/// event types that end a wait as gone.
#[napi]
pub fn read_events(
    path: String,
    cursor: Option<String>,
    terminal_types: Option<Vec<String>>,
) -> napi::Result<Value> {
    let mut source = ouro::JsonlSource::new(path);
    if let Some(types) = terminal_types {
        source = source.with_terminal_types(types);
    }
    let read = source.read(cursor.as_deref()).map_err(|e| {
        let code = match e {
            ouro::JsonlError::BadCursor { .. } => "bad_cursor",
            ouro::JsonlError::Replaced { .. } => "source_replaced",
            ouro::JsonlError::Io { .. } => "io",
        };
        errors::other(code, e)
    })?;
    serde_json::to_value(read).map_err(|e| errors::other("io", e))
}

/// The cursor at the end of a JSON Lines event log: a wait from it sees
/// only events appended afterwards.
#[napi]
pub fn events_end_cursor(path: String) -> napi::Result<String> {
    ouro::JsonlSource::new(path)
        .end_cursor()
        .map_err(|e| errors::other("io", e))
}

/// A compiled event match spec (internal; see `eventMatcher`).
#[napi]
pub struct NativeEventMatcher {
    inner: ouro::EventMatcher,
}

#[napi]
impl NativeEventMatcher {
    /// Compiles `{type, by, target, summary, summaryRegex, ignoreCase, data}`.
    #[napi(constructor)]
    pub fn new(spec: Value) -> napi::Result<Self> {
        ouro::EventMatcher::from_json(&spec)
            .map(|inner| Self { inner })
            .map_err(|e| errors::other("invalid_arguments", e))
    }

    /// Whether `event` (an `AxEvent`) matches; a value that is not an event
    /// never does.
    #[napi]
    pub fn matches(&self, event: Value) -> bool {
        serde_json::from_value::<ouro::AxEvent>(event).is_ok_and(|e| self.inner.matches(&e))
    }
}
