//! A running wait as Python sees it: cancel, wake, and its result
//! delivered to a blocked thread or to an asyncio loop.

use crate::args;
use crate::convert;
use crate::errors;
use crate::invoke::{attached, prepend, SharedCalls};
use crate::ready::{Ready, WAKES_ON_SIGNAL};
use crate::sync::Mutex;
use pyo3::exceptions::{PyRuntimeError, PyTimeoutError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use waitfor::profiles::{Notice, Render, Report, ToolProgress};
use waitfor::{Progress, WaitControl, WaitOptions, WaitResult};

/// How often a blocked `result()` looks for Ctrl-C. Where a signal ends
/// its sleep, the look only catches one handled on another thread (or
/// `_thread.interrupt_main()`), so it is rare: a blocked caller costs
/// almost no CPU.
const SIGNAL_CHECK: Duration = if WAKES_ON_SIGNAL {
    Duration::from_millis(200)
} else {
    Duration::from_millis(20)
};

/// A tool call's notices at its end, handed to its callbacks by the thread
/// that takes the result.
type EndNotices = Box<dyn for<'py> FnOnce(Python<'py>) + Send>;

/// Where the engine leaves the result for Python.
#[derive(Default)]
struct Delivery {
    result: Mutex<Option<WaitResult>>,
    ready: Ready,
    /// Left by a call without an event loop: its callbacks run on the
    /// thread that takes the result (the caller's, blocked until then),
    /// not on the engine thread that ends this and other waits.
    end_notices: Mutex<Option<EndNotices>>,
}

impl Delivery {
    fn fill(&self, result: &WaitResult) {
        *self.result.lock() = Some(result.clone());
        self.ready.set();
    }

    /// Waits at most `timeout`, less when a signal arrives; whether the
    /// result is there.
    fn wait(&self, timeout: Duration) -> bool {
        self.ready.wait(timeout)
    }
}

/// Progress of a running wait, reported (throttled by the spec's
/// ``progress_every_ms``) after samples that decided nothing.
#[pyclass(frozen, module = "waitfor", name = "Progress")]
pub struct PyProgress {
    inner: Progress,
}

#[pymethods]
impl PyProgress {
    /// Samples taken so far.
    #[getter]
    fn samples(&self) -> u64 {
        self.inner.samples
    }

    /// Milliseconds since the wait began.
    #[getter]
    fn elapsed_ms(&self) -> u64 {
        self.inner.elapsed_ms
    }

    /// The last non-empty line of the last observation.
    #[getter]
    fn last_line(&self) -> Option<&str> {
        self.inner.last_line.as_deref()
    }

    /// ``{"samples", "elapsed_ms", "last_line"}``.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &serde_json::json!(self.inner))
    }

    fn __repr__(&self) -> String {
        format!(
            "Progress(samples={}, elapsed_ms={}, last_line={:?})",
            self.inner.samples, self.inner.elapsed_ms, self.inner.last_line
        )
    }
}

/// A tool call's progress, as its profile reports it (MCP's `progress`,
/// `total` and `message`).
#[pyclass(frozen, module = "waitfor", name = "ToolProgress")]
pub struct PyToolProgress {
    inner: ToolProgress,
}

#[pymethods]
impl PyToolProgress {
    /// How far the call is: seconds elapsed.
    #[getter]
    fn progress(&self) -> f64 {
        self.inner.progress
    }

    /// What ``progress`` runs to (the time limit in seconds), if known.
    #[getter]
    fn total(&self) -> Option<f64> {
        self.inner.total
    }

    /// A line for a human watching, if the profile sends one.
    #[getter]
    fn message(&self) -> Option<&str> {
        self.inner.message.as_deref()
    }

    /// ``{"progress", "total", "message"}``.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &serde_json::json!(self.inner))
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolProgress(progress={}, total={:?}, message={:?})",
            self.inner.progress, self.inner.total, self.inner.message
        )
    }
}

/// Python callbacks of one wait.
pub struct Callbacks {
    pub on_progress: Option<Py<PyAny>>,
    pub on_done: Option<Py<PyAny>>,
    /// A tool call's notices: `on_progress` then hears its progress
    /// notices and `on_log(level, message)` its log notices.
    pub notices: Option<Notices>,
}

/// How a tool call reports, and who hears its log notices.
pub struct Notices {
    pub report: Report,
    pub on_log: Option<Py<PyAny>>,
}

impl Notices {
    /// Hands `notices` to `on_progress` and `on_log`, in order.
    pub fn deliver(
        py: Python<'_>,
        notices: Vec<Notice>,
        on_progress: Option<&Py<PyAny>>,
        on_log: Option<&Py<PyAny>>,
        calls: &SharedCalls,
    ) {
        for notice in notices {
            let (callback, args) = match notice {
                Notice::Progress(inner) => {
                    (on_progress, (PyToolProgress { inner },).into_pyobject(py))
                }
                Notice::Log(log) => (on_log, (log.level.as_str(), log.message).into_pyobject(py)),
            };
            if let Some(callback) = callback {
                report_to(py, calls, callback.bind(py), args);
            }
        }
    }
}

/// Calls `callback(*args)` in the caller's context: on its event loop
/// when there is one, else here; an exception is unraisable.
fn report_to<'py>(
    py: Python<'py>,
    calls: &SharedCalls,
    callback: &Bound<'py, PyAny>,
    args: PyResult<Bound<'py, PyTuple>>,
) {
    let called = args.and_then(|args| match &calls.event_loop {
        Some(l) => soon(py, l, calls, callback, args),
        None => calls.context.run(py, callback, args).map(drop),
    });
    if let Err(err) = called {
        err.write_unraisable(py, Some(callback));
    }
}

impl Callbacks {
    /// Engine options that call these callbacks in the caller's context
    /// (`calls.context`): on the caller's event loop (through
    /// `call_soon_threadsafe`) when there is one, else on the engine's
    /// worker thread.
    fn options(
        self,
        base: WaitOptions,
        delivery: Arc<Delivery>,
        calls: SharedCalls,
    ) -> WaitOptions {
        let Callbacks {
            on_progress,
            on_done,
            notices,
        } = self;
        let notices = notices.map(Arc::new);
        let on_progress = on_progress.map(Arc::new);
        let mut options = base;
        // On an event loop, a wait's reports go through one newest report.
        let newest = (calls.event_loop.is_some() && notices.is_none() && on_progress.is_some())
            .then(|| Arc::new(Newest::default()));
        let ended = newest.clone();
        if let Some(report) = on_progress.clone() {
            let (calls, notices) = (calls.clone(), notices.clone());
            options = options.on_progress(move |progress| {
                attached(|py| match &notices {
                    Some(n) => {
                        let sent = n.report.progress(progress);
                        Notices::deliver(py, sent, Some(&report), n.on_log.as_ref(), &calls);
                    }
                    None => match &newest {
                        Some(newest) => newest.send(py, progress, &report, &calls),
                        None => {
                            let progress = PyProgress {
                                inner: progress.clone(),
                            };
                            report_to(py, &calls, report.bind(py), (progress,).into_pyobject(py));
                        }
                    },
                });
            });
        } else if let Some(n) = notices.clone().filter(|n| n.on_log.is_some()) {
            // Log notices may come with progress reports.
            let calls = calls.clone();
            options = options.on_progress(move |progress| {
                let sent = n.report.progress(progress);
                attached(|py| Notices::deliver(py, sent, None, n.on_log.as_ref(), &calls));
            });
        }
        options.on_done(move |result| {
            if let Some(newest) = &ended {
                newest.end();
            }
            if let Some(n) = &notices {
                let sent = n.report.end(result);
                if !sent.is_empty() {
                    let on_loop = calls.event_loop.is_some();
                    let (n, calls) = (n.clone(), calls.clone());
                    let on_progress = on_progress.clone();
                    let deliver = move |py: Python<'_>| {
                        let on_progress = on_progress.as_deref();
                        Notices::deliver(py, sent, on_progress, n.on_log.as_ref(), &calls)
                    };
                    if on_loop {
                        // Only scheduled on the loop: quick.
                        attached(deliver);
                    } else {
                        *delivery.end_notices.lock() = Some(Box::new(deliver));
                    }
                }
            }
            delivery.fill(result);
            if let (Some(done), Some(l)) = (on_done, &calls.event_loop) {
                attached(|py| {
                    // A closed loop has no one left to tell.
                    let _ = soon(py, l, &calls, done.bind(py), PyTuple::empty(py));
                });
            }
        })
    }
}

/// A wait's newest progress report not yet handed to its event loop. One
/// call per wait is scheduled on the loop at a time and reads the newest
/// report when the loop runs it: while the loop is busy, reports replace
/// each other instead of piling up in its queue (50 waits reporting every
/// 10 ms queued 9,000 calls on a loop busy for 3 s). As the engine drops a
/// report not begun when its wait ends, one still here then is dropped.
#[derive(Default)]
struct Newest {
    report: Mutex<Option<Progress>>,
    ended: AtomicBool,
}

impl Newest {
    /// Keeps `progress` as the newest report, scheduling a call of
    /// `callback` with it on the caller's loop unless one is scheduled.
    fn send(
        self: &Arc<Self>,
        py: Python<'_>,
        progress: &Progress,
        callback: &Arc<Py<PyAny>>,
        calls: &SharedCalls,
    ) {
        if self.ended.load(Ordering::Acquire)
            || self.report.lock().replace(progress.clone()).is_some()
        {
            return;
        }
        let call = ReportNewest {
            newest: self.clone(),
            callback: callback.clone(),
        };
        let args = Bound::new(py, call).map(|call| (call.into_any(), PyTuple::empty(py)));
        let scheduled = args.and_then(|(call, args)| match &calls.event_loop {
            Some(l) => soon(py, l, calls, &call, args),
            None => Ok(()),
        });
        if let Err(err) = scheduled {
            self.report.lock().take();
            err.write_unraisable(py, Some(callback.bind(py)));
        }
    }

    /// The wait ended: no report is handed over any more.
    fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.report.lock().take();
    }
}

/// Hands the newest report of a wait to its callback (run on the loop).
#[pyclass(frozen, module = "waitfor._native")]
struct ReportNewest {
    newest: Arc<Newest>,
    callback: Arc<Py<PyAny>>,
}

#[pymethods]
impl ReportNewest {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.newest.report.lock().take();
        match taken {
            Some(inner) if !self.newest.ended.load(Ordering::Acquire) => self
                .callback
                .bind(py)
                .call1((PyProgress { inner },))
                .map(drop),
            _ => Ok(()),
        }
    }
}

/// Schedules `callback(*args)` on `event_loop`, in the caller's context.
fn soon<'py>(
    py: Python<'py>,
    event_loop: &Py<PyAny>,
    calls: &SharedCalls,
    callback: &Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
) -> PyResult<()> {
    let context = PyDict::new(py);
    context.set_item(intern!(py, "context"), calls.context.fresh(py)?)?;
    event_loop
        .bind(py)
        .call_method(
            intern!(py, "call_soon_threadsafe"),
            prepend(callback, args)?,
            Some(&context),
        )
        .map(drop)
}

/// A running wait (internal: ``waitfor.WaitHandle`` wraps it).
#[pyclass(frozen, module = "waitfor._native")]
pub struct NativeHandle {
    control: WaitControl,
    delivery: Arc<Delivery>,
    /// The process whose engine runs the wait: a forked child has a copy
    /// of the handle, but no thread there will ever end the wait.
    owner: u32,
    calls: SharedCalls,
    render: Option<Arc<Render>>,
}

/// How a wait's probe is called.
pub enum HostProbe {
    /// On the engine's workers; `None` for the spec's built-in probe.
    Blocking(Option<Box<dyn waitfor::Probe>>),
    /// On the caller's event loop.
    OnLoop(crate::aio::LoopProbe),
}

/// Starts a wait on this process's engine with `options` (its policy and
/// what it holds) and `callbacks`; `render` makes it a profile call whose
/// result is the tool's output.
pub fn start(
    py: Python<'_>,
    spec: waitfor::Spec,
    probe: HostProbe,
    options: WaitOptions,
    callbacks: Callbacks,
    calls: SharedCalls,
    render: Option<Render>,
) -> PyResult<NativeHandle> {
    let delivery = Arc::new(Delivery::default());
    let options = callbacks.options(options, delivery.clone(), calls.clone());
    let code = if render.is_some() {
        "invalid_arguments"
    } else {
        "invalid_spec"
    };
    // A start never waits for the engine, and letting go of the
    // interpreter lock here handed it to the worker making an earlier
    // wait's first call, then waited to get it back (a loop of starts
    // spent half its time in that ping-pong): so it keeps the lock, unless
    // its regexes are long enough that checking their syntax takes a
    // while (compiling them is the wait's own work, off this thread).
    let engine = waitfor::Engine::global();
    let long = regex_bytes(&spec) > LONG_REGEXES;
    let launch = move || match probe {
        HostProbe::Blocking(probe) => engine.start_with(spec, probe, options),
        HostProbe::OnLoop(probe) => engine.start_async(spec, probe, options),
    };
    let started = if long { py.detach(launch) } else { launch() };
    let handle = started.map_err(|e| errors::spec_error(py, &e, code))?;
    Ok(NativeHandle {
        control: handle.control(),
        delivery,
        owner: std::process::id(),
        calls,
        render: render.map(Arc::new),
    })
}

/// Regex text past which a start lets go of the interpreter lock.
const LONG_REGEXES: usize = 4 * 1024;

/// The length of every regex in `spec`'s conditions.
fn regex_bytes(spec: &waitfor::Spec) -> usize {
    fn regex_len(pattern: &waitfor::Pattern) -> usize {
        if pattern.regex {
            pattern.text.len()
        } else {
            0
        }
    }
    fn in_condition(condition: &waitfor::Condition) -> usize {
        use waitfor::Condition::*;
        match condition {
            Matches(p) | NotMatches(p) => regex_len(p),
            Patterns(list) => list.iter().map(regex_len).sum(),
            Any(children) | All(children) => children.iter().map(in_condition).sum(),
            QuietFor(_) | AnyOutput | Json { .. } | ExitCode(_) => 0,
        }
    }
    in_condition(&spec.until) + spec.stop.iter().map(regex_len).sum::<usize>()
}

#[pymethods]
impl NativeHandle {
    /// Ends the wait with outcome ``cancelled``.
    fn cancel(&self) {
        self.control.cancel();
    }

    /// Takes a sample now.
    fn wake(&self) {
        self.control.wake();
    }

    /// Whether the wait has ended.
    fn done(&self) -> bool {
        self.delivery.result.lock().is_some()
    }

    /// Blocks (GIL released, Ctrl-C honoured) until the wait ends or
    /// `timeout` seconds pass (`TimeoutError`; infinity, or more than a
    /// clock holds, is no deadline). A wait gives
    /// `(result_dict, last_observation, probe_exception)`; a profile call
    /// gives its output dict or raises. On a thread the engine needs to end
    /// waits (`Engine::needs_this_thread`), a timeout other than 0 raises
    /// `RuntimeError` at once: the result could need that very thread.
    #[pyo3(signature = (timeout = None))]
    fn result<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let timeout = args::timeout("timeout", timeout)?;
        if !self.done()
            && timeout != Some(Duration::ZERO)
            && waitfor::Engine::global().needs_this_thread()
        {
            return Err(PyRuntimeError::new_err(
                "a wait's result was waited for on a thread of the engine that ends waits (a \
                 delivery thread, where Python code runs only as objects it drops are freed): \
                 the result could need that very thread, so it cannot be waited for there; \
                 wait from another thread",
            ));
        }
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        if !self.done() && self.owner != std::process::id() {
            return Err(PyRuntimeError::new_err(format!(
                "this wait runs in process {}, which started it: a forked child cannot wait \
                 for it (start the wait again in the child)",
                self.owner
            )));
        }
        loop {
            let slice = deadline.map_or(SIGNAL_CHECK, |d| {
                d.saturating_duration_since(Instant::now())
                    .min(SIGNAL_CHECK)
            });
            if py.detach(|| self.delivery.wait(slice)) {
                break;
            }
            py.check_signals()?;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(PyTimeoutError::new_err("the wait is still running"));
            }
        }
        // The first to take the result hands the call's end notices on,
        // before its answer.
        let end_notices = self.delivery.end_notices.lock().take();
        if let Some(deliver) = end_notices {
            deliver(py);
        }
        let result = self.delivery.result.lock().clone();
        let result =
            result.ok_or_else(|| errors::internal(py, "a delivered result went missing"))?;
        self.convert(py, &result)
    }
}

impl NativeHandle {
    fn convert<'py>(&self, py: Python<'py>, result: &WaitResult) -> PyResult<Bound<'py, PyAny>> {
        let cause = self.calls.last_exception(py);
        match &self.render {
            Some(render) => match render(result) {
                Ok(output) => convert::to_py(py, &output),
                Err(err) => Err(errors::tool_error(py, &err, cause.as_ref())),
            },
            None => {
                let dict = convert::to_py(py, &result.to_json())?;
                let cause = match cause {
                    Some(c) => c.into_bound(py),
                    None => py.None().into_bound(py),
                };
                Ok((dict, result.last_observation.as_str(), cause)
                    .into_pyobject(py)?
                    .into_any())
            }
        }
    }
}
