//! Starting waits: the engine's `start_with`, with a JavaScript probe or
//! the spec's built-in one, and results delivered through a threadsafe
//! function called once.

use std::time::Duration;

use napi::bindgen_prelude::{FnArgs, Function, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use serde_json::{json, Value};
use waitfor::{Engine, Policy, Probe, Spec, WaitControl, WaitOptions, WaitResult};

use crate::bridge::{Dispatch, JsProbe};
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

/// Starts a wait with the given engine options plus progress reports and
/// a render step for its result, delivering `{result}` or what `finish`
/// makes of it.
pub fn start(
    spec: Spec,
    probe: Option<Box<dyn Probe>>,
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
    let handle = Engine::global()
        .start_with(spec, probe, options)
        .map_err(|e| errors::spec(&e))?;
    Ok(NativeWait {
        control: handle.control(),
    })
}

/// Starts a wait (internal; see the package's `wait` and `start`).
/// `spec` is JSON text; `probe` is the package's dispatcher for a
/// JavaScript probe, absent for the spec's built-in probe; `onDone` gets
/// `{result}` once.
// The callback's type is spelled out so napi writes its TypeScript signature.
#[allow(clippy::type_complexity)]
#[napi]
pub fn start_wait(
    spec: String,
    probe: Option<Function<'static, FnArgs<(u32, u32, f64, f64)>, Unknown<'static>>>,
    on_done: Function<'static, Value, Unknown<'static>>,
    on_progress: Option<Function<'static, Value, Unknown<'static>>>,
    policy: Option<NativePolicy>,
) -> napi::Result<NativeWait> {
    let spec = Spec::from_json(&spec).map_err(|e| errors::spec(&e))?;
    let policy = match &policy {
        Some(p) => p.apply(Policy::default())?,
        None => Policy::default(),
    };
    let probe: Option<Box<dyn Probe>> = match probe {
        Some(f) => Some(Box::new(JsProbe {
            dispatch: f
                .build_threadsafe_function()
                .weak::<true>()
                .callee_handled::<false>()
                .build()?,
        })),
        None => None,
    };
    start(
        spec,
        probe,
        WaitOptions::default().policy(policy),
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
