//! `libwaitfor/ax` (see `lib/ax.js`): core's `waitfor::ouro` and durations.

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;
use serde_json::{json, Value};
use waitfor::duration::{format_millis, not_a_number, parse_millis};
use waitfor::ouro::{self, ExitTable, JsonlSource, Wait, WaitError, WaitExits};
use waitfor::ErrorInfo;

use crate::errors;

/// `{version, states, flags, defaultExits}`.
#[napi]
pub fn ouro_constants() -> Value {
    json!({"version": ouro::WAIT_VERSION, "states": ouro::WAIT_STATES,
        "flags": *ouro::WAIT_FLAGS, "defaultExits": ouro::DEFAULT_WAIT_EXITS})
}

/// The seed's `wait` (core's `wait_json`): builds, checks nothing.
#[napi]
pub fn ouro_wait(fields: Value) -> napi::Result<Value> {
    ouro::wait_json(fields)
        .ok_or_else(|| errors::invalid("fields", "wrong_type", "fields: must be an object".into()))
}

#[napi]
pub fn ouro_is_wait(value: Value) -> bool {
    ouro::is_wait(&value)
}

/// `{ok, errors}`.
#[napi]
pub fn ouro_validate_wait(value: Value) -> Value {
    serde_json::to_value(ouro::validate_wait(&value)).unwrap_or(Value::Null)
}

/// Refused as `invalid_wait`, with the rules it breaks in `errors`.
fn envelope(value: Value) -> napi::Result<Wait> {
    Wait::from_json(value).map_err(|e| {
        let WaitError::Invalid { errors } = &e;
        errors::typed(json!({"code": "invalid_wait", "message": e.to_string(), "errors": errors}))
    })
}

#[napi]
pub fn ouro_wait_text(wait: Value) -> napi::Result<String> {
    Ok(ouro::wait_text(&envelope(wait)?))
}

/// The exit code of `wait` through `exits` (`{name: code}`) and state `names`.
#[napi]
pub fn ouro_wait_exit(wait: Value, exits: Value, names: Option<Value>) -> napi::Result<i32> {
    let wait = envelope(wait)?;
    let exits: ExitTable = errors::parse("exits", exits, "must map names to integer codes")?;
    let names: Option<WaitExits> = names
        .map(|names| errors::parse("names", names, "must name each of the four states"))
        .transpose()?;
    Ok(ouro::wait_exit(&wait, &exits, names.as_ref()))
}

/// Milliseconds, or null (core's `parse_millis`).
#[napi]
pub fn parse_duration(text: String) -> Option<f64> {
    parse_millis(&text).ok().map(|ms| ms as f64)
}

/// Core's `format_millis`; no number (`null`) is refused as it refuses NaN.
#[napi]
pub fn format_duration(ms: Option<f64>) -> napi::Result<String> {
    ms.map_or_else(|| Err(not_a_number()), format_millis)
        .map_err(|e| errors::arguments(&e))
}

/// A read of a JSON Lines log on a libuv pool thread: the JavaScript
/// thread never waits on the file.
pub struct EventsRead(JsonlSource, Option<Option<String>>);

impl Task for EventsRead {
    /// A read as JSON text, or the end cursor.
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        let EventsRead(source, cursor) = self;
        let read = match cursor {
            Some(cursor) => source.read(cursor.as_deref()).map(|r| json!(r).to_string()),
            None => source.end_cursor(),
        };
        read.map_err(|e| errors::info(&ErrorInfo::from(&e)))
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

/// The log at `path`, read only inside `grants`' file roots (JSON text).
fn source(path: String, grants: Option<String>) -> napi::Result<JsonlSource> {
    Ok(JsonlSource::new(path).within(crate::waits::grants(grants.as_deref())?))
}

/// `{events, cursor, fresh, gone, more, malformed}` after `cursor`, as JSON text.
#[napi(ts_return_type = "Promise<string>")]
pub fn read_events(
    path: String,
    cursor: Option<String>,
    terminal_types: Option<Vec<String>>,
    grants: Option<String>,
) -> napi::Result<AsyncTask<EventsRead>> {
    let mut source = source(path, grants)?;
    if let Some(types) = terminal_types {
        source = source.with_terminal_types(types);
    }
    Ok(AsyncTask::new(EventsRead(source, Some(cursor))))
}

/// The cursor at the log's end.
#[napi(ts_return_type = "Promise<string>")]
pub fn events_end_cursor(
    path: String,
    grants: Option<String>,
) -> napi::Result<AsyncTask<EventsRead>> {
    Ok(AsyncTask::new(EventsRead(source(path, grants)?, None)))
}

/// Core's event matcher (see `eventMatcher`).
#[napi]
pub struct NativeEventMatcher {
    inner: ouro::EventMatcher,
}

#[napi]
impl NativeEventMatcher {
    #[napi(constructor)]
    pub fn new(spec: Value) -> napi::Result<Self> {
        ouro::EventMatcher::from_json(&spec)
            .map(|inner| Self { inner })
            .map_err(|e| errors::other("invalid_arguments", e))
    }

    /// A value that is not an event matches nothing.
    #[napi]
    pub fn matches(&self, event: Value) -> bool {
        serde_json::from_value::<ouro::AxEvent>(event).is_ok_and(|e| self.inner.matches(&e))
    }
}
