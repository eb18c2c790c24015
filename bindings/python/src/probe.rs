//! Python callables as the engine's probes and as a profile's tools.

use crate::invoke::{attached, SharedCalls};
use crate::observe::{observation, PyProbeContext};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use waitfor::profiles::ToolCaller;
use waitfor::{Observation, Probe, ProbeContext, ProbeError, ProbeMode};

fn shutting_down() -> ProbeError {
    ProbeError::new("the Python interpreter is shutting down")
}

/// A Python callable (plain or `async def`) as a probe.
pub struct PyProbe {
    pub func: Py<PyAny>,
    /// Whether it takes a `ProbeContext` argument.
    pub takes_ctx: bool,
    /// Whether each call returns only new text.
    pub stream: bool,
    pub calls: SharedCalls,
}

impl Probe for PyProbe {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        attached(|py| {
            let args = if self.takes_ctx {
                let ctx = Bound::new(py, PyProbeContext::new(ctx))
                    .map_err(|e| self.calls.failed(py, e))?;
                PyTuple::new(py, [ctx]).map_err(|e| self.calls.failed(py, e))?
            } else {
                PyTuple::empty(py)
            };
            let value = self.calls.call(py, self.func.bind(py), args, &ctx.cancel)?;
            observation(&value)
        })
        .unwrap_or_else(|| Err(shutting_down()))
    }

    fn mode(&self) -> ProbeMode {
        if self.stream {
            ProbeMode::Stream
        } else {
            ProbeMode::Snapshot
        }
    }

    fn name(&self) -> &str {
        "python"
    }
}

/// A Python callable `tools(name, arguments)` (plain or `async def`) as
/// the tools a `wait_for` profile's probe calls; its answer is read like a
/// probe's (str, bytes, dict, list, Observation) and its text is used.
pub struct PyTools {
    pub func: Py<PyAny>,
    pub calls: SharedCalls,
}

impl ToolCaller for PyTools {
    fn call_tool(
        &self,
        name: &str,
        args: &serde_json::Value,
        ctx: &ProbeContext,
    ) -> Result<String, ProbeError> {
        attached(|py| {
            let args = crate::convert::to_py(py, args)
                .and_then(|args| PyTuple::new(py, [name.into_pyobject(py)?.into_any(), args]))
                .map_err(|e| self.calls.failed(py, e))?;
            let value = self.calls.call(py, self.func.bind(py), args, &ctx.cancel)?;
            observation(&value).map(|o| o.text)
        })
        .unwrap_or_else(|| Err(shutting_down()))
    }
}
