//! The native half of the npm package `@libwaitfor/ax` (napi-rs): core's
//! `waitfor::ouro` and durations; the public API is `lib/ax.js`. A refusal
//! carries core's error as JSON in its message (`code`, `field`, `rule`,
//! `message`), which `lib/ax.js` turns into libwaitfor's `WaitforError`.

// The exports are only reached through Node's module registration, which
// a Rust test build does not have; the tests are the JavaScript ones.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;
use serde_json::{json, Value};
use waitfor::duration::{format_millis, not_a_number, parse_millis};
use waitfor::grants::Grants;
use waitfor::ouro::{self, ExitTable, HostStepper, JsonlSource, Wait, WaitError, WaitExits};
use waitfor::{ErrorCode, ErrorInfo, Rule, SpecError};

/// An error whose message is `detail` as JSON (with `code` and `message`).
fn typed(detail: Value) -> napi::Error {
    napi::Error::from_reason(detail.to_string())
}

/// An error of core's shape.
fn info(info: ErrorInfo) -> napi::Error {
    typed(info.to_json())
}

/// Rejected arguments: `invalid_arguments` with their field and rule.
fn arguments(err: SpecError) -> napi::Error {
    info(ErrorInfo::spec(ErrorCode::InvalidArguments, &err))
}

/// What a read may reach, from the `grants` option as JSON text (camelCase,
/// as libwaitfor's `Grants`); absent: nothing.
fn granted(json: Option<&str>) -> napi::Result<Grants> {
    let Some(json) = json else {
        return Ok(Grants::none());
    };
    let field = "options.grants";
    let value = waitfor::input::parse(json).map_err(|e| {
        arguments(SpecError {
            field: field.into(),
            ..e
        })
    })?;
    Grants::from_json_named(&value, field, Grants::CAMEL_CASE).map_err(arguments)
}

/// `{version, states, flags, defaultExits}`.
#[napi]
pub fn ouro_constants() -> Value {
    json!({"version": ouro::WAIT_VERSION, "states": ouro::WAIT_STATES,
        "flags": *ouro::WAIT_FLAGS, "defaultExits": ouro::DEFAULT_WAIT_EXITS})
}

/// The seed's `wait` (core's `wait_json`): builds, checks nothing.
#[napi]
pub fn ouro_wait(fields: Value) -> napi::Result<Value> {
    let err = || {
        arguments(SpecError::new(
            "fields",
            Rule::WrongType,
            "must be an object",
        ))
    };
    ouro::wait_json(fields).ok_or_else(err)
}

#[napi]
pub fn ouro_is_wait(value: Value) -> bool {
    ouro::is_wait(&value)
}

/// `{ok, errors}`.
#[napi]
pub fn ouro_validate_wait(value: Value) -> Value {
    json!(ouro::validate_wait(&value))
}

/// Refused as `invalid_wait`, with the rules it breaks in `errors`.
fn envelope(value: Value) -> napi::Result<Wait> {
    Wait::from_json(value).map_err(|e| {
        let WaitError::Invalid { errors } = &e;
        typed(json!({"code": "invalid_wait", "message": e.to_string(), "errors": errors}))
    })
}

#[napi]
pub fn ouro_wait_text(wait: Value) -> napi::Result<String> {
    Ok(ouro::wait_text(&envelope(wait)?))
}

/// `value` as a `T`, or refused naming `field` and what it `must` be.
fn parse<T: serde::de::DeserializeOwned>(field: &str, value: Value, must: &str) -> napi::Result<T> {
    serde_json::from_value(value).map_err(|e| {
        arguments(SpecError::new(
            field,
            Rule::WrongType,
            format!("{must}: {e}"),
        ))
    })
}

/// The exit code of `wait` through `exits` (`{name: code}`) and state `names`.
#[napi]
pub fn ouro_wait_exit(wait: Value, exits: Value, names: Option<Value>) -> napi::Result<i32> {
    let wait = envelope(wait)?;
    let exits: ExitTable = parse("exits", exits, "must map names to integer codes")?;
    let must = "must name each of the four states";
    let names: Option<WaitExits> = names.map(|n| parse("names", n, must)).transpose()?;
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
        .map_err(arguments)
}

/// A read of a JSON Lines log (`None`: its end cursor) as JSON text, on a
/// libuv pool thread: the JavaScript thread never waits on the file.
pub struct EventsRead(JsonlSource, Option<Option<String>>);

impl Task for EventsRead {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        let read = match &self.1 {
            Some(cursor) => self.0.read(cursor.as_deref()).map(|r| json!(r)),
            None => self.0.end_cursor().map(Value::String),
        };
        read.map(|v| v.to_string())
            .map_err(|e| info(ErrorInfo::from(&e)))
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

/// `{events, cursor, fresh, gone, more, malformed}` after `cursor` in the
/// log at `path`, or with `end` the cursor at its end; read only inside
/// `grants`' file roots (JSON text).
#[napi(ts_return_type = "Promise<string>")]
pub fn read_events(
    path: String,
    cursor: Option<String>,
    terminal_types: Option<Vec<String>>,
    grants: Option<String>,
    end: bool,
) -> napi::Result<AsyncTask<EventsRead>> {
    let mut source = JsonlSource::new(path).within(granted(grants.as_deref())?);
    if let Some(types) = terminal_types {
        source = source.with_terminal_types(types);
    }
    Ok(AsyncTask::new(EventsRead(source, (!end).then_some(cursor))))
}

/// Core's event matcher (see `eventMatcher`).
#[napi]
pub struct NativeEventMatcher(ouro::EventMatcher);

#[napi]
impl NativeEventMatcher {
    #[napi(constructor)]
    pub fn new(spec: Value) -> napi::Result<Self> {
        ouro::EventMatcher::from_json(&spec)
            .map(Self)
            .map_err(|e| info(ErrorInfo::new(ErrorCode::InvalidArguments, e.to_string())))
    }

    /// A value that is not an event matches nothing.
    #[napi]
    pub fn matches(&self, event: Value) -> bool {
        serde_json::from_value::<ouro::AxEvent>(event).is_ok_and(|e| self.0.matches(&e))
    }
}

/// `waitFor`'s steps: core's `ouro::HostStepper` says what to do next
/// (`first`, then each `step`'s answer) and `lib/ax.js` does it on the
/// JavaScript clock.
#[napi]
pub struct OuroStepper(HostStepper, Value);

#[napi]
impl OuroStepper {
    /// Starts the wait at `now` (ms since the epoch on the host's clock).
    #[napi(constructor)]
    pub fn new(args: Value, now: f64) -> napi::Result<Self> {
        let (stepper, first) = HostStepper::new(&args, now).map_err(info)?;
        Ok(OuroStepper(stepper, first))
    }

    /// The first action (a read).
    #[napi]
    pub fn first(&self) -> Value {
        self.1.clone()
    }

    /// What happened at `now`; the next action.
    #[napi]
    pub fn step(&mut self, now: f64, what: String, read: Option<Value>) -> napi::Result<Value> {
        self.0.step(now, &what, read).map_err(info)
    }

    /// The envelope, given `{resume?, next?}`: what those functions returned.
    #[napi]
    pub fn finish(&mut self, returned: Value) -> napi::Result<Value> {
        self.0.finish(&returned).map_err(info)
    }
}
