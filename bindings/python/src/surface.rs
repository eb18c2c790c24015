//! Core's shared surface, for `waitfor`: checking a spec or a tool call
//! without running it, finding a profile, parsing a pane id, checking an
//! Ouro `wait/1` envelope.

use crate::convert::text_arg;
use crate::{errors, json_input};
use pyo3::prelude::*;
use pyo3::types::PyString;
use waitfor::profiles::{self, Host};
use waitfor::{ErrorCode, ErrorInfo, Spec};

/// Refuses a spec `wait` would refuse (`SpecError`, `invalid_spec`).
#[pyfunction]
fn check_spec(py: Python<'_>, spec: &Bound<'_, PyAny>) -> PyResult<()> {
    let value = json_input(py, spec, "invalid_spec")?;
    Spec::from_value(&value).map_err(|e| errors::spec_error(py, &e, "invalid_spec"))?;
    Ok(())
}

/// The profile id of a tool call `call_tool` would accept; refuses what
/// it would refuse before running.
#[pyfunction]
#[pyo3(signature = (profile, arguments, *, grants = None))]
fn check_arguments(
    py: Python<'_>,
    profile: &Bound<'_, PyString>,
    arguments: &Bound<'_, PyAny>,
    grants: Option<Bound<'_, PyAny>>,
) -> PyResult<&'static str> {
    let profile = text_arg(py, profile, "profile")?;
    let args = json_input(py, arguments, "invalid_arguments")?;
    let host = Host {
        grants: crate::grants(grants.as_ref())?,
        ..Host::default()
    };
    profiles::check(profile, &args, &host).map_err(|e| errors::tool_error(py, &e, None))
}

/// `(profile, tool_definition)` by profile id or unique tool name.
#[pyfunction]
fn find_profile<'py>(
    py: Python<'py>,
    name: &Bound<'py, PyString>,
) -> PyResult<(&'static str, Bound<'py, PyAny>)> {
    let name = text_arg(py, name, "name")?;
    let def = profiles::find(name).map_err(|e| errors::tool_error(py, &e, None))?;
    Ok((def.profile, crate::convert::to_py(py, &def.tool)?))
}

/// The number of a `%N` pane id (`SpecError`, `invalid_arguments`).
#[pyfunction]
fn parse_pane_id(py: Python<'_>, pane_id: &Bound<'_, PyString>) -> PyResult<u32> {
    waitfor::tmux::parse_pane_id(text_arg(py, pane_id, "pane_id")?, "pane_id")
        .map_err(|e| errors::raise(py, &ErrorInfo::spec(ErrorCode::InvalidArguments, &e), None))
}

/// `{"ok", "errors"}` for an Ouro `wait/1` envelope.
#[pyfunction]
fn validate_wait<'py>(
    py: Python<'py>,
    envelope: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    // The envelope as a value: a `str` is a (wrong) envelope, not JSON text.
    let value = crate::convert::input_to_json(envelope)
        .map_err(|e| errors::not_json(py, &e, "invalid_arguments"))?;
    let validation = serde_json::to_value(waitfor::ouro::validate_wait(&value))
        .map_err(|e| errors::internal(py, &e.to_string()))?;
    crate::convert::to_py(py, &validation)
}

/// Adds these functions to the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_spec, m)?)?;
    m.add_function(wrap_pyfunction!(check_arguments, m)?)?;
    m.add_function(wrap_pyfunction!(find_profile, m)?)?;
    m.add_function(wrap_pyfunction!(parse_pane_id, m)?)?;
    m.add_function(wrap_pyfunction!(validate_wait, m)?)?;
    Ok(())
}
