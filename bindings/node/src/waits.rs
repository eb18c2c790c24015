//! Starting waits (on the spec's built-in probe here; JavaScript probes
//! in `batch`, profiles in `profiles`), with results delivered through a
//! threadsafe function called once.

use std::time::Duration;

use napi::bindgen_prelude::{Function, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use serde_json::{json, Value};
use waitfor::{Engine, Policy, Spec, SpecError, WaitControl, WaitHandle, WaitOptions, WaitResult};

use crate::bridge::Dispatch;
use crate::errors;

/// Delivers the end of a wait. Strong (not weak): a pending wait keeps the
/// process alive like a pending timer; it is released once called, so a
/// process with no pending wait exits on its own.
pub type DoneFn = ThreadsafeFunction<Value, Unknown<'static>, Value, Status, false, false>;

/// Delivers progress reports; weak, it never keeps the process alive.
pub type ProgressFn = Dispatch<Value>;

/// The host's limits for one wait, in milliseconds and bytes.
#[napi(object)]
pub struct NativePolicy {
    /// A requested `max_wait_ms` above this is lowered to it (default
    /// 300000).
    pub max_wait_ceiling_ms: Option<f64>,
    /// The output cap for specs that set none (default 262144).
    pub output_cap_bytes: Option<f64>,
}

impl NativePolicy {
    /// The engine policy, refusing values that are not non-negative
    /// integers.
    pub fn apply(&self, mut policy: Policy) -> napi::Result<Policy> {
        if let Some(ms) = self.max_wait_ceiling_ms {
            policy = policy.max_wait_ceiling(Duration::from_millis(whole("maxWaitCeilingMs", ms)?));
        }
        if let Some(bytes) = self.output_cap_bytes {
            let bytes = usize::try_from(whole("outputCapBytes", bytes)?)
                .map_err(|_| errors::other("invalid_arguments", "outputCapBytes: too large"))?;
            policy = policy.output_cap(bytes);
        }
        Ok(policy)
    }
}

/// `value` as a whole number of at least 1.
pub fn whole(field: &str, value: f64) -> napi::Result<u64> {
    if value.is_finite()
        && value >= 1.0
        && value.fract() == 0.0
        && value <= 9.007_199_254_740_991e15
    {
        Ok(value as u64)
    } else {
        Err(errors::other(
            "invalid_arguments",
            format!("{field}: must be a whole number of at least 1, got {value}"),
        ))
    }
}

/// Controls of a running wait (internal; wrapped by the package's
/// `WaitHandle`).
#[napi]
pub struct NativeWait {
    control: WaitControl,
}

#[napi]
impl NativeWait {
    /// Takes a sample now instead of at the next poll.
    #[napi]
    pub fn wake(&self) {
        self.control.wake();
    }

    /// Ends the wait with outcome `cancelled`.
    #[napi]
    pub fn cancel(&self) {
        self.control.cancel();
    }
}

/// Builds a threadsafe function for the end of a wait.
pub fn done_fn(on_done: &Function<'static, Value, Unknown<'static>>) -> napi::Result<DoneFn> {
    on_done
        .build_threadsafe_function()
        .callee_handled::<false>()
        .build()
}

/// Builds the weak threadsafe function for progress reports.
pub fn progress_fn(
    on_progress: Option<&Function<'static, Value, Unknown<'static>>>,
) -> napi::Result<Option<ProgressFn>> {
    on_progress
        .map(|f| {
            f.build_threadsafe_function()
                .weak::<true>()
                .callee_handled::<false>()
                .build()
        })
        .transpose()
}

/// Starts a wait through `launch` (the engine's `start_with` or
/// `start_async`) with the given engine options plus progress reports and
/// a render step for its result, delivering `{result}` or what `finish`
/// makes of it.
pub fn start(
    launch: impl FnOnce(WaitOptions) -> Result<WaitHandle, SpecError>,
    options: WaitOptions,
    on_done: DoneFn,
    on_progress: Option<ProgressFn>,
    finish: impl FnOnce(&WaitResult) -> Value + Send + 'static,
) -> napi::Result<NativeWait> {
    let mut options = options.on_done(move |result| {
        on_done.call(finish(result), ThreadsafeFunctionCallMode::NonBlocking);
    });
    if let Some(progress) = on_progress {
        options = options.on_progress(move |p| {
            let value = serde_json::to_value(p).unwrap_or(Value::Null);
            progress.call(value, ThreadsafeFunctionCallMode::NonBlocking);
        });
    }
    let handle = launch(options).map_err(|e| errors::spec(&e))?;
    Ok(NativeWait {
        control: handle.control(),
    })
}

/// The host's limits from the optional `policy` argument.
pub fn policy(policy: Option<&NativePolicy>) -> napi::Result<Policy> {
    match policy {
        Some(p) => p.apply(Policy::default()),
        None => Ok(Policy::default()),
    }
}

/// Starts a wait on the spec's built-in probe (internal; see the
/// package's `wait` and `start`; JavaScript probes go through
/// `ProbeChannel.start`). `spec` is JSON text; `onDone` gets `{result}`
/// once.
#[napi]
pub fn start_wait(
    spec: String,
    on_done: Function<'static, Value, Unknown<'static>>,
    on_progress: Option<Function<'static, Value, Unknown<'static>>>,
    policy: Option<NativePolicy>,
) -> napi::Result<NativeWait> {
    let spec = Spec::from_json(&spec).map_err(|e| errors::spec(&e))?;
    start(
        |options| Engine::global().start_with(spec, None, options),
        WaitOptions::default().policy(self::policy(policy.as_ref())?),
        done_fn(&on_done)?,
        progress_fn(on_progress.as_ref())?,
        |result| json!({ "result": result.to_json() }),
    )
}

/// Checks a spec without running it (internal; see `checkSpec`).
#[napi]
pub fn check_spec(spec: String) -> napi::Result<()> {
    Spec::from_json(&spec)
        .map(drop)
        .map_err(|e| errors::spec(&e))
}

/// The JSON Schemas of a spec and of a result, as JSON text.
#[napi]
pub fn schemas() -> Vec<String> {
    vec![
        waitfor::SPEC_SCHEMA.to_string(),
        waitfor::RESULT_SCHEMA.to_string(),
    ]
}
