//! Calling Python from the engine's worker threads: attach to the interpreter only for the call,
//! run it in the caller's `contextvars` context, run a coroutine on the
//! caller's event loop, remember the exception a call raised.

use crate::observe::text_head;
use crate::sync::{Mutex, MutexGuard};
use crossbeam_channel::{Receiver, Sender};
use pyo3::exceptions::PySystemExit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use std::cell::{Cell, OnceCell};
use std::os::raw::c_long;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use waitfor::{CancelToken, ProbeError};

/// Set at interpreter exit: from then on no engine thread attaches.
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

/// Every engine thread that ever attached, until it ends: whether it runs
/// Python for the engine now, so that interpreter exit can stop it.
static ENGINE_THREADS: Mutex<Vec<Arc<InPython>>> = Mutex::new(Vec::new());

/// How often a thread waiting for a coroutine checks its cancel token.
const CANCEL_CHECK: Duration = Duration::from_millis(5);

/// How long interpreter exit waits for probes to leave Python.
const EXIT_GRACE: Duration = Duration::from_millis(250);

/// Called at interpreter exit (`atexit`): no engine thread attaches from
/// now on, and probes running Python code are asked to stop (a
/// `SystemExit` raised in their thread) and given a short grace to leave.
///
/// A thread still in Python when the interpreter finalizes would be ended
/// by CPython (up to 3.13) with a forced unwind through Rust frames, which
/// aborts the process; a probe blocked outside Python (a sleep, a read)
/// holds no one up: it is simply gone with the process.
#[pyfunction]
pub fn _shutdown(py: Python<'_>) {
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    let exit = py.get_type::<PySystemExit>();
    for thread in ENGINE_THREADS.lock().iter().filter(|t| t.now()) {
        // pyo3 has no safe form of this call.
        // SAFETY: called attached; `exit` is an exception type, alive while
        // `py` is; an id that matches no thread state changes nothing.
        unsafe { pyo3::ffi::PyThreadState_SetAsyncExc(thread.id(), exit.as_ptr()) };
    }
    let deadline = Instant::now() + EXIT_GRACE;
    py.detach(|| {
        while ENGINE_THREADS.lock().iter().any(|t| t.now()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Keeps [`ENGINE_THREADS`] usable across `os.fork()` (and the forks of
/// `multiprocessing` and of `subprocess` with a `preexec_fn`, which run
/// the same hooks): the forking thread takes its lock around the fork, so
/// no other thread holds it when the child is made, and the child, whose
/// only thread is the one that forked, starts with none of the parent's
/// engine threads.
///
/// A fork that skips Python's hooks (a C library's own `fork()`) leaves a
/// child that runs no Python, so none of this matters there; the engine's
/// own forks run only `exec` in the child.
pub fn survive_fork(py: Python<'_>) -> PyResult<()> {
    let os = py.import("os")?;
    // Not every platform forks.
    if !os.hasattr("register_at_fork")? {
        return Ok(());
    }
    let hooks = PyDict::new(py);
    hooks.set_item("before", wrap_pyfunction!(before_fork, py)?)?;
    hooks.set_item(
        "after_in_parent",
        wrap_pyfunction!(after_fork_in_parent, py)?,
    )?;
    hooks.set_item("after_in_child", wrap_pyfunction!(after_fork_in_child, py)?)?;
    os.call_method("register_at_fork", (), Some(&hooks))?;
    Ok(())
}

thread_local! {
    /// The lock, held by the forking thread from `before_fork` to
    /// `after_fork_in_parent` or `after_fork_in_child` (the three run on
    /// that thread, or its copy).
    static HELD: std::cell::RefCell<Option<MutexGuard<'static, Vec<Arc<InPython>>>>> =
        const { std::cell::RefCell::new(None) };
}

#[pyfunction]
fn before_fork() {
    HELD.with(|held| *held.borrow_mut() = Some(ENGINE_THREADS.lock()));
}

#[pyfunction]
fn after_fork_in_parent() {
    HELD.with(|held| drop(held.borrow_mut().take()));
}

#[pyfunction]
fn after_fork_in_child() {
    crate::handoff::forget();
    HELD.with(|held| {
        if let Some(mut threads) = held.borrow_mut().take() {
            threads.clear();
        }
    });
}

/// Whether the interpreter is exiting (no engine thread attaches).
pub fn shutting_down() -> bool {
    SHUTTING_DOWN.load(Ordering::SeqCst)
}

/// Runs `f` attached to the interpreter, unless it is going away.
///
/// A thread marks itself in Python before it looks at [`SHUTTING_DOWN`],
/// and [`_shutdown`] sets that before it looks at the marks (all
/// sequentially consistent): so either this thread sees the interpreter
/// exiting, or `_shutdown` sees this thread and waits for it. And it looks
/// again once attached: `_shutdown` sets the flag holding the interpreter
/// lock, so a thread that waited for the lock meanwhile (on its first
/// attach too, when `_shutdown` knows no id of it to raise `SystemExit`
/// in) runs no Python code and leaves before the interpreter finalizes.
pub fn attached<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    ENGINE_THREAD.with(|thread| {
        let _inside = thread.enter();
        if shutting_down() {
            return None;
        }
        Python::try_attach(|py| {
            if shutting_down() {
                return None;
            }
            thread.keep(py);
            Some(f(py))
        })
        .flatten()
    })
}

/// An engine thread as interpreter exit sees it.
struct InPython {
    /// Python's id of the thread (`threading.get_ident()`), 0 until its
    /// first attach.
    id: AtomicU64,
    /// Attaches in progress on the thread (nested ones count each).
    depth: AtomicUsize,
}

impl InPython {
    fn now(&self) -> bool {
        self.depth.load(Ordering::SeqCst) > 0
    }

    /// The id `PyThreadState_SetAsyncExc` takes (a C `unsigned long`, which
    /// pyo3 declares signed: the same bits).
    fn id(&self) -> c_long {
        self.id.load(Ordering::Acquire) as c_long
    }
}

/// One attach in progress; it ends when this drops (a panic included).
struct Inside<'a>(&'a InPython);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.depth.fetch_sub(1, Ordering::Release);
    }
}

thread_local! {
    static ENGINE_THREAD: EngineThread = const {
        EngineThread { kept: Cell::new(false), in_python: OnceCell::new() }
    };
}

/// What an engine thread keeps between its calls into Python.
///
/// Its Python thread state: attaching a thread that has none creates a
/// thread state and detaching deletes it again, a few microseconds a probe
/// call. An engine thread instead holds one extra `PyGILState_Ensure` for
/// its lifetime (with the GIL released), so each attach only takes the
/// GIL; the thread state is deleted when the thread ends. pyo3 keeps a
/// thread state only for as long as a closure given to `Python::attach`
/// runs, and the engine's threads are not this package's to wrap: so the
/// extra count is two raw calls, each made while pyo3 holds the thread
/// attached.
///
/// And its entry in [`ENGINE_THREADS`], so a call marks itself in Python
/// with an atomic of this thread's own instead of a shared lock.
struct EngineThread {
    kept: Cell<bool>,
    in_python: OnceCell<Arc<InPython>>,
}

impl EngineThread {
    /// Marks this thread in Python.
    fn enter(&self) -> Inside<'_> {
        let inside = self.in_python.get_or_init(|| {
            let inside = Arc::new(InPython {
                id: AtomicU64::new(0),
                depth: AtomicUsize::new(0),
            });
            ENGINE_THREADS.lock().push(inside.clone());
            inside
        });
        inside.depth.fetch_add(1, Ordering::SeqCst);
        Inside(inside)
    }

    /// On this thread's first attach: keeps its thread state, and notes
    /// its id.
    ///
    /// Holding the interpreter lock throughout: [`attached`] looked for
    /// exit just before, so `_shutdown` either saw the flag set too late
    /// for this call, or finds this id to raise `SystemExit` in. (Taking
    /// the id from Python, through a lazily initialised `PyOnceLock`,
    /// would let go of the lock the first time.)
    fn keep(&self, _py: Python<'_>) {
        if self.kept.replace(true) {
            return;
        }
        // SAFETY: this thread is attached (`_py`), so Ensure only adds one
        // to its thread state's count and attaches nothing; pyo3's own
        // release then leaves the count at one, which keeps the thread
        // state while pyo3 detaches it. `Drop` takes the one back.
        unsafe { pyo3::ffi::PyGILState_Ensure() };
        if let Some(inside) = self.in_python.get() {
            // SAFETY: a plain C call, made attached; it is what
            // `threading.get_ident()` returns.
            let id = unsafe { pyo3::ffi::PyThread_get_thread_ident() };
            inside.id.store(id as u64, Ordering::Release);
        }
    }
}

impl Drop for EngineThread {
    fn drop(&mut self) {
        if self.kept.get() {
            // As in `attached`: marked first, and at interpreter exit the
            // thread state goes with the interpreter.
            let _inside = self.enter();
            if !shutting_down() {
                Python::try_attach(|_py| {
                    if shutting_down() {
                        return;
                    }
                    // SAFETY: attached (`_py`), with the count `keep` added
                    // and pyo3's own: this release takes `keep`'s back (it
                    // was made attached: LOCKED), and pyo3's, the last,
                    // deletes the thread state as it detaches.
                    unsafe {
                        pyo3::ffi::PyGILState_Release(
                            pyo3::ffi::PyGILState_STATE::PyGILState_LOCKED,
                        )
                    };
                });
            }
        }
        if let Some(inside) = self.in_python.get() {
            ENGINE_THREADS.lock().retain(|t| !Arc::ptr_eq(t, inside));
        }
    }
}

/// The `contextvars` context of the call that started a wait, copied
/// then. Every Python call made for the wait (probe, host tool, progress
/// and completion callback) runs in a fresh copy of it: it sees what the
/// caller had set (a framework's request, a tracing span), and what it
/// sets stays its own. Fresh, because a context runs on one thread at a
/// time and an abandoned probe call may still run when the next begins.
pub struct CallerContext(Py<PyAny>);

impl CallerContext {
    /// `contextvars.copy_context()`, taken on the caller's thread.
    pub fn capture(py: Python<'_>) -> PyResult<Self> {
        static COPY_CONTEXT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let copy_context = COPY_CONTEXT.get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("contextvars")?.getattr("copy_context")?.unbind())
        })?;
        Ok(Self(copy_context.bind(py).call0()?.unbind()))
    }

    /// A copy for one call.
    pub fn fresh<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.0.bind(py).call_method0(intern!(py, "copy"))
    }

    /// Calls `f(*args)` in a fresh copy.
    pub fn run<'py>(
        &self,
        py: Python<'py>,
        f: &Bound<'py, PyAny>,
        args: Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        run_in(&self.fresh(py)?, f, args)
    }
}

/// `context.run(f, *args)`.
fn run_in<'py>(
    context: &Bound<'py, PyAny>,
    f: &Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    context.call_method1(intern!(context.py(), "run"), prepend(f, args)?)
}

/// `(first, *rest)`.
pub fn prepend<'py>(
    first: &Bound<'py, PyAny>,
    rest: Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut items = Vec::with_capacity(rest.len() + 1);
    items.push(first.clone());
    items.extend(rest);
    PyTuple::new(first.py(), items)
}

/// Where a wait's Python calls run: the caller's context, its event loop
/// (for coroutine probes and callbacks), and the last exception a call
/// raised.
pub struct Calls {
    pub context: CallerContext,
    /// The caller's asyncio loop; `None` for blocking waits.
    pub event_loop: Option<Py<PyAny>>,
    /// The last exception a probe or tool call raised, for `__cause__`.
    pub last_exception: Mutex<Option<Py<PyAny>>>,
}

impl Calls {
    /// The calls of a wait started now, on this thread, by a caller on
    /// `event_loop` (`None`: a blocking caller).
    pub fn of_caller(py: Python<'_>, event_loop: Option<Py<PyAny>>) -> PyResult<Self> {
        Ok(Self {
            context: CallerContext::capture(py)?,
            event_loop,
            last_exception: Mutex::new(None),
        })
    }

    /// Calls `f(*args)` in the caller's context; a returned awaitable runs
    /// to its end on the event loop, in that context too, while this
    /// thread waits detached, and is cancelled if `cancel` fires first.
    /// An exception becomes a probe error and is kept.
    pub fn call<'py>(
        &self,
        py: Python<'py>,
        f: &Bound<'py, PyAny>,
        args: Bound<'py, PyTuple>,
        cancel: &CancelToken,
    ) -> Result<Bound<'py, PyAny>, ProbeError> {
        let (value, context) = match self.invoke(py, f, args)? {
            Called::Value(value) => return Ok(value),
            Called::Awaitable(value, context) => (value, context),
        };
        let Some(event_loop) = &self.event_loop else {
            let _ = value.call_method0("close");
            return Err(ProbeError::new(
                "the probe returned an awaitable; async probes need wait_async or call_tool_async",
            ));
        };
        self.await_on(py, event_loop.bind(py), &context, value, cancel)
    }

    /// Calls `f(*args)` in a fresh copy of the caller's context. An
    /// exception becomes a probe error and is kept.
    pub fn invoke<'py>(
        &self,
        py: Python<'py>,
        f: &Bound<'py, PyAny>,
        args: Bound<'py, PyTuple>,
    ) -> Result<Called<'py>, ProbeError> {
        let context = self.context.fresh(py).map_err(|e| self.failed(py, e))?;
        let value = run_in(&context, f, args).map_err(|e| self.failed(py, e))?;
        if is_plain(&value) || !value.hasattr("__await__").unwrap_or(false) {
            return Ok(Called::Value(value));
        }
        Ok(Called::Awaitable(value, context))
    }

    /// Runs `awaitable` on `event_loop` as a task of `context` (the task
    /// is made by a callback scheduled from within it, and a task copies
    /// the context it is made in: so on every Python version).
    fn await_on<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        context: &Bound<'py, PyAny>,
        awaitable: Bound<'py, PyAny>,
        cancel: &CancelToken,
    ) -> Result<Bound<'py, PyAny>, ProbeError> {
        let future = submit(py)
            .and_then(|submit| run_in(context, submit, (awaitable, event_loop).into_pyobject(py)?))
            .map_err(|e| self.failed(py, e))?;
        let (tx, rx) = crossbeam_channel::bounded(1);
        future
            .call_method1("add_done_callback", (Notify { tx },))
            .map_err(|e| self.failed(py, e))?;
        if !py.detach(|| done_or_cancelled(&rx, cancel)) {
            let _ = future.call_method0("cancel");
            return Err(ProbeError::new("the probe call was abandoned"));
        }
        future
            .call_method0("result")
            .map_err(|e| self.failed(py, e))
    }

    /// Keeps `err` as the last exception and describes it.
    pub fn failed(&self, py: Python<'_>, err: PyErr) -> ProbeError {
        let message = describe(py, &err);
        *self.last_exception.lock() = Some(err.into_value(py).into_any());
        ProbeError::new(message)
    }

    /// The last exception a call raised.
    pub fn last_exception(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.last_exception.lock().as_ref().map(|e| e.clone_ref(py))
    }
}

fn is_plain(value: &Bound<'_, PyAny>) -> bool {
    value.cast::<PyString>().is_ok()
        || value.cast::<PyBytes>().is_ok()
        || value.cast::<PyDict>().is_ok()
        || value.cast::<PyList>().is_ok()
}

fn done_or_cancelled(rx: &Receiver<()>, cancel: &CancelToken) -> bool {
    loop {
        match rx.recv_timeout(CANCEL_CHECK) {
            Ok(()) | Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return true,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) if cancel.is_cancelled() => {
                return false
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
        }
    }
}

/// `TypeName: message`, the way a traceback's last line reads.
///
/// The message may be huge (an exception that quotes a whole response, a
/// lent tool's error result): only its first
/// `ProbeError::MAX_MESSAGE_BYTES + 1` characters are read, by the str's
/// own length (see [`crate::observe::head`]), and `ProbeError::new` cuts
/// the rest. So a 100 MB message costs the interpreter lock a few KiB's
/// worth, not a copy of its size. (`str(exc)` runs the exception's own
/// `__str__`, the host's code: what that builds is the host's cost.)
pub fn describe(py: Python<'_>, err: &PyErr) -> String {
    let max = ProbeError::MAX_MESSAGE_BYTES;
    let kind = err
        .get_type(py)
        .name()
        .map_or_else(|_| "Exception".to_string(), |n| text_head(&n, max));
    let text = err
        .value(py)
        .str()
        .map_or_else(|_| String::new(), |s| text_head(&s, max));
    if text.is_empty() {
        kind
    } else {
        format!("{kind}: {text}")
    }
}

/// `waitfor._aio.submit`: schedules an awaitable on a loop from another
/// thread, giving a `concurrent.futures.Future`.
fn submit(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static SUBMIT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    SUBMIT
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("waitfor._aio")?.getattr("submit")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// A done-callback that wakes the thread waiting for a coroutine.
#[pyclass(frozen)]
struct Notify {
    tx: Sender<()>,
}

#[pymethods]
impl Notify {
    fn __call__(&self, _future: &Bound<'_, PyAny>) {
        let _ = self.tx.try_send(());
    }
}

/// What a call of Python gave.
pub enum Called<'py> {
    /// A value to read as is.
    Value(Bound<'py, PyAny>),
    /// An awaitable, and the context it was made in (its task's).
    Awaitable(Bound<'py, PyAny>, Bound<'py, PyAny>),
}

/// Runs `awaitable` as a task of the running loop, made within `context`
/// (a task copies the context it is made in: so on every Python version).
/// Call it on the loop's thread.
pub fn start_task<'py>(
    context: &Bound<'py, PyAny>,
    awaitable: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    static ENSURE_FUTURE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = context.py();
    let ensure_future = ENSURE_FUTURE.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("asyncio")?.getattr("ensure_future")?.unbind())
    })?;
    run_in(
        context,
        ensure_future.bind(py),
        (awaitable,).into_pyobject(py)?,
    )
}

/// Shared between a wait's probe (or tool caller) and its handle.
pub type SharedCalls = Arc<Calls>;
