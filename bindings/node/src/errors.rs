//! The one place core's errors ([`waitfor::ErrorInfo`]) become JavaScript
//! errors: a JSON document in the message (`code`, `field`, `rule`,
//! `message`), which `lib/errors.js` turns into a `WaitforError`.

use napi_derive::napi;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use waitfor::profiles::{Notice, ToolError};
use waitfor::{ErrorCode, ErrorInfo, Rule, SpecError};

/// An error whose message is `detail` as JSON (with `code` and `message`).
pub fn typed(detail: Value) -> napi::Error {
    napi::Error::from_reason(detail.to_string())
}

/// An error of core's shape.
pub fn info(info: &ErrorInfo) -> napi::Error {
    typed(info.to_json())
}

/// A rejected wait spec: `invalid_spec` with its field and rule.
pub fn spec(err: &SpecError) -> napi::Error {
    info(&ErrorInfo::spec(ErrorCode::InvalidSpec, err))
}

/// Rejected arguments: `invalid_arguments` with their field and rule.
pub fn arguments(err: &SpecError) -> napi::Error {
    info(&ErrorInfo::spec(ErrorCode::InvalidArguments, err))
}

/// A profile call that gave no result, with the notices its profile sends
/// with the refusal (in `notices`, when there are any).
pub fn tool(err: &ToolError, notices: &[Notice]) -> napi::Error {
    let mut detail = ErrorInfo::from(err).to_json();
    if !notices.is_empty() {
        detail["notices"] = notices.iter().map(Notice::to_json).collect();
    }
    typed(detail)
}

/// Caller JSON text named `what`, read within core's size bound; a field
/// its errors name is a path inside it (`""`: all of it).
pub fn input(what: &str, text: &str) -> napi::Result<Value> {
    read(what, text, str::to_string)
}

/// The JSON text of option `what` (`options.grants`), read as [`input`]
/// reads; its errors name fields under `what`, as core's checks of it do.
pub fn option(what: &str, text: &str) -> napi::Result<Value> {
    read(what, text, |at| match at {
        "" => what.to_string(),
        at => format!("{what}.{at}"),
    })
}

fn read(what: &str, text: &str, field: impl Fn(&str) -> String) -> napi::Result<Value> {
    waitfor::input::parse(text).map_err(|e| {
        let message = format!("{what}: {e}");
        info(&ErrorInfo {
            message,
            field: Some(field(&e.field)),
            ..ErrorInfo::spec(ErrorCode::InvalidArguments, &e)
        })
    })
}

/// Refused arguments: `invalid_arguments` naming `field` and `rule`.
pub fn invalid(field: &str, rule: &str, message: String) -> napi::Error {
    typed(json!({"code": "invalid_arguments", "field": field, "rule": rule, "message": message}))
}

/// `value` as a `T`, or `invalid_arguments` naming `field` and what it `must` be.
pub fn parse<T: DeserializeOwned>(field: &str, value: Value, must: &str) -> napi::Result<T> {
    serde_json::from_value(value)
        .map_err(|e| invalid(field, "wrong_type", format!("{field}: {must}: {e}")))
}

/// Any other refusal, with its own code.
pub fn other(code: &str, message: impl std::fmt::Display) -> napi::Error {
    typed(json!({"code": code, "field": null, "rule": null, "message": message.to_string()}))
}

/// The detail of an `invalid_arguments` error the package's own checks
/// raise (`invalid` in `lib/errors.js`): core names `field` (cut when
/// long) and words it.
#[napi]
pub fn invalid_arguments(field: String, rule: String, message: String) -> napi::Result<Value> {
    let rule: Rule = serde_json::from_value(rule.into()).map_err(|e| other("internal", e))?;
    let err = SpecError::new(field, rule, message);
    Ok(ErrorInfo::spec(ErrorCode::InvalidArguments, &err).to_json())
}
