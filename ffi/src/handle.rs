//! Waits: started from a spec or a profile call, run on the global engine,
//! awaited through a handle (blocking with a timeout, or by the done
//! callback), cancelled and woken from any thread.

use crate::callbacks::{refuse_in_callback, waitfor_callbacks, Callbacks};
use crate::guard::{give, guard, guard_or, json, out_ptr, text, FfiResult};
use crate::host::{waitfor_notices, waitfor_tool_caller, CNotices, CTools, HostOptions};
use crate::status::{
    FfiError, WAITFOR_ERR_INVALID_ARGUMENT, WAITFOR_ERR_NULL_POINTER, WAITFOR_ERR_RUNTIME,
    WAITFOR_ERR_TIMEOUT, WAITFOR_OK,
};
use std::ffi::c_char;
use std::ptr;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;
use waitfor::profiles::{self, Host, Report};
use waitfor::{Engine, Policy, Probe, Spec, WaitControl, WaitOptions, WaitResult};

/// Where a wait's final answer lands: the result JSON (or, for a profile,
/// its output JSON) or the error that ended it.
#[derive(Default)]
struct Delivery {
    answer: Mutex<Option<FfiResult<String>>>,
    ready: Condvar,
}

impl Delivery {
    fn fill(&self, answer: FfiResult<String>) {
        *self.answer.lock().unwrap_or_else(PoisonError::into_inner) = Some(answer);
        self.ready.notify_all();
    }

    /// The answer if it is there, without waiting or blocking: in a forked
    /// child, a parent's thread may have held the lock at the fork.
    fn now(&self) -> Option<FfiResult<String>> {
        match self.answer.try_lock() {
            Ok(answer) => answer.clone(),
            Err(std::sync::TryLockError::Poisoned(answer)) => answer.into_inner().clone(),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// The answer, waiting at most `timeout` (`None`: without limit).
    fn get(&self, timeout: Option<Duration>) -> Option<FfiResult<String>> {
        let guard = self.answer.lock().unwrap_or_else(PoisonError::into_inner);
        let guard = match timeout {
            None => self
                .ready
                .wait_while(guard, |a| a.is_none())
                .unwrap_or_else(PoisonError::into_inner),
            Some(timeout) => {
                self.ready
                    .wait_timeout_while(guard, timeout, |a| a.is_none())
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
        };
        guard.clone()
    }
}

/// A running or finished wait (opaque).
///
/// Threads: `waitfor_handle_wait`, `waitfor_handle_cancel` and
/// `waitfor_handle_wake` may be called from any threads at once;
/// `waitfor_handle_free` must not overlap any other call on the handle.
pub struct waitfor_handle {
    control: WaitControl,
    delivery: Arc<Delivery>,
    /// The process whose engine delivers the answer: none arrives in a
    /// child forked from it.
    owner: u32,
}

/// How a finished wait becomes the host's answer.
type Render = Box<dyn Fn(&WaitResult) -> FfiResult<String> + Send + Sync>;

/// A tool call's report and where its notices go.
struct Reporting {
    report: Report,
    sink: CNotices,
}

/// A call's host callbacks taken one at a time, as the C contract says:
/// the engine reports progress on a thread of its own and ends a wait on a
/// delivery thread, and an ending that comes while a progress callback
/// runs is left to that callback's thread, after it: the delivery thread,
/// which ends other waits too, never waits for it.
#[derive(Default)]
struct Turns(std::sync::Mutex<TurnState>);

#[derive(Default)]
struct TurnState {
    reporting: bool,
    ended: bool,
    ending: Option<Box<dyn FnOnce() + Send>>,
}

/// A progress callback's turn; when it drops, an ending that came
/// meanwhile runs.
struct ReportTurn<'a>(&'a Turns);

impl Turns {
    fn state(&self) -> std::sync::MutexGuard<'_, TurnState> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A turn to report progress; none once the wait has ended.
    fn report(turns: &Turns) -> Option<ReportTurn<'_>> {
        let mut state = turns.state();
        if state.ended {
            return None;
        }
        state.reporting = true;
        Some(ReportTurn(turns))
    }

    /// Runs `ending` now, or after the progress callback running.
    fn end(&self, ending: Box<dyn FnOnce() + Send>) {
        let mut state = self.state();
        state.ended = true;
        if state.reporting {
            state.ending = Some(ending);
            return;
        }
        drop(state);
        ending();
    }
}

impl Drop for ReportTurn<'_> {
    fn drop(&mut self) {
        let ending = {
            let mut state = self.0.state();
            state.reporting = false;
            state.ending.take()
        };
        if let Some(ending) = ending {
            ending();
        }
    }
}

/// Starts a wait on the global engine; the callbacks (if any) live until
/// the wait is over, then their finalizer runs. `reporting` hears a tool
/// call's notices.
fn launch(
    spec: Spec,
    probe: Option<Box<dyn Probe>>,
    mut options: WaitOptions,
    callbacks: Option<Arc<Callbacks>>,
    render: Render,
    reporting: Option<Arc<Reporting>>,
) -> FfiResult<waitfor_handle> {
    let delivery = Arc::new(Delivery::default());
    let turns = Arc::new(Turns::default());
    let progress = callbacks.clone().filter(|cb| cb.has_progress());
    if progress.is_some() || reporting.is_some() {
        let (reporting, turns) = (reporting.clone(), turns.clone());
        options = options.on_progress(move |p| {
            let Some(_turn) = Turns::report(&turns) else {
                return;
            };
            if let Some(cb) = &progress {
                cb.progress(p);
            }
            if let Some(r) = &reporting {
                r.sink.send(r.report.progress(p));
            }
        });
    }
    let filled = delivery.clone();
    options = options.on_done(move |result| {
        let result = result.clone();
        turns.end(Box::new(move || {
            if let Some(r) = &reporting {
                r.sink.send(r.report.end(&result));
            }
            let answer = render(&result);
            if let Some(cb) = &callbacks {
                match &answer {
                    Ok(json) => cb.done(WAITFOR_OK, json),
                    Err(err) => cb.done(err.status, &err.detail.to_string()),
                }
            }
            filled.fill(answer);
        }));
    });
    let handle = Engine::global().start_with(spec, probe, options)?;
    Ok(waitfor_handle {
        control: handle.control(),
        delivery,
        owner: std::process::id(),
    })
}

/// Starts a wait from a JSON spec.
unsafe fn start_spec(
    spec: *const c_char,
    spec_len: usize,
    host: HostOptions,
    callbacks: Option<Arc<Callbacks>>,
) -> FfiResult<waitfor_handle> {
    // SAFETY: forwarded from the export's contract.
    let spec = Spec::from_value(&unsafe { json(spec, spec_len, "spec") }?)?;
    let probe = callbacks.as_ref().and_then(|cb| cb.probe());
    let render: Render = Box::new(|result| Ok(result.to_json().to_string()));
    let mut policy = Policy::default().grants(host.grants);
    if let Some(ceiling) = host.max_wait_ceiling {
        policy = policy.max_wait_ceiling(ceiling);
    }
    if let Some(cap) = host.output_cap {
        policy = policy.output_cap(cap);
    }
    let options = WaitOptions::default().policy(policy);
    launch(spec, probe, options, callbacks, render, None)
}

/// A tool call's arguments as the exports take them.
struct ToolCall {
    profile: *const c_char,
    profile_len: usize,
    args: *const c_char,
    args_len: usize,
}

/// Starts a profile call; a refusal's notices go to `notices` before the
/// error returns.
unsafe fn start_tool(
    call: ToolCall,
    host: HostOptions,
    tools: Option<CTools>,
    callbacks: Option<Arc<Callbacks>>,
    notices: Option<CNotices>,
) -> FfiResult<waitfor_handle> {
    let ToolCall {
        profile,
        profile_len,
        args,
        args_len,
    } = call;
    let tools = tools.map(CTools::into_caller).transpose()?;
    // SAFETY: forwarded from the export's contract.
    let profile = unsafe { text(profile, profile_len, "profile") }?;
    // SAFETY: as above.
    let args = unsafe { json(args, args_len, "args") }?;
    if callbacks.as_ref().is_some_and(|cb| cb.has_probe()) {
        return Err(FfiError::new(
            WAITFOR_ERR_INVALID_ARGUMENT,
            "a profile brings its own probe: `callbacks->probe` must be NULL",
        ));
    }
    let host = Host {
        tools,
        grants: host.grants,
        max_wait_ceiling: host.max_wait_ceiling,
    };
    let prepared = profiles::prepare(profile, &args, &host).map_err(|e| {
        if let Some(sink) = &notices {
            sink.send(profiles::refusal_notices(profile, &e));
        }
        FfiError::tool(&e)
    })?;
    let (spec, probe, options, render, report) = prepared.into_parts();
    let reporting = notices.map(|sink| Arc::new(Reporting { report, sink }));
    let render: Render = Box::new(move |result| {
        render(result)
            .map(|output| output.to_string())
            .map_err(|e| FfiError::tool(&e))
    });
    launch(spec, Some(probe), options, callbacks, render, reporting)
}

/// Gives the host its answer: a copy of the result, or the error.
fn deliver(answer: FfiResult<String>, result_json: &mut *mut c_char) -> FfiResult<()> {
    give(result_json, answer?)
}

fn hand_out(handle: waitfor_handle, slot: &mut *mut waitfor_handle) {
    *slot = Box::into_raw(Box::new(handle));
}

/// Runs a wait from a JSON spec to its end, blocking only the calling
/// thread (it sleeps without CPU while the engine works).
///
/// @param spec        the spec as UTF-8 JSON (see `waitfor_spec_schema`);
///                    borrowed for the call.
/// @param callbacks   NULL (the spec's built-in probe, no callbacks) or the
///                    host's callbacks; copied. The finalizer runs exactly
///                    once, also when this call fails.
/// @param result_json receives the result JSON (see `waitfor_result_schema`),
///                    owned by the caller: free it with `waitfor_string_free`.
///                    Any outcome, timeout included, is a result.
/// @param error_json  NULL, or receives the error JSON on failure (owned by
///                    the caller, `waitfor_string_free`); NULL on success.
/// @return `WAITFOR_OK`, `WAITFOR_ERR_NULL_POINTER`, `WAITFOR_ERR_INVALID_UTF8`,
///         `WAITFOR_ERR_INVALID_JSON`, `WAITFOR_ERR_INVALID_SPEC` or
///         `WAITFOR_ERR_PANIC`.
///
/// Threads: any thread; many waits may run at once from many threads.
///
/// # Safety
/// `spec` is NULL (with `spec_len` 0) or points to `spec_len` readable
/// bytes; `callbacks` is NULL or valid; `result_json` points to writable
/// storage; `error_json` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_wait(
    spec: *const c_char,
    spec_len: usize,
    callbacks: *const waitfor_callbacks,
    result_json: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    // SAFETY: forwarded from this function's contract; no host options.
    unsafe {
        waitfor_wait_with_host(
            spec,
            spec_len,
            ptr::null(),
            0,
            callbacks,
            result_json,
            error_json,
        )
    }
}

/// Starts a wait from a JSON spec and returns at once.
///
/// @param spec       as for `waitfor_wait`.
/// @param callbacks  as for `waitfor_wait`; `done` (if set) hears the end.
/// @param handle     receives the new handle, owned by the caller: free it
///                   with `waitfor_handle_free` (freeing does not cancel).
/// @param error_json as for `waitfor_wait`.
/// @return `WAITFOR_OK` or an error status, as for `waitfor_wait`.
///
/// Threads: any thread.
///
/// # Safety
/// As for `waitfor_wait`; `handle` points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_start(
    spec: *const c_char,
    spec_len: usize,
    callbacks: *const waitfor_callbacks,
    handle: *mut *mut waitfor_handle,
    error_json: *mut *mut c_char,
) -> i32 {
    // SAFETY: forwarded from this function's contract; no host options.
    unsafe {
        waitfor_start_with_host(
            spec,
            spec_len,
            ptr::null(),
            0,
            callbacks,
            handle,
            error_json,
        )
    }
}

/// Runs a profile's tool call to its end: `profile` names it (see
/// `waitfor_profiles`, e.g. `"aura/wait_for"`), `args` is the
/// agent's arguments object as JSON.
///
/// @param output_json receives the tool's output JSON (owned by the caller,
///                    `waitfor_string_free`).
/// @param error_json  NULL, or receives the error JSON on failure; for
///                    `WAITFOR_ERR_INVALID_SPEC` it names `field` and `rule`.
/// @return `WAITFOR_OK`, `WAITFOR_ERR_NULL_POINTER`, `WAITFOR_ERR_INVALID_UTF8`,
///         `WAITFOR_ERR_INVALID_JSON`, `WAITFOR_ERR_UNKNOWN_PROFILE`,
///         `WAITFOR_ERR_INVALID_SPEC` (the arguments broke the tool's input
///         schema), `WAITFOR_ERR_RUNTIME` (the wait could not finish
///         normally: answer the agent with `isError: true`),
///         `WAITFOR_ERR_TOO_MANY_CALLS` (over `waitfor_set_max_tool_calls`'s
///         cap: answer with `isError: true` too) or `WAITFOR_ERR_PANIC`.
///
/// Threads: any thread; blocks only the calling thread.
///
/// # Safety
/// `profile` and `args` are NULL (with length 0) or point to that many
/// readable bytes; `output_json` points to writable storage; `error_json`
/// is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_call_tool(
    profile: *const c_char,
    profile_len: usize,
    args: *const c_char,
    args_len: usize,
    output_json: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    // SAFETY: forwarded from this function's contract; no host options,
    // no host tools.
    unsafe {
        waitfor_call_tool_with_host(
            profile,
            profile_len,
            args,
            args_len,
            ptr::null(),
            0,
            ptr::null(),
            output_json,
            error_json,
        )
    }
}

/// Starts a profile's tool call and returns at once: for servers that send
/// progress notifications (`callbacks->progress`) and honour cancellation
/// (`waitfor_handle_cancel`). `waitfor_handle_wait` then gives the tool's
/// output JSON, or `WAITFOR_ERR_RUNTIME` with the error JSON.
///
/// @param callbacks NULL or the host's callbacks; `probe` must be NULL (a
///                  profile brings its own probe). The finalizer runs
///                  exactly once, also when this call fails.
/// @param handle    receives the new handle (owned by the caller,
///                  `waitfor_handle_free`).
/// @return as for `waitfor_call_tool` (never `WAITFOR_ERR_RUNTIME`), or
///         `WAITFOR_ERR_INVALID_ARGUMENT` when `callbacks->probe` is set.
///
/// Threads: any thread.
///
/// # Safety
/// As for `waitfor_call_tool`; `callbacks` is NULL or valid; `handle`
/// points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_tool_start(
    profile: *const c_char,
    profile_len: usize,
    args: *const c_char,
    args_len: usize,
    callbacks: *const waitfor_callbacks,
    handle: *mut *mut waitfor_handle,
    error_json: *mut *mut c_char,
) -> i32 {
    // SAFETY: forwarded from this function's contract; no host options,
    // no host tools.
    unsafe {
        waitfor_tool_start_with_host(
            profile,
            profile_len,
            args,
            args_len,
            ptr::null(),
            0,
            ptr::null(),
            callbacks,
            handle,
            error_json,
        )
    }
}

/// Runs a wait from a JSON spec to its end, as `waitfor_wait` does, with
/// the host's options: what the spec's built-in probes may reach.
///
/// @param host        NULL (with `host_len` 0: nothing granted, as
///                    `waitfor_wait`) or UTF-8 JSON, borrowed for the call:
///                    `{"grants": {"commands": "none" | "any" | ["prog", ...],
///                    "file_roots": ["dir", ...], "tmux_socket_paths": bool},
///                    "max_wait_ceiling_ms": N, "output_cap_bytes": N}`,
///                    every field optional (the cap: the largest observation,
///                    which a spec may lower, not raise; 256 KiB by default). A
///                    `command` probe runs only granted programs (compared
///                    with `argv[0]` as given), a `file` probe reads only
///                    regular files inside `file_roots` (resolved paths), a
///                    tmux `socket_name` is a path only with
///                    `tmux_socket_paths`; anything else is refused with
///                    `WAITFOR_ERR_INVALID_SPEC`, rule `not_granted`.
/// @return as for `waitfor_wait`, or `WAITFOR_ERR_INVALID_ARGUMENT` when
///         `host` breaks its schema (the error JSON names its `field`).
///
/// Threads: any thread; many waits may run at once from many threads.
///
/// # Safety
/// As for `waitfor_wait`; `host` is NULL (with `host_len` 0) or points to
/// `host_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn waitfor_wait_with_host(
    spec: *const c_char,
    spec_len: usize,
    host: *const c_char,
    host_len: usize,
    callbacks: *const waitfor_callbacks,
    result_json: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        // SAFETY: per the contract; taken first so the finalizer runs on
        // every path.
        let callbacks = unsafe { Callbacks::take(callbacks) };
        let result_json = out_ptr(result_json, "result_json")?;
        refuse_in_callback("waitfor_wait")?;
        // SAFETY: per the contract.
        let host = unsafe { HostOptions::parse(host, host_len) }?;
        // SAFETY: per the contract.
        let handle = unsafe { start_spec(spec, spec_len, host, callbacks) }?;
        deliver(handle.delivery.get(None).expect("no timeout"), result_json)
    })
}

/// Starts a wait from a JSON spec and returns at once, as `waitfor_start`
/// does, with the host's options (see `waitfor_wait_with_host`).
///
/// @return as for `waitfor_start`, or `WAITFOR_ERR_INVALID_ARGUMENT` when
///         `host` breaks its schema.
///
/// Threads: any thread.
///
/// # Safety
/// As for `waitfor_start` and `waitfor_wait_with_host`.
#[no_mangle]
pub unsafe extern "C" fn waitfor_start_with_host(
    spec: *const c_char,
    spec_len: usize,
    host: *const c_char,
    host_len: usize,
    callbacks: *const waitfor_callbacks,
    handle: *mut *mut waitfor_handle,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        // SAFETY: per the contract; taken first (see `waitfor_wait_with_host`).
        let callbacks = unsafe { Callbacks::take(callbacks) };
        let slot = out_ptr(handle, "handle")?;
        // SAFETY: per the contract.
        let host = unsafe { HostOptions::parse(host, host_len) }?;
        // SAFETY: per the contract.
        hand_out(
            unsafe { start_spec(spec, spec_len, host, callbacks) }?,
            slot,
        );
        Ok(())
    })
}

/// Runs a profile's tool call to its end, as `waitfor_call_tool` does, with
/// the host's options and, optionally, the host's own tools.
///
/// @param host  NULL (with `host_len` 0) or the host's options JSON (see
///              `waitfor_wait_with_host`), borrowed for the call: `grants`
///              decides what the profiles' built-in readers and
///              `aura/wait_for`'s built-in `run_command` and `read_file`
///              tools may reach (nothing by default);
///              `max_wait_ceiling_ms` overrides the profile's ceiling.
/// @param tools NULL, or the host's tool caller, copied: `aura/wait_for`
///              then calls `tools->call` with the agent's `probe.tool` and
///              `probe.args` instead of its built-in tools. Its finalizer
///              runs exactly once, also when this call fails.
/// @return as for `waitfor_call_tool`, or `WAITFOR_ERR_INVALID_ARGUMENT`
///         when `host` breaks its schema or `tools->call` is NULL.
///
/// Threads: any thread; blocks only the calling thread. `tools->call` runs
/// on library worker threads.
///
/// # Safety
/// As for `waitfor_call_tool`; `host` is NULL (with `host_len` 0) or points
/// to `host_len` readable bytes; `tools` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn waitfor_call_tool_with_host(
    profile: *const c_char,
    profile_len: usize,
    args: *const c_char,
    args_len: usize,
    host: *const c_char,
    host_len: usize,
    tools: *const waitfor_tool_caller,
    output_json: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    // SAFETY: forwarded from this function's contract; no notices.
    unsafe {
        waitfor_call_tool_with_notices(
            profile,
            profile_len,
            args,
            args_len,
            host,
            host_len,
            tools,
            ptr::null(),
            output_json,
            error_json,
        )
    }
}

/// Runs a profile's tool call to its end, as `waitfor_call_tool_with_host`
/// does, and hands the profile's progress and log notices to `notices`
/// (see `waitfor_notice_fn`) as the call runs: an MCP server sends them to
/// the client as `notifications/progress` and `notifications/message`.
///
/// @param notices NULL (as `waitfor_call_tool_with_host`) or the host's
///                notice sink, copied. Its finalizer runs exactly once,
///                also when this call fails. A refused call's notices
///                (libtmux-mcp logs an invalid regex) come before it returns.
/// @return as for `waitfor_call_tool_with_host`.
///
/// Threads: any thread; blocks only the calling thread. `notices->notice`
/// runs on library threads, and on the calling thread for a refusal.
///
/// # Safety
/// As for `waitfor_call_tool_with_host`; `notices` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn waitfor_call_tool_with_notices(
    profile: *const c_char,
    profile_len: usize,
    args: *const c_char,
    args_len: usize,
    host: *const c_char,
    host_len: usize,
    tools: *const waitfor_tool_caller,
    notices: *const waitfor_notices,
    output_json: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        // SAFETY: per the contract; taken first so the finalizers run on
        // every path.
        let tools = unsafe { CTools::take(tools) };
        // SAFETY: as above.
        let notices = unsafe { CNotices::take(notices) };
        let output_json = out_ptr(output_json, "output_json")?;
        refuse_in_callback("waitfor_call_tool")?;
        // SAFETY: per the contract.
        let host = unsafe { HostOptions::parse(host, host_len) }?;
        let call = ToolCall {
            profile,
            profile_len,
            args,
            args_len,
        };
        // SAFETY: per the contract.
        let handle = unsafe { start_tool(call, host, tools, None, notices) }?;
        deliver(handle.delivery.get(None).expect("no timeout"), output_json)
    })
}

/// Starts a profile's tool call and returns at once, as
/// `waitfor_tool_start` does, with the host's options and tools (see
/// `waitfor_call_tool_with_host`).
///
/// @return as for `waitfor_tool_start`, or `WAITFOR_ERR_INVALID_ARGUMENT`
///         when `host` breaks its schema or `tools->call` is NULL. Both
///         finalizers (`callbacks`, `tools`) run exactly once, also when this
///         call fails.
///
/// Threads: any thread.
///
/// # Safety
/// As for `waitfor_tool_start` and `waitfor_call_tool_with_host`.
#[no_mangle]
pub unsafe extern "C" fn waitfor_tool_start_with_host(
    profile: *const c_char,
    profile_len: usize,
    args: *const c_char,
    args_len: usize,
    host: *const c_char,
    host_len: usize,
    tools: *const waitfor_tool_caller,
    callbacks: *const waitfor_callbacks,
    handle: *mut *mut waitfor_handle,
    error_json: *mut *mut c_char,
) -> i32 {
    // SAFETY: forwarded from this function's contract; no notices.
    unsafe {
        waitfor_tool_start_with_notices(
            profile,
            profile_len,
            args,
            args_len,
            host,
            host_len,
            tools,
            callbacks,
            ptr::null(),
            handle,
            error_json,
        )
    }
}

/// Starts a profile's tool call and returns at once, as
/// `waitfor_tool_start_with_host` does, and hands the profile's progress
/// and log notices to `notices` (see `waitfor_call_tool_with_notices`).
/// `callbacks->progress` still hears the engine's own progress.
///
/// @return as for `waitfor_tool_start_with_host`. The three finalizers
///         (`callbacks`, `tools`, `notices`) run exactly once, also when
///         this call fails.
///
/// Threads: any thread.
///
/// # Safety
/// As for `waitfor_tool_start_with_host`; `notices` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn waitfor_tool_start_with_notices(
    profile: *const c_char,
    profile_len: usize,
    args: *const c_char,
    args_len: usize,
    host: *const c_char,
    host_len: usize,
    tools: *const waitfor_tool_caller,
    callbacks: *const waitfor_callbacks,
    notices: *const waitfor_notices,
    handle: *mut *mut waitfor_handle,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        // SAFETY: per the contract; all three taken first (see
        // `waitfor_wait_with_host`).
        let callbacks = unsafe { Callbacks::take(callbacks) };
        // SAFETY: as above.
        let tools = unsafe { CTools::take(tools) };
        // SAFETY: as above.
        let notices = unsafe { CNotices::take(notices) };
        let slot = out_ptr(handle, "handle")?;
        // SAFETY: per the contract.
        let host = unsafe { HostOptions::parse(host, host_len) }?;
        let call = ToolCall {
            profile,
            profile_len,
            args,
            args_len,
        };
        // SAFETY: per the contract.
        let started = unsafe { start_tool(call, host, tools, callbacks, notices) }?;
        hand_out(started, slot);
        Ok(())
    })
}

/// Waits for a started wait's answer, at most `timeout_ms` milliseconds
/// (negative: without limit; 0: just look). The calling thread sleeps
/// without CPU. The answer stays in the handle: every later call gives it
/// again.
///
/// @param result_json receives the result JSON (for a tool call: its output
///                    JSON), owned by the caller (`waitfor_string_free`);
///                    NULL when the status is not `WAITFOR_OK`.
/// @return `WAITFOR_OK`; `WAITFOR_ERR_TIMEOUT` when the wait is still
///         running (the handle stays usable); `WAITFOR_ERR_RUNTIME` when a
///         tool call ended with a tool error (detail in `error_json`), or at
///         once in a child forked from the process that started the wait,
///         where it never ends;
///         `WAITFOR_ERR_NULL_POINTER`; `WAITFOR_ERR_PANIC`.
///
/// Threads: any thread, several at once.
///
/// # Safety
/// `handle` is NULL or a live handle; `result_json` points to writable
/// storage; `error_json` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_handle_wait(
    handle: *const waitfor_handle,
    timeout_ms: i64,
    result_json: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        let result_json = out_ptr(result_json, "result_json")?;
        // SAFETY: per the contract.
        let handle = unsafe { handle.as_ref() }.ok_or_else(|| FfiError::null("handle"))?;
        if timeout_ms != 0 {
            refuse_in_callback("waitfor_handle_wait")?;
        }
        let here = std::process::id();
        if here != handle.owner {
            return match handle.delivery.now() {
                Some(answer) => deliver(answer, result_json),
                None => Err(FfiError::new(
                    WAITFOR_ERR_RUNTIME,
                    format!(
                        "this wait was started by process {}, and only that process can wait \
                         for it: process {here} is a child forked from it, where the wait \
                         never ends",
                        handle.owner
                    ),
                )),
            };
        }
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        match handle.delivery.get(timeout) {
            Some(answer) => deliver(answer, result_json),
            None => Err(FfiError::new(
                WAITFOR_ERR_TIMEOUT,
                format!("the wait is still running after {timeout_ms} ms"),
            )),
        }
    })
}

fn control(handle: *const waitfor_handle, act: impl FnOnce(&WaitControl)) -> i32 {
    guard_or(crate::status::WAITFOR_ERR_PANIC, || {
        // SAFETY: the caller passes NULL or a live handle.
        match unsafe { handle.as_ref() } {
            Some(handle) => {
                act(&handle.control);
                WAITFOR_OK
            }
            None => WAITFOR_ERR_NULL_POINTER,
        }
    })
}

/// Ends the wait with outcome `cancelled` (for a tool call: the profile's
/// rendering of it). A probe call in flight is abandoned and its ctx
/// reports cancelled. Does nothing once the wait has ended.
///
/// @return `WAITFOR_OK` or `WAITFOR_ERR_NULL_POINTER`.
///
/// Threads: any thread, at any time before `waitfor_handle_free`.
///
/// # Safety
/// `handle` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn waitfor_handle_cancel(handle: *const waitfor_handle) -> i32 {
    control(handle, WaitControl::cancel)
}

/// Asks for a sample now instead of at the next poll (a push signal: a
/// file changed, a pane printed). During a probe call, the next sample
/// starts as soon as it returns. Does nothing once the wait has ended.
///
/// @return `WAITFOR_OK` or `WAITFOR_ERR_NULL_POINTER`.
///
/// Threads: any thread, at any time before `waitfor_handle_free`.
///
/// # Safety
/// `handle` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn waitfor_handle_wake(handle: *const waitfor_handle) -> i32 {
    control(handle, WaitControl::wake)
}

/// Frees a handle; NULL does nothing. Freeing does not cancel a running
/// wait: it runs on, its callbacks are still called and its finalizer
/// still runs once.
///
/// Ownership: takes ownership of `handle`. Threads: any thread, once, with
/// no other call on the handle running.
///
/// # Safety
/// `handle` is NULL or a live handle not freed before.
#[no_mangle]
pub unsafe extern "C" fn waitfor_handle_free(handle: *mut waitfor_handle) {
    guard_or((), || {
        if !handle.is_null() {
            // SAFETY: per the contract: ours, from `Box::into_raw`, once.
            drop(unsafe { Box::from_raw(handle) });
        }
    })
}
