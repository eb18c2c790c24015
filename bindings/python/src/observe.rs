//! What Python probes return, and what they are told.

use crate::convert;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use waitfor::{CancelToken, ProbeError};

/// One observation of a probe: ``text``, optional structured ``json``
/// (for ``json`` conditions), the ``exit_code`` of a process it ran, and
/// ``gone`` when the target can no longer change.
///
/// A probe may also return a plain ``str``, UTF-8 ``bytes``, or a
/// ``dict``/``list`` (taken as ``json``).
///
/// >>> Observation("ready", exit_code=0).exit_code
/// 0
/// >>> Observation(json={"status": "ok"}).text
/// '{"status":"ok"}'
#[pyclass(frozen, module = "waitfor", name = "Observation")]
pub struct PyObservation {
    pub inner: waitfor::Observation,
}

#[pymethods]
impl PyObservation {
    #[new]
    #[pyo3(signature = (text = None, *, json = None, exit_code = None, gone = false))]
    fn new(
        py: Python<'_>,
        text: Option<String>,
        json: Option<&Bound<'_, PyAny>>,
        exit_code: Option<i32>,
        gone: bool,
    ) -> PyResult<Self> {
        let mut inner = match json {
            Some(json) if !json.is_none() => {
                let value = convert::to_json(json)
                    .map_err(|e| crate::errors::not_json(py, &e, "invalid_arguments"))?;
                waitfor::Observation::json(value)
            }
            _ => waitfor::Observation::default(),
        };
        if let Some(text) = text {
            inner.text = text;
        }
        inner.exit_code = exit_code;
        inner.gone = gone;
        Ok(Self { inner })
    }

    /// The text the conditions read.
    #[getter]
    fn text(&self) -> &str {
        &self.inner.text
    }

    /// The structured output, or ``None``.
    #[getter]
    fn json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.inner.json {
            Some(value) => convert::to_py(py, value),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// Exit status of a process the probe ran, or ``None``.
    #[getter]
    fn exit_code(&self) -> Option<i32> {
        self.inner.exit_code
    }

    /// Whether the target can no longer change.
    #[getter]
    fn gone(&self) -> bool {
        self.inner.gone
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let text = PyString::new(py, &self.inner.text).repr()?;
        let json = self.json(py)?.repr()?;
        let exit_code = self
            .inner
            .exit_code
            .map_or("None".into(), |c| c.to_string());
        let gone = if self.inner.gone { "True" } else { "False" };
        Ok(format!(
            "Observation(text={text}, json={json}, exit_code={exit_code}, gone={gone})"
        ))
    }
}

/// What a probe call is told about itself: ``sample`` (1 for the first
/// call), ``elapsed`` and ``budget`` (seconds since the wait began, and
/// left before the call is abandoned), and whether the wait stopped
/// wanting the answer (``cancelled``).
///
/// A slow probe sleeps in :meth:`wait_cancelled` instead of
/// ``time.sleep``, so a cancelled wait releases it at once.
#[pyclass(frozen, module = "waitfor", name = "ProbeContext")]
pub struct PyProbeContext {
    sample: u64,
    elapsed: f64,
    budget: f64,
    cancel: CancelToken,
}

impl PyProbeContext {
    pub fn new(ctx: &waitfor::ProbeContext) -> Self {
        Self {
            sample: ctx.sample,
            elapsed: ctx.elapsed.as_secs_f64(),
            budget: ctx.budget.as_secs_f64(),
            cancel: ctx.cancel.clone(),
        }
    }
}

#[pymethods]
impl PyProbeContext {
    /// 1 for the first call of a wait, 2 for the next, ...
    #[getter]
    fn sample(&self) -> u64 {
        self.sample
    }

    /// Seconds since the wait began.
    #[getter]
    fn elapsed(&self) -> f64 {
        self.elapsed
    }

    /// Seconds left before this call is abandoned.
    #[getter]
    fn budget(&self) -> f64 {
        self.budget
    }

    /// Whether the answer is no longer wanted (cancel, deadline).
    #[getter]
    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Sleeps up to ``timeout`` seconds, returning early (``True``) when
    /// the call is cancelled. Releases the GIL while it sleeps.
    fn wait_cancelled(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let timeout = std::time::Duration::try_from_secs_f64(timeout.max(0.0))
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        Ok(py.detach(|| self.cancel.wait_timeout(timeout)))
    }
}

/// A probe's answer as an observation, or a probe error naming what came
/// back instead.
pub fn observation(value: &Bound<'_, PyAny>) -> Result<waitfor::Observation, ProbeError> {
    if let Ok(s) = value.cast::<PyString>() {
        return s
            .to_str()
            .map(waitfor::Observation::text)
            .map_err(|_| ProbeError::new("the probe returned a str that is not valid UTF-8"));
    }
    if let Ok(obs) = value.cast::<PyObservation>() {
        return Ok(obs.get().inner.clone());
    }
    if let Ok(b) = value.cast::<PyBytes>() {
        return std::str::from_utf8(b.as_bytes())
            .map(waitfor::Observation::text)
            .map_err(|e| {
                ProbeError::new(format!("the probe returned bytes that are not UTF-8: {e}"))
            });
    }
    if value.cast::<PyDict>().is_ok() || value.cast::<PyList>().is_ok() {
        return convert::to_json(value)
            .map(waitfor::Observation::json)
            .map_err(|e| ProbeError::new(format!("the probe returned {e}")));
    }
    let kind = value
        .get_type()
        .name()
        .map_or_else(|_| "value".to_string(), |n| n.to_string());
    Err(ProbeError::new(format!(
        "the probe returned a {kind}; return str, bytes, dict, list or waitfor.Observation"
    )))
}
