//! Raising the package's exceptions (`waitfor._errors`) from Rust.

use crate::convert::NotJson;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use waitfor::profiles::ToolError;

fn raise(
    py: Python<'_>,
    class: &str,
    message: &str,
    kwargs: &[(&str, &str)],
    cause: Option<&Py<PyAny>>,
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let class = py.import("waitfor._errors")?.getattr(class)?;
        let kw = PyDict::new(py);
        for (k, v) in kwargs {
            kw.set_item(k, v)?;
        }
        let err = PyErr::from_value(class.call((message,), Some(&kw))?);
        if let Some(cause) = cause {
            err.set_cause(py, Some(PyErr::from_value(cause.bind(py).clone())));
        }
        Ok(err)
    };
    build().unwrap_or_else(|e| e)
}

/// `SpecError` for a refused spec (`code` `invalid_spec`) or tool input
/// (`invalid_arguments`).
pub fn spec_error(py: Python<'_>, err: &waitfor::SpecError, code: &str) -> PyErr {
    let rule = serde_json::to_value(err.rule)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    raise(
        py,
        "SpecError",
        &err.to_string(),
        &[("field", &err.field), ("rule", &rule), ("code", code)],
        None,
    )
}

/// `SpecError` for input that is not JSON at all.
pub fn not_json(py: Python<'_>, err: &NotJson, code: &str) -> PyErr {
    let field = err.path.trim_start_matches('$').trim_start_matches('.');
    raise(
        py,
        "SpecError",
        &err.to_string(),
        &[("field", field), ("rule", "wrong_type"), ("code", code)],
        None,
    )
}

/// The exception for a failed profile call; `cause` is the last exception
/// a Python tool caller raised.
pub fn tool_error(py: Python<'_>, err: &ToolError, cause: Option<&Py<PyAny>>) -> PyErr {
    match err {
        ToolError::InvalidArguments(spec) => spec_error(py, spec, err.code()),
        _ => raise(
            py,
            "ToolError",
            &err.to_string(),
            &[("code", err.code())],
            cause,
        ),
    }
}

/// `InternalError`: something that should not happen.
pub fn internal(py: Python<'_>, message: &str) -> PyErr {
    raise(py, "InternalError", message, &[], None)
}
