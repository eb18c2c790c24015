//! Plain arguments of the native classes, checked at the edge: a wrong
//! type is a `TypeError` and a value out of range a `ValueError`, each
//! naming the argument, in the words `waitfor.Policy` uses (pyo3's own
//! conversion errors, `OverflowError` or "cannot be converted to
//! 'PyString'", say neither).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
use std::time::Duration;

/// `value`'s repr for a message, cut after 40 characters (a huge int's
/// digits are no help).
fn shown(value: &Bound<'_, PyAny>) -> String {
    let repr = value
        .repr()
        .map_or_else(|_| "?".to_string(), |r| r.to_string_lossy().into_owned());
    match repr.char_indices().nth(40) {
        Some((end, _)) => format!("{}...", &repr[..end]),
        None => repr,
    }
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value.get_type().name().map_or_else(
        |_| "value".to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A timeout in seconds (`None`: none): a real number from 0, not a
/// bool; infinity, or more than a clock holds, is no limit
/// (`Duration::MAX`).
pub fn timeout(name: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Duration>> {
    let Some(value) = value else {
        return Ok(None);
    };
    if value.is_instance_of::<PyBool>()
        || !(value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>())
    {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a number of seconds, not {}",
            type_name(value)
        )));
    }
    // An int too large for a float: an infinity of its sign.
    let seconds = value.extract::<f64>().unwrap_or_else(|_| {
        if value.lt(0).unwrap_or(false) {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }
    });
    if seconds.is_nan() || seconds < 0.0 {
        return Err(PyValueError::new_err(format!(
            "{name} must be a number of seconds from 0 (inf: no limit), not {}",
            shown(value)
        )));
    }
    Ok(Some(
        Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX),
    ))
}

/// An observation's `text`: a `str` (valid UTF-8) or `None`.
pub fn text(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    let text = value.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!(
            "text must be a str or None, not {}",
            type_name(value)
        ))
    })?;
    let text = text.to_str().map_err(|_| {
        PyValueError::new_err("text must be valid UTF-8: it holds a lone surrogate")
    })?;
    Ok(Some(text.to_owned()))
}

/// An observation's `exit_code`: an `int` an `i32` holds (the engine's
/// exit status), not a bool, or `None`.
pub fn exit_code(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<i32>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "exit_code must be an int (an exit status) or None, not {}",
            type_name(value)
        )));
    }
    value.extract::<i32>().map(Some).map_err(|_| {
        PyValueError::new_err(format!(
            "exit_code must be a whole number from -2**31 to 2**31 - 1, not {}",
            shown(value)
        ))
    })
}
