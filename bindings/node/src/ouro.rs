//! The Ouro AX `wait/1` envelope, durations and the JSON Lines event
//! source: core's `waitfor::ouro` and `waitfor::duration`, for the
//! package's `libwaitfor/ax` entry point.

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;
use serde_json::{json, Map, Value};
use waitfor::duration::{format_millis, not_a_number, parse_millis};
use waitfor::ouro::{self, ExitTable, Wait, WaitExits};

use crate::errors;

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

/// Builds a wait as the seed's `wait` does: `ax` set, the optional fields
/// defaulted, in the envelope's field order (fields it does not know kept
/// after them). The rules are left to `validateWait`; nothing is checked.
#[napi]
pub fn ouro_wait(fields: Value) -> napi::Result<Value> {
    let Value::Object(mut given) = fields else {
        return Err(errors::other(
            "invalid_arguments",
            "fields: must be an object",
        ));
    };
    let mut built = Map::new();
    built.insert("ax".into(), ouro::WAIT_VERSION.into());
    given.remove("ax");
    for (name, empty) in [
        ("for", None),
        ("target", Some(Value::Null)),
        ("state", None),
        ("since", None),
        ("until", Some(Value::Null)),
        ("cursor", Some(Value::Null)),
        ("events", Some(json!([]))),
        ("fresh", Some(Value::Null)),
        ("resume", Some(Value::Null)),
        ("reason", Some(Value::Null)),
        ("callback", Some(Value::Null)),
        ("next", Some(json!([]))),
    ] {
        if let Some(value) = given.remove(name).or(empty) {
            built.insert(name.into(), value);
        }
    }
    built.extend(given);
    Ok(Value::Object(built))
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
/// `null` for anything else, as the seed's `parseDuration` (core's
/// `parse_millis`: at most 2^53 - 1 ms, where Python and C refuse).
#[napi]
pub fn parse_duration(text: String) -> Option<f64> {
    parse_millis(&text).ok().map(|ms| ms as f64)
}

/// Milliseconds as the shortest exact duration `parseDuration` reads back,
/// by core's `format_millis`, the rule of every binding: a fraction is
/// rounded to the nearest millisecond (a half upwards); NaN, a negative
/// value, an infinity, more than 2^53 - 1 or (`null`) no number at all is
/// refused as `invalid_arguments` on field `duration`.
#[napi]
pub fn format_duration(ms: Option<f64>) -> napi::Result<String> {
    ms.map_or_else(|| Err(not_a_number()), format_millis)
        .map_err(|e| errors::arguments(&e))
}

/// One read of a JSON Lines event log, run on a libuv pool thread so the
/// JavaScript thread never waits on the file (internal; see `readEvents`
/// and `eventsEndCursor`).
pub struct EventsRead {
    source: ouro::JsonlSource,
    /// `None`: the cursor at the file's end, not a read.
    cursor: Option<Option<String>>,
}

impl Task for EventsRead {
    /// A read as JSON text, or the end cursor.
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        match &self.cursor {
            Some(cursor) => self
                .source
                .read(cursor.as_deref())
                .map_err(jsonl_error)
                .and_then(|read| serde_json::to_string(&read).map_err(|e| errors::other("io", e))),
            None => self.source.end_cursor().map_err(jsonl_error),
        }
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

fn jsonl_error(e: ouro::JsonlError) -> napi::Error {
    let code = match e {
        ouro::JsonlError::BadCursor { .. } => "bad_cursor",
        ouro::JsonlError::Replaced { .. } => "source_replaced",
        ouro::JsonlError::Io { .. } => "io",
    };
    errors::other(code, e)
}

/// The log at `path`, readable only as a regular file inside `grants`' file
/// roots (JSON text; nothing when absent), opened without blocking and read
/// at most `DEFAULT_MAX_READ_BYTES` at a time.
fn granted_source(path: String, grants: Option<String>) -> napi::Result<ouro::JsonlSource> {
    Ok(ouro::JsonlSource::new(path).within(crate::waits::grants(grants.as_deref())?))
}

/// Reads a JSON Lines event log after `cursor` (core's `JsonlSource`) off
/// the JavaScript thread: a Promise of `{events, cursor, fresh, gone,
/// malformed}` as JSON text. `terminalTypes` replaces the event types that end a wait as
/// gone.
#[napi(ts_return_type = "Promise<string>")]
pub fn read_events(
    path: String,
    cursor: Option<String>,
    terminal_types: Option<Vec<String>>,
    grants: Option<String>,
) -> napi::Result<AsyncTask<EventsRead>> {
    let mut source = granted_source(path, grants)?;
    if let Some(types) = terminal_types {
        source = source.with_terminal_types(types);
    }
    Ok(AsyncTask::new(EventsRead {
        source,
        cursor: Some(cursor),
    }))
}

/// The cursor at the end of a JSON Lines event log, off the JavaScript
/// thread: a wait from it sees only events appended afterwards.
#[napi(ts_return_type = "Promise<string>")]
pub fn events_end_cursor(
    path: String,
    grants: Option<String>,
) -> napi::Result<AsyncTask<EventsRead>> {
    Ok(AsyncTask::new(EventsRead {
        source: granted_source(path, grants)?,
        cursor: None,
    }))
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
