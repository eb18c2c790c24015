//! What Python probes return, and what they are told.

use crate::{args, convert};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PySlice, PyString};
use std::time::Duration;
use waitfor::{CancelToken, ProbeError};

/// One observation of a probe: ``text``, optional structured ``json``
/// (for ``json`` conditions), the ``exit_code`` of a process it ran (an
/// ``int`` from -2**31 to 2**31 - 1), and ``gone`` when the target can no
/// longer change. A wrong type raises ``TypeError``, an exit code out of
/// range ``ValueError``, each naming the field.
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
    /// The size of its `json` as compact text (0 without).
    json_bytes: usize,
}

#[pymethods]
impl PyObservation {
    #[new]
    #[pyo3(signature = (text = None, *, json = None, exit_code = None, gone = false))]
    fn new(
        py: Python<'_>,
        text: Option<&Bound<'_, PyAny>>,
        json: Option<&Bound<'_, PyAny>>,
        exit_code: Option<&Bound<'_, PyAny>>,
        gone: bool,
    ) -> PyResult<Self> {
        let text = args::text(text)?;
        let exit_code = args::exit_code(exit_code)?;
        let mut inner = match json {
            Some(json) if !json.is_none() => {
                let value = convert::to_json(json)
                    .map_err(|e| crate::errors::not_json(py, &e, "invalid_arguments"))?;
                waitfor::Observation::json(value)
            }
            _ => waitfor::Observation::default(),
        };
        let json_bytes = if inner.json.is_some() {
            inner.text.len()
        } else {
            0
        };
        if let Some(text) = text {
            inner.text = text;
        }
        inner.exit_code = exit_code;
        inner.gone = gone;
        Ok(Self { inner, json_bytes })
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

    /// Sleeps up to ``timeout`` seconds (a number from 0; ``inf``: until
    /// cancelled, which the call's budget bounds), returning early
    /// (``True``) when the call is cancelled. Releases the GIL while it
    /// sleeps. NaN, a negative number or a bool raises ``ValueError`` or
    /// ``TypeError`` naming ``timeout``.
    fn wait_cancelled(&self, py: Python<'_>, timeout: &Bound<'_, PyAny>) -> PyResult<bool> {
        let timeout = args::timeout("timeout", Some(timeout))?.unwrap_or(Duration::MAX);
        Ok(py.detach(|| self.cancel.wait_timeout(timeout)))
    }
}

/// A probe's answer as an observation, or a probe error naming what came
/// back instead.
///
/// An answer larger than `cap` (the wait's output cap) is found out at a
/// cost the cap bounds, not its size: a str longer than `cap` code points,
/// bytes longer than `cap`, a dict or list whose JSON passes `cap` as it
/// is converted. The observation then holds the first `cap + 1` bytes of
/// its text (to the end of their last character; for JSON, `cap + 1`
/// spaces standing for it), and the engine ends the wait over the cap
/// with its usual error, as when a built-in probe stops reading one byte
/// past it.
pub fn observation(
    value: &Bound<'_, PyAny>,
    cap: usize,
) -> Result<waitfor::Observation, ProbeError> {
    if let Ok(s) = value.cast::<PyString>() {
        return text(s, cap).map(waitfor::Observation::text);
    }
    if let Ok(obs) = value.cast::<PyObservation>() {
        let PyObservation { inner, json_bytes } = obs.get();
        // Its text or its json over the cap: not copied whole.
        if inner.text.len() > cap || *json_bytes > cap {
            let text = if inner.text.len() > cap {
                inner.text[..past(&inner.text, cap)].to_owned()
            } else {
                over_cap(cap)
            };
            let mut over = waitfor::Observation::text(text);
            over.exit_code = inner.exit_code;
            over.gone = inner.gone;
            return Ok(over);
        }
        return Ok(inner.clone());
    }
    if let Ok(b) = value.cast::<PyBytes>() {
        return utf8(b.as_bytes(), cap).map(waitfor::Observation::text);
    }
    if value.cast::<PyDict>().is_ok() || value.cast::<PyList>().is_ok() {
        return match convert::output_to_json(value, cap) {
            Ok(json) => Ok(waitfor::Observation::json(json)),
            Err(e) if e.rule == waitfor::Rule::TooLarge => {
                Ok(waitfor::Observation::text(over_cap(cap)))
            }
            Err(e) => Err(ProbeError::new(format!("the probe returned {e}"))),
        };
    }
    let kind = value.get_type().name().map_or_else(
        |_| "value".to_string(),
        |n| text_head(&n, ProbeError::MAX_MESSAGE_BYTES),
    );
    Err(ProbeError::new(format!(
        "the probe returned a {kind}; return str, bytes, dict, list or waitfor.Observation"
    )))
}

/// A str answer as UTF-8. One longer than `cap` code points is over the
/// cap whatever its encoding (each takes at least a byte): only its first
/// `cap + 1` are encoded.
fn text(s: &Bound<'_, PyString>, cap: usize) -> Result<String, ProbeError> {
    let not_utf8 = |_| ProbeError::new("the probe returned a str that is not valid UTF-8");
    let head = head(s, cap).map_err(|e| {
        ProbeError::new(format!("the probe returned a str that cannot be read: {e}"))
    })?;
    let text = head.to_str().map_err(not_utf8)?;
    if head.is(s) {
        // Within `cap` code points: all of it, whatever its UTF-8 size.
        return Ok(text.to_owned());
    }
    Ok(text[..past(text, cap)].to_owned())
}

/// `s` itself when it is at most `max` code points long, else its first
/// `max + 1`: what is read of a str that may be huge, so that reading it
/// costs `max`'s worth, not its size.
///
/// Its length is the string object's own (`PyUnicode_GetLength`), never
/// `len(s)`: a `str` subclass's `__len__` may lie or raise, and a length
/// that cannot be had counts as too long. The head is cut by
/// `str.__getitem__` looked up on `str` itself, which reads the characters
/// (a subclass's `__getitem__` is not called) and gives a plain `str`.
pub fn head<'py>(s: &Bound<'py, PyString>, max: usize) -> PyResult<Bound<'py, PyString>> {
    if s.code_point_len().is_ok_and(|chars| chars <= max) {
        return Ok(s.clone());
    }
    let py = s.py();
    let end = isize::try_from(max.saturating_add(1)).unwrap_or(isize::MAX);
    let cut = PySlice::new(py, 0, end, 1);
    let head = py
        .get_type::<PyString>()
        .call_method1(intern!(py, "__getitem__"), (s, cut))?;
    Ok(head.cast_into::<PyString>()?)
}

/// At most `max + 1` code points of `s` as UTF-8 (a lone surrogate
/// replaced), for messages: an exception's text or its type's name.
pub fn text_head(s: &Bound<'_, PyString>, max: usize) -> String {
    head(s, max).map_or_else(|_| String::new(), |h| h.to_string_lossy().into_owned())
}

/// A bytes answer as UTF-8. One longer than `cap` is over the cap: only
/// its first `cap + 1` bytes (up to the end of the character they end in)
/// are read.
fn utf8(bytes: &[u8], cap: usize) -> Result<String, ProbeError> {
    let not_utf8 = |e| ProbeError::new(format!("the probe returned bytes that are not UTF-8: {e}"));
    if bytes.len() <= cap {
        return std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(not_utf8);
    }
    // A character takes at most 4 bytes.
    let head = &bytes[..bytes.len().min(cap.saturating_add(4))];
    match std::str::from_utf8(head) {
        Ok(head) => Ok(head[..past(head, cap)].to_owned()),
        // Past the cap before the first bad byte (or a character the
        // window cut): over the cap, whatever follows.
        Err(e) if e.valid_up_to() > cap => {
            let head = std::str::from_utf8(&head[..e.valid_up_to()]).map_err(not_utf8)?;
            Ok(head[..past(head, cap)].to_owned())
        }
        Err(e) => Err(not_utf8(e)),
    }
}

/// A text just over the cap, standing for JSON found to be larger (the
/// engine reads no more than its size before it ends the wait).
fn over_cap(cap: usize) -> String {
    " ".repeat(cap.saturating_add(1))
}

/// Where `text` is cut to be just over `cap` bytes: the end of the
/// character its byte `cap + 1` is in (all of it, if shorter).
fn past(text: &str, cap: usize) -> usize {
    let mut end = cap.saturating_add(1).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    end
}
