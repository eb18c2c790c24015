//! Host callbacks: the probe, progress and done functions, their
//! `user_data`, and the finalizer that runs exactly once.
//!
//! The probe callback never hands the library a buffer to free: it fills a
//! library-owned `waitfor_observation` through the `waitfor_observation_set_*`
//! writers, which copy what they are given before they return.

use crate::guard::{guard_or, text, FfiResult};
use crate::status::{
    FfiError, WAITFOR_ERR_INVALID_ARGUMENT, WAITFOR_ERR_INVALID_JSON, WAITFOR_ERR_NULL_POINTER,
    WAITFOR_OK,
};
use serde_json::Value;
use std::cell::Cell;
use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;
use std::time::Duration;
use waitfor::{Observation, Probe, ProbeContext, ProbeError, Progress};

thread_local! {
    /// Set while this thread runs a host's progress, done or notice callback.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Runs `call`, the call of a host's progress, done or notice callback, marked
/// as such (see [`refuse_in_callback`]).
pub(crate) fn as_callback(call: impl FnOnce()) {
    let outer = IN_CALLBACK.replace(true);
    call();
    IN_CALLBACK.set(outer);
}

/// Refuses `what`, a call that blocks until a result is delivered, when it
/// is made from a host's progress, done or notice callback: those run on
/// the library's delivery threads, so the result it would wait for (its own
/// wait's, or any wait's delivered on the same thread) could never come,
/// and every wait delivered there would stop with it.
/// The same holds on every thread the engine needs to end waits (a
/// finalizer may run on a delivery thread, after the done callback).
pub(crate) fn refuse_in_callback(what: &str) -> FfiResult<()> {
    if !IN_CALLBACK.get() && !waitfor::Engine::global().needs_this_thread() {
        return Ok(());
    }
    Err(FfiError::new(
        WAITFOR_ERR_INVALID_ARGUMENT,
        format!(
            "{what} was called from a progress, done, notice or finalize callback, where it \
             would wait for results delivered on the very thread it holds: call it from \
             another thread"
        ),
    ))
}

/// Takes one observation for a wait.
///
/// Called on one of the engine's worker threads, one call at a time per
/// wait, never after the wait has returned, and never under an internal lock. `ctx` is
/// borrowed for the call only. Fill `out` with the `waitfor_observation_set_*`
/// writers (they copy; the callback keeps ownership of its own buffers) and
/// return 0; any other return value, or a call of
/// `waitfor_observation_set_error`, makes the call a probe error. A call
/// still running at the deadline is abandoned: it keeps its thread until it
/// returns, and `waitfor_probe_ctx_cancelled(ctx)` turns true so it can stop
/// early. A C++ exception must never leave this function.
pub type waitfor_probe_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        ctx: *const waitfor_probe_ctx,
        out: *mut waitfor_observation,
    ) -> i32,
>;

/// Hears about a wait's progress: `progress_json` is
/// `{"samples", "elapsed_ms", "last_line"}`, NUL-terminated, `len` bytes
/// without the NUL, borrowed for the call only.
///
/// Called on the library's report thread after samples that decided
/// nothing (throttled by the spec's `progress_every_ms`), one at a time,
/// before the wait's `done`; it may run concurrently with the probe
/// callback of the same wait. A report not begun when the wait ends is
/// dropped.
///
/// It must not block: the thread it runs on reports other waits' progress
/// too, and the wait's answer waits for it. `waitfor_wait`,
/// `waitfor_call_tool` (any form) and `waitfor_handle_wait` with a timeout
/// other than 0, called from it, return `WAITFOR_ERR_INVALID_ARGUMENT` at
/// once: the result they would wait for could wait for this very call.
pub type waitfor_progress_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, progress_json: *const c_char, len: usize)>;

/// Hears, exactly once, that a wait ended: `status` is `WAITFOR_OK` with
/// the result JSON (for a profile: the tool's output JSON) in `json`, or an
/// error status with the error JSON. `json` is NUL-terminated, `len` bytes
/// without the NUL, borrowed for the call only.
///
/// Called on a library delivery thread, before `waitfor_handle_wait` sees the
/// result: an event-loop host can post a message here and never block.
///
/// It must not block: the thread it runs on delivers other waits' results
/// too. `waitfor_wait`, `waitfor_call_tool` (any form) and
/// `waitfor_handle_wait` with a timeout other than 0, called from it,
/// return `WAITFOR_ERR_INVALID_ARGUMENT` at once: the result they would
/// wait for could be due on this very thread.
pub type waitfor_done_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, status: i32, json: *const c_char, len: usize),
>;

/// Releases `user_data`. Called exactly once per `waitfor_callbacks` (or
/// `waitfor_tool_caller`) passed to `waitfor_wait`, `waitfor_start`,
/// `waitfor_tool_start` or their `*_with_host` forms, whatever happens
/// (also when the call fails at once), after the last call of any other
/// callback. It may run on any thread, and may run after
/// `waitfor_wait` returned (an abandoned probe call keeps `user_data` in use
/// until it returns). When a wait ends it runs on a library delivery
/// thread, after the done callback, and must not block: `waitfor_wait`,
/// `waitfor_call_tool` (any form) and `waitfor_handle_wait` with a timeout
/// other than 0, called there, return `WAITFOR_ERR_INVALID_ARGUMENT` at
/// once, as from a done callback.
pub type waitfor_finalize_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// The host's callbacks for one wait. Every member may be NULL.
///
/// The library copies this struct during the call it is passed to; the
/// struct itself is not kept. `user_data` is passed to every callback; the
/// library never reads it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct waitfor_callbacks {
    /// The probe; NULL uses the spec's built-in probe (`"probe"` in the spec).
    pub probe: waitfor_probe_fn,
    /// Progress reports; NULL for none.
    pub progress: waitfor_progress_fn,
    /// The end of the wait; NULL for none.
    pub done: waitfor_done_fn,
    /// The host's context for the callbacks.
    pub user_data: *mut c_void,
    /// Releases `user_data`, exactly once; NULL for nothing to release.
    pub finalize: waitfor_finalize_fn,
}

/// The host's callbacks, shared by every part of one wait. Dropping the
/// last reference runs the finalizer: exactly once, on every path.
pub(crate) struct Callbacks(waitfor_callbacks);

// SAFETY: the C contract says callbacks are called on library threads and
// `user_data` is the host's to make safe for that.
unsafe impl Send for Callbacks {}
// SAFETY: as above.
unsafe impl Sync for Callbacks {}

impl Callbacks {
    /// Copies the host's struct; NULL means no callbacks.
    ///
    /// # Safety
    /// `raw` is NULL or points to a valid `waitfor_callbacks`.
    pub unsafe fn take(raw: *const waitfor_callbacks) -> Option<Arc<Self>> {
        // SAFETY: per the contract above.
        unsafe { raw.as_ref() }.map(|raw| Arc::new(Self(*raw)))
    }

    pub fn has_probe(&self) -> bool {
        self.0.probe.is_some()
    }

    /// A probe calling the host's probe function, if there is one.
    pub fn probe(self: &Arc<Self>) -> Option<Box<dyn Probe>> {
        self.0.probe.map(|call| {
            Box::new(CProbe {
                call,
                callbacks: self.clone(),
            }) as Box<dyn Probe>
        })
    }

    /// Calls the progress function, if there is one.
    pub fn progress(&self, progress: &Progress) {
        if let Some(call) = self.0.progress {
            let json = serde_json::json!({
                "samples": progress.samples,
                "elapsed_ms": progress.elapsed_ms,
                "last_line": progress.last_line,
            })
            .to_string();
            let c = CString::new(json).unwrap_or_default();
            // SAFETY: the host's function, called per its contract.
            as_callback(|| unsafe { call(self.0.user_data, c.as_ptr(), c.as_bytes().len()) });
        }
    }

    pub fn has_progress(&self) -> bool {
        self.0.progress.is_some()
    }

    /// Calls the done function, if there is one.
    pub fn done(&self, status: i32, json: &str) {
        if let Some(call) = self.0.done {
            let c = CString::new(json).unwrap_or_default();
            // SAFETY: the host's function, called per its contract.
            as_callback(|| unsafe {
                call(self.0.user_data, status, c.as_ptr(), c.as_bytes().len())
            });
        }
    }
}

/// The host's probe function as an engine probe, exactly as `waitfor_wait`
/// and `waitfor_start` wrap it (the finalizer runs when it is dropped):
/// for Rust tests and the ABI benchmark. `None` when `raw` is NULL or has
/// no probe.
///
/// # Safety
/// `raw` is NULL or points to a valid `waitfor_callbacks`.
pub unsafe fn c_probe(raw: *const waitfor_callbacks) -> Option<Box<dyn Probe>> {
    // SAFETY: per the contract above.
    unsafe { Callbacks::take(raw) }.and_then(|cb| cb.probe())
}

impl Drop for Callbacks {
    fn drop(&mut self) {
        if let Some(finalize) = self.0.finalize {
            // SAFETY: the last reference is gone: no other callback runs
            // after this one, and it runs once.
            unsafe { finalize(self.0.user_data) };
        }
    }
}

/// The host's probe function as an engine probe.
struct CProbe {
    call: unsafe extern "C" fn(
        *mut c_void,
        *const waitfor_probe_ctx,
        *mut waitfor_observation,
    ) -> i32,
    callbacks: Arc<Callbacks>,
}

impl Probe for CProbe {
    fn sample(&mut self, ctx: &ProbeContext) -> Result<Observation, ProbeError> {
        observe(ctx, "probe", |ctx, out| {
            // SAFETY: the host's function; both pointers live for the call.
            unsafe { (self.call)(self.callbacks.0.user_data, ctx, out) }
        })
    }

    fn name(&self) -> &str {
        "c_callback"
    }
}

/// Makes one call of a host function that fills an observation (`what`
/// names it in errors): the status and `waitfor_observation_set_error`
/// decide whether it is a probe error.
pub(crate) fn observe(
    ctx: &ProbeContext,
    what: &str,
    call: impl FnOnce(*const waitfor_probe_ctx, *mut waitfor_observation) -> i32,
) -> Result<Observation, ProbeError> {
    let ctx = waitfor_probe_ctx { ctx: ctx.clone() };
    let mut out = waitfor_observation::default();
    let status = call(&ctx, &mut out);
    match (out.error, status) {
        (Some(message), _) => Err(ProbeError::new(message)),
        (None, WAITFOR_OK) => Ok(out.observation),
        (None, status) => Err(ProbeError::new(format!(
            "the {what} callback returned {status}"
        ))),
    }
}

/// What a probe call is told about itself (opaque). Borrowed for the call
/// only: read it with the `waitfor_probe_ctx_*` functions.
pub struct waitfor_probe_ctx {
    ctx: ProbeContext,
}

/// Where a probe call leaves its observation (opaque, owned by the
/// library). Fill it with the `waitfor_observation_set_*` writers.
#[derive(Default)]
pub struct waitfor_observation {
    observation: Observation,
    error: Option<String>,
}

impl waitfor_observation {
    fn fail(&mut self, err: FfiError) -> i32 {
        let message = err.detail["message"].as_str().unwrap_or_default();
        self.error = Some(format!("the probe gave a bad observation: {message}"));
        err.status
    }
}

fn ctx_get<T: Copy>(
    ctx: *const waitfor_probe_ctx,
    fallback: T,
    get: impl FnOnce(&ProbeContext) -> T,
) -> T {
    guard_or(fallback, || {
        // SAFETY: NULL or the ctx of the running call.
        match unsafe { ctx.as_ref() } {
            Some(ctx) => get(&ctx.ctx),
            None => fallback,
        }
    })
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The call's number within its wait: 1 for the first call, then 2, ...
///
/// Ownership: borrows `ctx`. Threads: the probe callback's thread, during
/// the call. Returns 0 when `ctx` is NULL.
///
/// # Safety
/// `ctx` is NULL or the ctx passed to the running probe call.
#[no_mangle]
pub unsafe extern "C" fn waitfor_probe_ctx_sample(ctx: *const waitfor_probe_ctx) -> u64 {
    ctx_get(ctx, 0, |c| c.sample)
}

/// Milliseconds since the wait began.
///
/// Ownership: borrows `ctx`. Threads: the probe callback's thread, during
/// the call. Returns 0 when `ctx` is NULL.
///
/// # Safety
/// `ctx` is NULL or the ctx passed to the running probe call.
#[no_mangle]
pub unsafe extern "C" fn waitfor_probe_ctx_elapsed_ms(ctx: *const waitfor_probe_ctx) -> u64 {
    ctx_get(ctx, 0, |c| millis(c.elapsed))
}

/// Milliseconds left before the deadline: a call still running after this
/// is abandoned (its result is ignored).
///
/// Ownership: borrows `ctx`. Threads: the probe callback's thread, during
/// the call. Returns 0 when `ctx` is NULL.
///
/// # Safety
/// `ctx` is NULL or the ctx passed to the running probe call.
#[no_mangle]
pub unsafe extern "C" fn waitfor_probe_ctx_budget_ms(ctx: *const waitfor_probe_ctx) -> u64 {
    ctx_get(ctx, 0, |c| millis(c.budget))
}

/// The largest observation the wait accepts, in bytes; a longer text ends
/// the wait with outcome `error`. A probe may stop reading one byte past it.
///
/// Ownership: borrows `ctx`. Threads: the probe callback's thread, during
/// the call. Returns 0 when `ctx` is NULL.
///
/// # Safety
/// `ctx` is NULL or the ctx passed to the running probe call.
#[no_mangle]
pub unsafe extern "C" fn waitfor_probe_ctx_output_cap(ctx: *const waitfor_probe_ctx) -> usize {
    ctx_get(ctx, 0, |c| c.output_cap)
}

/// Whether the result of this call is no longer wanted (deadline passed,
/// wait cancelled or ended): a slow probe checks it and returns early.
///
/// Ownership: borrows `ctx`. Threads: the probe callback's thread, during
/// the call. Returns true when `ctx` is NULL.
///
/// # Safety
/// `ctx` is NULL or the ctx passed to the running probe call.
#[no_mangle]
pub unsafe extern "C" fn waitfor_probe_ctx_cancelled(ctx: *const waitfor_probe_ctx) -> bool {
    ctx_get(ctx, true, |c| c.cancel.is_cancelled())
}

/// Sleeps until the call is cancelled or `timeout_ms` passed, whichever
/// comes first, and says whether it was cancelled: a probe's interruptible
/// sleep. Costs no CPU while it sleeps.
///
/// Ownership: borrows `ctx`. Threads: the probe callback's thread, during
/// the call. Returns true at once when `ctx` is NULL.
///
/// # Safety
/// `ctx` is NULL or the ctx passed to the running probe call.
#[no_mangle]
pub unsafe extern "C" fn waitfor_probe_ctx_wait_cancelled(
    ctx: *const waitfor_probe_ctx,
    timeout_ms: u64,
) -> bool {
    ctx_get(ctx, true, |c| {
        c.cancel.wait_timeout(Duration::from_millis(timeout_ms))
    })
}

fn with_out(
    out: *mut waitfor_observation,
    write: impl FnOnce(&mut waitfor_observation) -> i32,
) -> i32 {
    guard_or(crate::status::WAITFOR_ERR_PANIC, || {
        // SAFETY: NULL or the observation of the running call.
        match unsafe { out.as_mut() } {
            Some(out) => write(out),
            None => WAITFOR_ERR_NULL_POINTER,
        }
    })
}

/// Sets the observation's text (what the conditions read), replacing any
/// text set before. The library copies `len` bytes from `text` before it
/// returns; the caller keeps ownership of its buffer. Text that is not
/// UTF-8 makes the call a probe error (and returns `WAITFOR_ERR_INVALID_UTF8`);
/// text longer than the output cap ends the wait with outcome `error`.
///
/// Threads: the probe callback's thread, during the call.
/// @return `WAITFOR_OK`, `WAITFOR_ERR_NULL_POINTER` or `WAITFOR_ERR_INVALID_UTF8`.
///
/// # Safety
/// `out` is NULL or the observation passed to the running probe call;
/// `text` is NULL (with `len` 0) or points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn waitfor_observation_set_text(
    out: *mut waitfor_observation,
    text_ptr: *const c_char,
    len: usize,
) -> i32 {
    with_out(out, |out| {
        // SAFETY: per the contract above.
        match unsafe { text(text_ptr, len, "text") } {
            Ok(t) => {
                out.observation.text = t.to_owned();
                WAITFOR_OK
            }
            Err(err) => out.fail(err),
        }
    })
}

/// Sets structured output for JSON pointer conditions; the text becomes
/// its compact JSON. The library parses (and so copies) `json` before it
/// returns. Text that is not UTF-8 or not JSON makes the call a probe error.
///
/// Threads: the probe callback's thread, during the call.
/// @return `WAITFOR_OK`, `WAITFOR_ERR_NULL_POINTER`, `WAITFOR_ERR_INVALID_UTF8`
/// or `WAITFOR_ERR_INVALID_JSON`.
///
/// # Safety
/// As for `waitfor_observation_set_text`.
#[no_mangle]
pub unsafe extern "C" fn waitfor_observation_set_json(
    out: *mut waitfor_observation,
    json: *const c_char,
    len: usize,
) -> i32 {
    with_out(out, |out| {
        // SAFETY: per the contract above.
        let parsed = unsafe { text(json, len, "json") }.and_then(|t| {
            serde_json::from_str::<Value>(t).map_err(|e| {
                FfiError::new(WAITFOR_ERR_INVALID_JSON, format!("`json` is not JSON: {e}"))
            })
        });
        match parsed {
            Ok(value) => {
                let exit_code = out.observation.exit_code;
                let gone = out.observation.gone;
                out.observation = Observation::json(value);
                out.observation.exit_code = exit_code;
                out.observation.gone = gone;
                WAITFOR_OK
            }
            Err(err) => out.fail(err),
        }
    })
}

/// Sets the exit status of a process the probe ran (for `exit_code`
/// conditions and the result's `exit_code`).
///
/// Threads: the probe callback's thread, during the call.
/// @return `WAITFOR_OK` or `WAITFOR_ERR_NULL_POINTER`.
///
/// # Safety
/// `out` is NULL or the observation passed to the running probe call.
#[no_mangle]
pub unsafe extern "C" fn waitfor_observation_set_exit_code(
    out: *mut waitfor_observation,
    exit_code: i32,
) -> i32 {
    with_out(out, |out| {
        out.observation.exit_code = Some(exit_code);
        WAITFOR_OK
    })
}

/// Marks the target as gone (it can no longer change: the process exited,
/// the pane died); the wait ends with outcome `gone` unless this sample
/// matched.
///
/// Threads: the probe callback's thread, during the call.
/// @return `WAITFOR_OK` or `WAITFOR_ERR_NULL_POINTER`.
///
/// # Safety
/// `out` is NULL or the observation passed to the running probe call.
#[no_mangle]
pub unsafe extern "C" fn waitfor_observation_set_gone(
    out: *mut waitfor_observation,
    gone: bool,
) -> i32 {
    with_out(out, |out| {
        out.observation.gone = gone;
        WAITFOR_OK
    })
}

/// Makes this call a probe error with `message` (copied; bytes that are
/// not UTF-8 are replaced). The spec's `on_probe_error` decides whether
/// the wait fails or tolerates it; the result reports the last message.
/// A message longer than 4,096 bytes is cut to that, ending in
/// ` ... [cut: the message is longer than 4096 bytes]`: only its first
/// 4,097 bytes are read, however long `len` says it is.
///
/// Threads: the probe callback's thread, during the call.
/// @return `WAITFOR_OK` or `WAITFOR_ERR_NULL_POINTER`.
///
/// # Safety
/// `out` is NULL or the observation passed to the running probe call;
/// `message` is NULL (with `len` 0) or points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn waitfor_observation_set_error(
    out: *mut waitfor_observation,
    message: *const c_char,
    len: usize,
) -> i32 {
    with_out(out, |out| {
        if message.is_null() && len > 0 {
            return WAITFOR_ERR_NULL_POINTER;
        }
        let bytes = if message.is_null() {
            &[][..]
        } else {
            // Only what the bound keeps, and a byte to know it was cut
            // (`ProbeError::new` cuts it): a huge message is not copied
            // whole. SAFETY: per the contract above (`len` bytes readable).
            let len = len.min(ProbeError::MAX_MESSAGE_BYTES + 1);
            unsafe { std::slice::from_raw_parts(message.cast::<u8>(), len) }
        };
        out.error = Some(String::from_utf8_lossy(bytes).into_owned());
        WAITFOR_OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::{waitfor_handle_free, waitfor_handle_wait, waitfor_start, waitfor_wait};
    use crate::info::waitfor_string_free;
    use std::ptr::null_mut;
    use std::sync::atomic::{AtomicI32, Ordering};

    unsafe extern "C" fn ready(
        _user_data: *mut c_void,
        _ctx: *const waitfor_probe_ctx,
        out: *mut waitfor_observation,
    ) -> i32 {
        // SAFETY: `out` is the library's observation for this call.
        unsafe { waitfor_observation_set_text(out, c"ready".as_ptr(), 5) }
    }

    fn ready_callbacks(done: waitfor_done_fn) -> waitfor_callbacks {
        waitfor_callbacks {
            probe: Some(ready),
            progress: None,
            done,
            user_data: null_mut(),
            finalize: None,
        }
    }

    const SPEC: &str = r#"{"until": {"matches": "ready"}}"#;

    /// What the inner `waitfor_wait` of [`waits_inside`] returned.
    static INNER: AtomicI32 = AtomicI32::new(-1);
    /// What the inner `waitfor_wait` of [`finalizer_waits`] returned.
    static IN_FINALIZER: AtomicI32 = AtomicI32::new(-1);

    /// Runs a whole wait on a probe that answers "ready"; its status.
    fn run_a_wait() -> i32 {
        let callbacks = ready_callbacks(None);
        let (mut result, mut error) = (null_mut(), null_mut());
        // SAFETY: live arguments, per `waitfor_wait`'s contract.
        let status = unsafe {
            waitfor_wait(
                SPEC.as_ptr().cast(),
                SPEC.len(),
                &callbacks,
                &mut result,
                &mut error,
            )
        };
        // SAFETY: strings the library handed out, or NULL.
        unsafe {
            waitfor_string_free(result);
            waitfor_string_free(error);
        }
        status
    }

    /// Starts a wait with `callbacks` and waits for it from this thread;
    /// the status of `waitfor_handle_wait`.
    fn start_and_wait(callbacks: &waitfor_callbacks) -> i32 {
        let mut handle = null_mut();
        // SAFETY: live arguments, per `waitfor_start`'s contract.
        let status = unsafe {
            waitfor_start(
                SPEC.as_ptr().cast(),
                SPEC.len(),
                callbacks,
                &mut handle,
                null_mut(),
            )
        };
        assert_eq!(status, WAITFOR_OK);
        let mut result = null_mut();
        // SAFETY: a live handle and writable storage.
        let status = unsafe { waitfor_handle_wait(handle, 20_000, &mut result, null_mut()) };
        // SAFETY: what the library handed out.
        unsafe {
            waitfor_string_free(result);
            waitfor_handle_free(handle);
        }
        status
    }

    /// A done callback that runs a whole wait of its own.
    unsafe extern "C" fn waits_inside(_: *mut c_void, _: i32, _: *const c_char, _: usize) {
        INNER.store(run_a_wait(), Ordering::SeqCst);
    }

    /// A finalizer that runs a whole wait of its own.
    unsafe extern "C" fn finalizer_waits(_: *mut c_void) {
        IN_FINALIZER.store(run_a_wait(), Ordering::SeqCst);
    }

    /// Waiting from a done callback is refused at once: it runs on a
    /// delivery thread, and the inner wait's result, due on that very
    /// thread half the time, never came (the outer wait's neither).
    #[test]
    fn waiting_from_a_done_callback_is_refused() {
        let status = start_and_wait(&ready_callbacks(Some(waits_inside)));
        assert_eq!(status, WAITFOR_OK, "the outer wait was delivered");
        assert_eq!(INNER.load(Ordering::SeqCst), WAITFOR_ERR_INVALID_ARGUMENT);
    }

    /// A finalizer runs where the last holder of `user_data` lets go: for
    /// a wait that ends, on a delivery thread, after the done callback.
    /// Waiting there is refused as in a done callback: the inner wait's
    /// result, due on that very thread half the time, never came, nor did
    /// the results of the other waits delivered there.
    #[test]
    fn waiting_from_a_finalizer_on_a_delivery_thread_is_refused() {
        let mut callbacks = ready_callbacks(None);
        callbacks.finalize = Some(finalizer_waits);
        let status = start_and_wait(&callbacks);
        assert_eq!(status, WAITFOR_OK, "the outer wait was delivered");
        // The finalizer runs once the wait's delivery is over.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while IN_FINALIZER.load(Ordering::SeqCst) == -1 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let in_finalizer = IN_FINALIZER.load(Ordering::SeqCst);
        assert_eq!(in_finalizer, WAITFOR_ERR_INVALID_ARGUMENT);
        // The waits after it are delivered, on both threads.
        for _ in 0..4 {
            assert_eq!(start_and_wait(&ready_callbacks(None)), WAITFOR_OK);
        }
    }

    /// A huge error message is read only as far as the bound keeps, and
    /// the probe error holds it cut.
    #[test]
    fn set_error_copies_only_the_bounded_head() {
        let max = ProbeError::MAX_MESSAGE_BYTES;
        let huge = "é".repeat(1 << 20);
        let mut out = waitfor_observation::default();
        // SAFETY: `out` is a live observation; `huge` has `len` bytes.
        let status =
            unsafe { waitfor_observation_set_error(&mut out, huge.as_ptr().cast(), huge.len()) };
        assert_eq!(status, WAITFOR_OK);
        let copied = out.error.clone().unwrap();
        assert!(copied.len() <= max + 3, "{}", copied.len());
        let err = ProbeError::new(copied);
        assert!(err.message.len() <= max);
        assert!(err.message.ends_with(ProbeError::CUT_MARK));
    }
}
