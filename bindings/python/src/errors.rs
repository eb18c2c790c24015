//! The one place core's errors ([`waitfor::ErrorInfo`]) become the
//! package's exceptions (`waitfor._errors`): `code`, `field`, `rule` and
//! `message` are core's, the class follows the code.

use crate::convert::NotJson;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use waitfor::profiles::ToolError;
use waitfor::{ErrorCode, ErrorInfo};

/// The exception class of each code.
fn class_of(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::InvalidSpec | ErrorCode::InvalidArguments => "SpecError",
        ErrorCode::UnknownProfile | ErrorCode::Runtime | ErrorCode::TooManyCalls => "ToolError",
        ErrorCode::ProbeError => "ProbeError",
        ErrorCode::Internal => "InternalError",
        _ => "WaitforError",
    }
}

/// The core code spelled `code` (a code the package passes itself).
fn code_of(code: &str) -> ErrorCode {
    let found = ErrorCode::ALL.into_iter().find(|c| c.as_str() == code);
    debug_assert!(found.is_some(), "`{code}` is not one of core's error codes");
    found.unwrap_or(ErrorCode::Internal)
}

/// The exception for `info`; `cause` becomes its `__cause__`.
pub fn raise(py: Python<'_>, info: &ErrorInfo, cause: Option<&Py<PyAny>>) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let class = py.import("waitfor._errors")?.getattr(class_of(info.code))?;
        let kw = PyDict::new(py);
        kw.set_item("code", info.code.as_str())?;
        kw.set_item("field", info.field.as_deref())?;
        let rule = info
            .rule
            .and_then(|r| serde_json::to_value(r).ok())
            .and_then(|v| v.as_str().map(str::to_string));
        kw.set_item("rule", rule)?;
        let err = PyErr::from_value(class.call((&info.message,), Some(&kw))?);
        if let Some(cause) = cause {
            err.set_cause(py, Some(PyErr::from_value(cause.bind(py).clone())));
        }
        Ok(err)
    };
    build().unwrap_or_else(|e| e)
}

/// `SpecError` for a refused spec (`code` `invalid_spec`) or other input
/// (`invalid_arguments`).
pub fn spec_error(py: Python<'_>, err: &waitfor::SpecError, code: &str) -> PyErr {
    raise(py, &ErrorInfo::spec(code_of(code), err), None)
}

/// `SpecError` for input that is not JSON at all.
pub fn not_json(py: Python<'_>, err: &NotJson, code: &str) -> PyErr {
    let field = err.path.trim_start_matches('$').trim_start_matches('.');
    let spec = waitfor::SpecError::new(field, err.rule, err.to_string());
    let info = ErrorInfo {
        message: err.to_string(),
        ..ErrorInfo::spec(code_of(code), &spec)
    };
    raise(py, &info, None)
}

/// The exception for a failed profile call; `cause` is the last exception
/// a Python tool caller raised.
pub fn tool_error(py: Python<'_>, err: &ToolError, cause: Option<&Py<PyAny>>) -> PyErr {
    raise(py, &ErrorInfo::from(err), cause)
}

/// `InternalError`: something that should not happen.
pub fn internal(py: Python<'_>, message: &str) -> PyErr {
    raise(py, &ErrorInfo::new(ErrorCode::Internal, message), None)
}
