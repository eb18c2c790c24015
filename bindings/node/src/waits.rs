//! Starting waits, with a JavaScript probe or the spec's built-in one
//! (profiles: `profiles`); their ends and progress reports go to
//! JavaScript through their environment's channel.

use std::time::Duration;

use napi_derive::napi;
use waitfor::grants::Grants;
use waitfor::{Engine, Policy, Spec, SpecError, WaitHandle, WaitOptions, WaitResult};

use crate::batch::JsProbe;
use crate::channel::{self, Channel, WaitChannel};
use crate::errors;
use crate::events;

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

/// Where a wait reports to: its slot and key in its environment's
/// channel.
pub struct Sink<'a> {
    pub on: &'a WaitChannel,
    pub slot: u32,
    pub key: u64,
}

impl<'a> Sink<'a> {
    /// The wait `key` in `slot` of `on`'s environment.
    pub fn new(on: &'a WaitChannel, slot: u32, key: f64) -> napi::Result<Self> {
        Ok(Self {
            on,
            slot,
            key: channel::key(key)?,
        })
    }
}

/// Starts the wait of `sink` through `launch` (the engine's `start_with`
/// or `start_async`) with the given engine options, and keeps its
/// controls by slot. `finish` queues its end in the channel for
/// JavaScript; with `progress`, its reports are queued as `PROGRESS`
/// events.
pub fn start(
    sink: Sink<'_>,
    launch: impl FnOnce(WaitOptions) -> Result<WaitHandle, SpecError>,
    options: WaitOptions,
    progress: bool,
    finish: impl FnOnce(&Channel, u32, u64, &WaitResult) + Send + 'static,
) -> napi::Result<()> {
    let Sink { on, slot, key } = sink;
    let channel = on.channel.clone();
    let mut options = options;
    if progress {
        let channel = channel.clone();
        options = options.on_progress(move |p| {
            if let Ok(json) = serde_json::to_string(p) {
                channel.event(slot, key, events::PROGRESS, &json);
            }
        });
    }
    // Both callbacks only append to the channel's buffer: the engine may
    // call them on its scheduler thread, sparing a hand-over per wait.
    let options = options
        .quick_callbacks(true)
        .on_done(move |result| finish(&channel, slot, key, result));
    let handle = launch(options).map_err(|e| errors::spec(&e))?;
    on.control(slot, handle.control());
    Ok(())
}

/// What built-in probes may reach, from the package's `grants` option as
/// JSON text (`{"commands", "file_roots", "tmux_socket_paths"}`); absent:
/// nothing.
pub fn grants(json: Option<&str>) -> napi::Result<Grants> {
    let Some(json) = json else {
        return Ok(Grants::none());
    };
    let value = errors::input("options.grants", json)?;
    Grants::from_json(&value, "options.grants").map_err(|e| errors::spec(&e))
}

/// The host's limits from the optional `policy` argument.
pub fn policy(policy: Option<&NativePolicy>) -> napi::Result<Policy> {
    match policy {
        Some(p) => p.apply(Policy::default()),
        None => Ok(Policy::default()),
    }
}

/// Starts wait `key` in `slot` of `channel`'s environment (internal; see
/// the package's `wait` and `start`): with `jsProbe`, its probe is the
/// JavaScript function the package keeps in that slot (its own while the
/// wait runs), otherwise the spec's built-in probe. `spec` is JSON text;
/// the end comes as a `RESULT` event, progress reports (with `progress`)
/// as `PROGRESS` events. `grants` (JSON text) bounds the built-in probe.
#[allow(clippy::too_many_arguments)]
#[napi]
pub fn start_wait(
    channel: &WaitChannel,
    slot: u32,
    key: f64,
    spec: String,
    js_probe: bool,
    progress: bool,
    policy: Option<NativePolicy>,
    grants: Option<String>,
) -> napi::Result<()> {
    let sink = Sink::new(channel, slot, key)?;
    let spec = Spec::from_json(&spec).map_err(|e| errors::spec(&e))?;
    let policy = self::policy(policy.as_ref())?.grants(self::grants(grants.as_deref())?);
    let options = WaitOptions::default().policy(policy);
    let probe = js_probe.then(|| JsProbe {
        slot,
        key: sink.key,
        channel: channel.channel.clone(),
    });
    start(
        sink,
        |options| match probe {
            Some(probe) => Engine::global().start_async(spec, probe, options),
            None => Engine::global().start_with(spec, None, options),
        },
        options,
        progress,
        |channel, slot, key, result| channel.result(slot, key, result),
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
