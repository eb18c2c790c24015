//! Python callables as the engine's probes and as a profile's tools.

use crate::invoke::{attached, SharedCalls};
use crate::observe::{observation, PyProbeContext};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::{Arc, LazyLock};
use waitfor::profiles::ToolCaller;
use waitfor::{HostLock, Observation, Probe, ProbeContext, ProbeError, ProbeMode};

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

impl PyProbe {
    /// The arguments of a call: `(ProbeContext,)` or `()`.
    pub fn args<'py>(
        &self,
        py: Python<'py>,
        ctx: &ProbeContext,
    ) -> Result<Bound<'py, PyTuple>, ProbeError> {
        if !self.takes_ctx {
            return Ok(PyTuple::empty(py));
        }
        Bound::new(py, PyProbeContext::new(ctx))
            .and_then(|ctx| PyTuple::new(py, [ctx]))
            .map_err(|e| self.calls.failed(py, e))
    }

    pub fn probe_mode(&self) -> ProbeMode {
        if self.stream {
            ProbeMode::Stream
        } else {
            ProbeMode::Snapshot
        }
    }
}

impl Probe for PyProbe {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        attached(|py| {
            let args = self.args(py, ctx)?;
            let value = self.calls.call(py, self.func.bind(py), args, &ctx.cancel)?;
            observation(&value, ctx.output_cap)
        })
        .unwrap_or_else(|| Err(shutting_down()))
    }

    fn mode(&self) -> ProbeMode {
        self.probe_mode()
    }

    fn name(&self) -> &str {
        "python"
    }

    /// The interpreter lock, for a blocking wait's probe. A coroutine
    /// probe (an asyncio wait's) waits for its loop, not the lock: calls
    /// queued behind it would wait too.
    fn host_lock(&self) -> Option<Arc<dyn HostLock>> {
        static INTERPRETER: LazyLock<Arc<dyn HostLock>> = LazyLock::new(|| Arc::new(Interpreter));
        self.calls.event_loop.is_none().then(|| INTERPRETER.clone())
    }
}

/// Python's interpreter lock as the engine's [`HostLock`]: a worker that
/// took it makes the queued probe calls in a row, instead of each call
/// waiting its turn for the lock (milliseconds while the host's own
/// threads run Python code) on a thread of its own.
struct Interpreter;

impl HostLock for Interpreter {
    fn hold(&self, calls: &mut dyn FnMut()) {
        crate::handoff::waiting();
        let held = attached(|_| {
            crate::handoff::done_waiting(true);
            calls();
        });
        // Exiting: the calls run without it, and each says so.
        if held.is_none() {
            crate::handoff::done_waiting(false);
            calls();
        }
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
            observation(&value, ctx.output_cap).map(|o| o.text)
        })
        .unwrap_or_else(|| Err(shutting_down()))
    }
}
