//! Status codes and the error detail every export can hand back.
//!
//! The table is append-only: a code, once published, keeps its number and
//! meaning forever. Add new codes at the end and bump nothing else.

use serde_json::{json, Value};
use std::ffi::c_char;
use waitfor::{ErrorCode, ErrorInfo, Rule};

/// Success.
pub const WAITFOR_OK: i32 = 0;
/// An input that must be JSON is not (syntax error, truncated text).
pub const WAITFOR_ERR_INVALID_JSON: i32 = 1;
/// An input string is not valid UTF-8.
pub const WAITFOR_ERR_INVALID_UTF8: i32 = 2;
/// A pointer that is required was NULL (or NULL with a non-zero length).
pub const WAITFOR_ERR_NULL_POINTER: i32 = 3;
/// A spec, a profile's arguments or a test vector broke a rule of its
/// schema; the error JSON names the `field` and the `rule`.
pub const WAITFOR_ERR_INVALID_SPEC: i32 = 4;
/// No profile has that name.
pub const WAITFOR_ERR_UNKNOWN_PROFILE: i32 = 5;
/// A profile's wait ran and could not finish normally (its probe failed,
/// its output went over the cap, ...): an MCP server returns it as a tool
/// result with `isError: true`.
pub const WAITFOR_ERR_RUNTIME: i32 = 6;
/// `waitfor_handle_wait` returned before the wait ended (its timeout
/// passed); the handle stays usable.
pub const WAITFOR_ERR_TIMEOUT: i32 = 7;
/// Rust panicked inside the library; the error JSON carries the panic
/// message. The library stays usable, but please report it.
pub const WAITFOR_ERR_PANIC: i32 = 8;
/// A scalar argument is not acceptable (a duration text that does not
/// parse, a negative value where none is allowed).
pub const WAITFOR_ERR_INVALID_ARGUMENT: i32 = 9;
/// A profile call refused at once because this process already runs as
/// many profile calls as the host allows (`waitfor_set_max_tool_calls`);
/// the calls running go on. An MCP server returns it as a tool result
/// with `isError: true`; the call may succeed once another has ended.
pub const WAITFOR_ERR_TOO_MANY_CALLS: i32 = 10;

/// The name of every code, indexed by code, NUL-terminated for C.
const NAMES: &[&str] = &[
    "ok\0",
    "invalid_json\0",
    "invalid_utf8\0",
    "null_pointer\0",
    "invalid_spec\0",
    "unknown_profile\0",
    "runtime\0",
    "timeout\0",
    "panic\0",
    "invalid_argument\0",
    "too_many_calls\0",
];

fn name_with_nul(code: i32) -> &'static str {
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("unknown\0")
}

/// The stable name of a status code, `"unknown"` for a code not in the
/// table: `name(4)` is `"invalid_spec"`.
pub fn name(code: i32) -> &'static str {
    name_with_nul(code).trim_end_matches('\0')
}

/// The same name as a NUL-terminated C string, for `waitfor_status_name`.
pub(crate) fn c_name(code: i32) -> *const c_char {
    name_with_nul(code).as_ptr().cast()
}

/// Core's error code for a status, when the status is an error of the
/// input or the wait (`None` for `WAITFOR_OK` and `WAITFOR_ERR_TIMEOUT`).
fn code_of(status: i32) -> Option<ErrorCode> {
    match status {
        WAITFOR_ERR_INVALID_SPEC => Some(ErrorCode::InvalidSpec),
        WAITFOR_ERR_INVALID_JSON
        | WAITFOR_ERR_INVALID_UTF8
        | WAITFOR_ERR_NULL_POINTER
        | WAITFOR_ERR_INVALID_ARGUMENT => Some(ErrorCode::InvalidArguments),
        WAITFOR_ERR_UNKNOWN_PROFILE => Some(ErrorCode::UnknownProfile),
        WAITFOR_ERR_RUNTIME => Some(ErrorCode::Runtime),
        WAITFOR_ERR_TOO_MANY_CALLS => Some(ErrorCode::TooManyCalls),
        WAITFOR_ERR_PANIC => Some(ErrorCode::Internal),
        _ => None,
    }
}

/// The status of each core error code.
fn status_of(info: &ErrorInfo) -> i32 {
    match info.code {
        _ if info.rule == Some(Rule::InvalidJson) => WAITFOR_ERR_INVALID_JSON,
        ErrorCode::InvalidSpec | ErrorCode::InvalidArguments => WAITFOR_ERR_INVALID_SPEC,
        ErrorCode::UnknownProfile => WAITFOR_ERR_UNKNOWN_PROFILE,
        ErrorCode::Internal => WAITFOR_ERR_PANIC,
        ErrorCode::TooManyCalls => WAITFOR_ERR_TOO_MANY_CALLS,
        _ => WAITFOR_ERR_RUNTIME,
    }
}

/// An error on its way to the host: a status code and its JSON detail
/// (`{"status", "kind", "code", "field", "rule", "message"}`: `kind` names
/// the status, and `code`, `field`, `rule`, `message` are the shape core
/// gives errors in every language; `code` is `null` only for
/// `WAITFOR_ERR_TIMEOUT`).
#[derive(Debug, Clone, PartialEq)]
pub struct FfiError {
    /// One of the `WAITFOR_ERR_*` codes.
    pub status: i32,
    /// The detail the host reads through `char **error_json`.
    pub detail: Value,
}

impl FfiError {
    /// An error with a message and no field.
    pub fn new(status: i32, message: impl Into<String>) -> Self {
        Self {
            status,
            detail: json!({
                "status": status, "kind": name(status), "code": code_of(status),
                "field": null, "rule": null, "message": message.into(),
            }),
        }
    }

    /// An error of core's shape, with the status that fits its code.
    pub fn info(info: &ErrorInfo) -> Self {
        let status = status_of(info);
        let mut detail = info.to_json();
        detail["status"] = status.into();
        detail["kind"] = name(status).into();
        Self { status, detail }
    }

    /// A NULL pointer where `what` was required.
    pub fn null(what: &str) -> Self {
        Self::new(WAITFOR_ERR_NULL_POINTER, format!("`{what}` is NULL"))
    }

    /// A rejected spec; invalid JSON keeps its own status.
    pub fn spec(err: &waitfor::SpecError) -> Self {
        Self::info(&ErrorInfo::spec(ErrorCode::InvalidSpec, err))
    }

    /// A rejected scalar argument of an export (a pane id):
    /// `WAITFOR_ERR_INVALID_ARGUMENT`, code `invalid_arguments`.
    pub fn arguments(err: &waitfor::SpecError) -> Self {
        let mut e = Self::info(&ErrorInfo::spec(ErrorCode::InvalidArguments, err));
        e.status = WAITFOR_ERR_INVALID_ARGUMENT;
        e.detail["status"] = e.status.into();
        e.detail["kind"] = name(e.status).into();
        e
    }

    /// A profile call that gave no result.
    pub fn tool(err: &waitfor::profiles::ToolError) -> Self {
        Self::info(&ErrorInfo::from(err))
    }
}

impl From<waitfor::SpecError> for FfiError {
    fn from(err: waitfor::SpecError) -> Self {
        Self::spec(&err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable() {
        assert_eq!(name(WAITFOR_ERR_INVALID_SPEC), "invalid_spec");
        assert_eq!(name(WAITFOR_ERR_TOO_MANY_CALLS), "too_many_calls");
        assert_eq!(name(-1), "unknown");
        let err = FfiError::new(WAITFOR_ERR_NULL_POINTER, "spec is NULL");
        assert_eq!(err.detail["kind"], "null_pointer");
    }

    #[test]
    fn c_names_match_names() {
        for code in -1..12 {
            let c = unsafe { std::ffi::CStr::from_ptr(c_name(code)) };
            assert_eq!(c.to_str().unwrap(), name(code));
        }
    }

    #[test]
    fn invalid_json_keeps_its_code() {
        let err = waitfor::Spec::from_json("{").unwrap_err();
        assert_eq!(FfiError::spec(&err).status, WAITFOR_ERR_INVALID_JSON);
        let err = waitfor::Spec::from_json("{}").unwrap_err();
        let e = FfiError::spec(&err);
        assert_eq!(e.status, WAITFOR_ERR_INVALID_SPEC);
        assert_eq!(e.detail["rule"], "missing_field");
        assert_eq!(e.detail["code"], "invalid_spec");
    }

    #[test]
    fn every_error_has_cores_shape() {
        let err = FfiError::new(WAITFOR_ERR_PANIC, "boom");
        assert_eq!(err.detail["code"], "internal");
        assert!(err.detail["field"].is_null() && err.detail["rule"].is_null());
        let unknown = waitfor::profiles::find("nope").unwrap_err();
        let err = FfiError::tool(&unknown);
        assert_eq!(
            (err.status, &err.detail["code"]),
            (WAITFOR_ERR_UNKNOWN_PROFILE, &json!("unknown_profile"))
        );
        assert_eq!(
            FfiError::new(WAITFOR_ERR_TIMEOUT, "later").detail["code"],
            Value::Null
        );
    }
}
