//! The one place core's errors ([`waitfor::ErrorInfo`]) become errors
//! handed to JavaScript: a JSON document in the message (`code`, `field`,
//! `rule`, `message`), which `lib/errors.js` turns into a `WaitforError`.

use serde_json::{json, Value};
use waitfor::profiles::{Notice, ToolError};
use waitfor::{ErrorCode, ErrorInfo, SpecError};

/// An error whose message is `detail` as JSON (always with `code` and
/// `message`).
pub fn typed(detail: Value) -> napi::Error {
    napi::Error::from_reason(detail.to_string())
}

/// An error of core's shape.
pub fn info(info: &ErrorInfo) -> napi::Error {
    typed(info.to_json())
}

/// A rejected wait spec: code `invalid_spec` with its field and rule.
pub fn spec(err: &SpecError) -> napi::Error {
    info(&ErrorInfo::spec(ErrorCode::InvalidSpec, err))
}

/// Rejected arguments of a function: code `invalid_arguments` with their
/// field and rule.
pub fn arguments(err: &SpecError) -> napi::Error {
    info(&ErrorInfo::spec(ErrorCode::InvalidArguments, err))
}

/// A profile call that gave no result, and the notices its profile sends
/// with the refusal (in `notices`, when there are any).
pub fn tool(err: &ToolError, notices: &[Notice]) -> napi::Error {
    let mut detail = ErrorInfo::from(err).to_json();
    if !notices.is_empty() {
        detail["notices"] = notices.iter().map(Notice::to_json).collect();
    }
    typed(detail)
}

/// Caller JSON text named `what`, read within core's size bound; refused
/// as `invalid_arguments` with the root's rule (`invalid_json`,
/// `too_large`).
pub fn input(what: &str, text: &str) -> napi::Result<Value> {
    waitfor::input::parse(text).map_err(|e| {
        info(&ErrorInfo {
            message: format!("{what}: {e}"),
            ..ErrorInfo::spec(ErrorCode::InvalidArguments, &e)
        })
    })
}

/// Refused arguments: code `invalid_arguments` naming `field` and `rule`.
pub fn invalid(field: &str, rule: &str, message: String) -> napi::Error {
    typed(json!({"code": "invalid_arguments", "field": field, "rule": rule, "message": message}))
}

/// Any other refusal, with its own code.
pub fn other(code: &str, message: impl std::fmt::Display) -> napi::Error {
    typed(json!({"code": code, "field": null, "rule": null, "message": message.to_string()}))
}
