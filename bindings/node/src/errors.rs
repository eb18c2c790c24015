//! Errors handed to JavaScript: a JSON document in the message, which the
//! JavaScript layer turns into a `WaitforError` with `code`, `field`,
//! `rule` and `errors`.

use serde_json::{json, Value};
use waitfor::profiles::{Notice, ToolError};
use waitfor::SpecError;

/// An error whose message is `detail` as JSON (always with `code` and
/// `message`).
pub fn typed(detail: Value) -> napi::Error {
    napi::Error::from_reason(detail.to_string())
}

/// A rejected spec or argument: code `invalid_arguments` with its field
/// and rule.
pub fn spec(err: &SpecError) -> napi::Error {
    typed(spec_detail(err))
}

fn spec_detail(err: &SpecError) -> Value {
    json!({
        "code": "invalid_arguments",
        "message": err.to_string(),
        "field": err.field,
        "rule": err.rule,
    })
}

fn tool_detail(err: &ToolError) -> Value {
    match err {
        ToolError::InvalidArguments(e) => spec_detail(e),
        other => json!({"code": other.code(), "message": other.to_string()}),
    }
}

/// A profile call that gave no result, and the notices its profile sends
/// with the refusal (in `notices`, when there are any).
pub fn tool(err: &ToolError, notices: &[Notice]) -> napi::Error {
    let mut detail = tool_detail(err);
    if !notices.is_empty() {
        detail["notices"] = notices.iter().map(Notice::to_json).collect();
    }
    typed(detail)
}

/// Any other refusal, with its own code.
pub fn other(code: &str, message: impl std::fmt::Display) -> napi::Error {
    typed(json!({"code": code, "message": message.to_string()}))
}
