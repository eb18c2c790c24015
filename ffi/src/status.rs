//! Status codes and the error detail every export can hand back.
//!
//! The table is append-only: a code, once published, keeps its number and
//! meaning forever. Add new codes at the end and bump nothing else.

use serde_json::{json, Value};
use std::ffi::c_char;

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

/// An error on its way to the host: a status code and its JSON detail
/// (`{"status", "kind", "message", ...}`).
#[derive(Debug, Clone, PartialEq)]
pub struct FfiError {
    /// One of the `WAITFOR_ERR_*` codes.
    pub status: i32,
    /// The detail the host reads through `char **error_json`.
    pub detail: Value,
}

impl FfiError {
    /// An error with a message and no further fields; `detail` is
    /// `{"status", "kind", "message"}`.
    pub fn new(status: i32, message: impl Into<String>) -> Self {
        Self {
            status,
            detail: json!({"status": status, "kind": name(status), "message": message.into()}),
        }
    }

    /// A NULL pointer where `what` was required.
    pub fn null(what: &str) -> Self {
        Self::new(WAITFOR_ERR_NULL_POINTER, format!("`{what}` is NULL"))
    }

    /// A rejected spec or argument set; invalid JSON keeps its own code.
    pub fn spec(err: &waitfor::SpecError) -> Self {
        let status = if err.rule == waitfor::Rule::InvalidJson {
            WAITFOR_ERR_INVALID_JSON
        } else {
            WAITFOR_ERR_INVALID_SPEC
        };
        let mut e = Self::new(status, err.to_string());
        e.detail["field"] = err.field.clone().into();
        e.detail["rule"] = serde_json::to_value(err.rule).unwrap_or_default();
        e
    }

    /// A profile call that gave no result.
    pub fn tool(err: &waitfor::profiles::ToolError) -> Self {
        use waitfor::profiles::ToolError;
        match err {
            ToolError::UnknownProfile(_) => Self::new(WAITFOR_ERR_UNKNOWN_PROFILE, err.to_string()),
            ToolError::InvalidArguments(spec) => {
                let mut e = Self::spec(spec);
                e.detail["message"] = err.to_string().into();
                e
            }
            ToolError::Runtime(_) => Self::new(WAITFOR_ERR_RUNTIME, err.to_string()),
        }
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
    }
}
