//! `waitfor._native`: the engine for the `waitfor` Python package.
//!
//! The pure-Python package (`python/waitfor`) gives the public API; this
//! module converts at the edges and runs waits on the Rust engine with the
//! GIL released, attaching only to call Python probes and callbacks.

mod aio;
mod args;
mod convert;
mod errors;
mod handle;
mod handoff;
mod invoke;
mod observe;
mod probe;
mod ready;
mod surface;
mod sync;

use handle::{Callbacks, HostProbe, NativeHandle};
use invoke::{Calls, SharedCalls};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use std::sync::Arc;
use std::time::Duration;
use waitfor::grants::Grants;
use waitfor::profiles::{self, Host};
use waitfor::{Policy, Spec, WaitOptions};

/// JSON input (a `str` of JSON, or dicts and lists) as a value; refused
/// input raises `SpecError` with `code`.
fn json_input(py: Python<'_>, input: &Bound<'_, PyAny>, code: &str) -> PyResult<serde_json::Value> {
    if let Ok(text) = input.cast::<PyString>() {
        let text = text
            .to_str()
            .map_err(|_| errors::not_json(py, &convert::not_utf8(""), code))?;
        return waitfor::input::parse(text).map_err(|e| errors::spec_error(py, &e, code));
    }
    convert::input_to_json(input).map_err(|e| errors::not_json(py, &e, code))
}

/// What built-in probes may reach: `grants` is the dict that
/// `waitfor.Grants` makes (`None`: nothing).
fn grants(grants: Option<&Bound<'_, PyAny>>) -> PyResult<Grants> {
    let Some(grants) = grants else {
        return Ok(Grants::none());
    };
    let value = convert::to_json(grants)
        .map_err(|e| pyo3::exceptions::PyTypeError::new_err(format!("grants: {e}")))?;
    Grants::from_json(&value, "grants")
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

fn policy(
    ceiling: Option<f64>,
    output_cap: Option<usize>,
    granted: Option<&Bound<'_, PyAny>>,
) -> PyResult<Policy> {
    let mut policy = Policy::default().grants(grants(granted)?);
    if let Some(ceiling) = ceiling {
        policy = policy.max_wait_ceiling(seconds(ceiling)?);
    }
    if let Some(cap) = output_cap {
        policy = policy.output_cap(cap);
    }
    Ok(policy)
}

fn seconds(value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("{value} seconds: {e}")))
}

/// Starts a wait. `probe` is a Python callable or `None` for the spec's
/// built-in probe; with `inbox` (its loop's), it is called on the loop.
#[pyfunction]
#[pyo3(signature = (spec, probe = None, *, takes_ctx = false, stream = false, on_progress = None,
    on_done = None, event_loop = None, inbox = None, max_wait_ceiling = None, output_cap = None,
    grants = None))]
#[allow(clippy::too_many_arguments)]
fn start(
    py: Python<'_>,
    spec: &Bound<'_, PyAny>,
    probe: Option<Py<PyAny>>,
    takes_ctx: bool,
    stream: bool,
    on_progress: Option<Py<PyAny>>,
    on_done: Option<Py<PyAny>>,
    event_loop: Option<Py<PyAny>>,
    inbox: Option<PyRef<'_, aio::LoopInbox>>,
    max_wait_ceiling: Option<f64>,
    output_cap: Option<usize>,
    grants: Option<Bound<'_, PyAny>>,
) -> PyResult<NativeHandle> {
    let value = json_input(py, spec, "invalid_spec")?;
    let spec = Spec::from_value(&value).map_err(|e| errors::spec_error(py, &e, "invalid_spec"))?;
    let calls: SharedCalls = Arc::new(Calls::of_caller(py, event_loop)?);
    let probe = probe.map(|func| probe::PyProbe {
        func,
        takes_ctx,
        stream,
        calls: calls.clone(),
    });
    let probe = match (probe, inbox) {
        (Some(probe), Some(inbox)) => HostProbe::OnLoop(aio::LoopProbe::new(probe, &inbox)),
        (probe, _) => HostProbe::Blocking(probe.map(|p| Box::new(p) as Box<dyn waitfor::Probe>)),
    };
    let callbacks = Callbacks {
        on_progress,
        on_done,
        notices: None,
    };
    handle::start(
        py,
        spec,
        probe,
        WaitOptions::default().policy(policy(max_wait_ceiling, output_cap, grants.as_ref())?),
        callbacks,
        calls,
        None,
    )
}

/// Starts a profile call (`aura/wait_for`, ...); its result is the tool's
/// output. `tools(name, arguments)` serves a `wait_for` probe's tool calls;
/// `on_progress(ToolProgress)` and `on_log(level, message)` hear the
/// profile's notices (a refusal's before it raises).
#[pyfunction]
#[pyo3(signature = (profile, arguments, *, tools = None, on_progress = None, on_log = None,
    on_done = None, event_loop = None, max_wait_ceiling = None, grants = None))]
#[allow(clippy::too_many_arguments)]
fn call_tool(
    py: Python<'_>,
    profile: &Bound<'_, PyString>,
    arguments: &Bound<'_, PyAny>,
    tools: Option<Py<PyAny>>,
    on_progress: Option<Py<PyAny>>,
    on_log: Option<Py<PyAny>>,
    on_done: Option<Py<PyAny>>,
    event_loop: Option<Py<PyAny>>,
    max_wait_ceiling: Option<f64>,
    grants: Option<Bound<'_, PyAny>>,
) -> PyResult<NativeHandle> {
    let profile = convert::text_arg(py, profile, "profile")?;
    let args = json_input(py, arguments, "invalid_arguments")?;
    let calls: SharedCalls = Arc::new(Calls::of_caller(py, event_loop)?);
    let host = Host {
        tools: tools.map(|func| {
            Arc::new(probe::PyTools {
                func,
                calls: calls.clone(),
            }) as Arc<dyn profiles::ToolCaller>
        }),
        grants: self::grants(grants.as_ref())?,
        max_wait_ceiling: max_wait_ceiling.map(seconds).transpose()?,
    };
    let prepared = py
        .detach(|| profiles::prepare(profile, &args, &host))
        .map_err(|e| refused(py, profile, &e, on_log.as_ref(), &calls))?;
    let (spec, probe, options, render, report) = prepared.into_parts();
    let callbacks = Callbacks {
        on_progress,
        on_done,
        notices: Some(handle::Notices { report, on_log }),
    };
    handle::start(
        py,
        spec,
        HostProbe::Blocking(Some(probe)),
        options,
        callbacks,
        calls,
        Some(render),
    )
}

/// The error of a refused tool call, after its log notices went to
/// `on_log`, here on the caller's thread in its context (so before the
/// caller sees the error).
fn refused(
    py: Python<'_>,
    profile: &str,
    error: &profiles::ToolError,
    on_log: Option<&Py<PyAny>>,
    calls: &SharedCalls,
) -> PyErr {
    for notice in profiles::refusal_notices(profile, error) {
        if let (profiles::Notice::Log(log), Some(on_log)) = (notice, on_log) {
            let args = (log.level.as_str(), log.message);
            if let Err(err) = args
                .into_pyobject(py)
                .and_then(|args| calls.context.run(py, on_log.bind(py), args))
            {
                err.write_unraisable(py, Some(on_log.bind(py)));
            }
        }
    }
    errors::tool_error(py, error, None)
}

/// Sets how many profile calls may be in flight in this process (core's
/// `set_max_calls`); gives the cap it replaces.
#[pyfunction]
fn set_max_tool_calls(cap: usize) -> usize {
    profiles::set_max_calls(cap)
}

/// How many profile calls may be in flight in this process.
#[pyfunction]
fn max_tool_calls() -> usize {
    profiles::max_calls()
}

/// Every profile as `(profile, tool_definition)`.
#[pyfunction]
fn definitions(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let items = profiles::definitions()
        .into_iter()
        .map(|d| Ok((d.profile, convert::to_py(py, &d.tool)?)))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// Runs a shared test vector on virtual time; gives its answer.
#[pyfunction]
fn simulate<'py>(py: Python<'py>, vector: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let vector = json_input(py, vector, "invalid_spec")?;
    let answer = py
        .detach(|| waitfor::vectors::run(&vector))
        .map_err(|e| errors::spec_error(py, &e, "invalid_spec"))?;
    convert::to_py(py, &answer)
}

/// Milliseconds in a duration such as `"90s"` (core's `parse_millis`);
/// `None` stands for a value that is no `str`. Refusals raise `SpecError`
/// (`invalid_arguments`, field `duration`). A lone surrogate, which no
/// duration holds, is read as U+FFFD rather than raising a codec error.
#[pyfunction]
fn parse_duration(py: Python<'_>, text: Option<&Bound<'_, PyString>>) -> PyResult<u64> {
    match text {
        Some(text) => waitfor::duration::parse_millis(&text.to_string_lossy()),
        None => Err(waitfor::duration::not_a_text()),
    }
    .map_err(|e| errors::spec_error(py, &e, "invalid_arguments"))
}

/// The shortest exact text for `ms` milliseconds (core's `format_millis`:
/// a fraction rounds to the nearest, a half upwards); `None` stands for a
/// value that is no number. Refusals raise `SpecError`
/// (`invalid_arguments`, field `duration`).
#[pyfunction]
fn format_duration(py: Python<'_>, ms: Option<f64>) -> PyResult<String> {
    match ms {
        Some(ms) => waitfor::duration::format_millis(ms),
        None => Err(waitfor::duration::not_a_number()),
    }
    .map_err(|e| errors::spec_error(py, &e, "invalid_arguments"))
}

/// Checks a timeout in seconds (`None`: none) as `NativeHandle.result`
/// and `ProbeContext.wait_cancelled` do: for a `WaitHandle` whose result
/// the package already holds.
#[pyfunction]
#[pyo3(signature = (name, timeout))]
fn check_timeout(name: &str, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    args::timeout(name, timeout).map(drop)
}

/// Records keys this process sent to a tmux pane (`send-keys` arguments),
/// so pane waits discount their echo. Refused as the C door refuses it
/// (core's `Grants::check_send_keys`; `SpecError`, `invalid_arguments`):
/// `socket_name` as the `wait_for_text` profiles refuse it (a NUL byte,
/// rule `contains_nul`; a path unless `grants` allow socket paths, rule
/// `not_granted`; empty is the default socket), then a `pane_id` not of
/// the form `%N` (rule `invalid_pane_id`). A str holding a lone surrogate
/// is refused with rule `invalid_json`.
#[pyfunction]
#[pyo3(signature = (socket_name, pane_id, keys, *, literal = false, enter = false, grants = None))]
fn record_send_keys(
    py: Python<'_>,
    socket_name: Option<Bound<'_, PyString>>,
    pane_id: Bound<'_, PyString>,
    keys: Vec<Bound<'_, PyString>>,
    literal: bool,
    enter: bool,
    grants: Option<Bound<'_, PyAny>>,
) -> PyResult<()> {
    let socket_name = socket_name
        .as_ref()
        .map(|name| convert::text_arg(py, name, "socket_name"))
        .transpose()?;
    let pane_id = convert::text_arg(py, &pane_id, "pane_id")?;
    let keys = keys
        .iter()
        .enumerate()
        .map(|(i, key)| convert::text_arg(py, key, &format!("keys[{i}]")))
        .collect::<PyResult<Vec<&str>>>()?;
    self::grants(grants.as_ref())?
        .check_send_keys(socket_name, pane_id, ["socket_name", "pane_id"])
        .map_err(|e| errors::spec_error(py, &e, "invalid_arguments"))?;
    waitfor::tmux::record_send_keys(socket_name, pane_id, &keys, literal, enter);
    Ok(())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    invoke::survive_fork(m.py())?;
    m.add_function(wrap_pyfunction!(start, m)?)?;
    m.add_function(wrap_pyfunction!(call_tool, m)?)?;
    m.add_function(wrap_pyfunction!(definitions, m)?)?;
    m.add_function(wrap_pyfunction!(set_max_tool_calls, m)?)?;
    m.add_function(wrap_pyfunction!(max_tool_calls, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(format_duration, m)?)?;
    m.add_function(wrap_pyfunction!(record_send_keys, m)?)?;
    m.add_function(wrap_pyfunction!(check_timeout, m)?)?;
    m.add_function(wrap_pyfunction!(invoke::_shutdown, m)?)?;
    surface::register(m)?;
    m.add_class::<NativeHandle>()?;
    m.add_class::<aio::LoopInbox>()?;
    m.add_class::<handle::PyProgress>()?;
    m.add_class::<handle::PyToolProgress>()?;
    m.add_class::<observe::PyObservation>()?;
    m.add_class::<observe::PyProbeContext>()?;
    m.add("RESULT_SCHEMA", waitfor::RESULT_SCHEMA)?;
    m.add("SPEC_SCHEMA", waitfor::SPEC_SCHEMA)?;
    m.add("UNKNOWN_TOOL", profiles::UNKNOWN_TOOL)?;
    // For `waitfor.mcp`, which joins a lent tool's error text no further.
    m.add("MAX_ERROR_BYTES", waitfor::ProbeError::MAX_MESSAGE_BYTES)?;
    Ok(())
}
