//! Starting waits, with a JavaScript probe or the spec's built-in one
//! (profile calls: `profiles`); their ends and progress reports go to
//! JavaScript through their environment's channel.

use std::time::Duration;

use napi_derive::napi;
use waitfor::grants::Grants;
use waitfor::{Engine, Policy, Spec, SpecError, WaitHandle, WaitOptions, WaitResult};

use crate::batch::JsProbe;
use crate::channel::{self, Channel, WaitChannel};
use crate::errors;
use crate::events;

/// The host's limits for one wait (`Policy` in `lib/waitfor.d.ts`).
#[napi(object)]
pub struct NativePolicy {
    pub max_wait_ceiling_ms: Option<f64>,
    pub output_cap_bytes: Option<f64>,
}

/// The engine policy, refusing values that are not whole numbers of at
/// least 1.
fn policy(given: Option<NativePolicy>) -> napi::Result<Policy> {
    let mut policy = Policy::default();
    let Some(given) = given else {
        return Ok(policy);
    };
    if let Some(ms) = given.max_wait_ceiling_ms {
        let ms = whole("options.policy.maxWaitCeilingMs", ms)?;
        policy = policy.max_wait_ceiling(Duration::from_millis(ms));
    }
    if let Some(bytes) = given.output_cap_bytes {
        const FIELD: &str = "options.policy.outputCapBytes";
        let bytes = usize::try_from(whole(FIELD, bytes)?)
            .map_err(|_| errors::invalid(FIELD, "out_of_range", format!("{FIELD}: too large")))?;
        policy = policy.output_cap(bytes);
    }
    Ok(policy)
}

/// `value` as a whole number of at least 1; refused naming `field` (its
/// path from the call's arguments) and rule `out_of_range`.
pub fn whole(field: &str, value: f64) -> napi::Result<u64> {
    whole_from(1.0, value).ok_or_else(|| {
        errors::invalid(
            field,
            "out_of_range",
            format!("{field}: must be a whole number of at least 1, got {value}"),
        )
    })
}

/// `value` as a whole number from `min` up to 2^53 - 1, if it is one.
pub fn whole_from(min: f64, value: f64) -> Option<u64> {
    let whole = value.is_finite() && value.fract() == 0.0;
    (whole && value >= min && value <= 9.007_199_254_740_991e15).then_some(value as u64)
}

/// Starts wait `key` in `slot` of `on`'s environment through `launch`
/// (the engine's `start_with` or `start_async`) and keeps its controls by
/// slot. `finish` queues its end in the channel; with `progress`, its
/// reports are queued as `PROGRESS` events.
pub fn start(
    on: &WaitChannel,
    slot: u32,
    key: u64,
    launch: impl FnOnce(WaitOptions) -> Result<WaitHandle, SpecError>,
    mut options: WaitOptions,
    progress: bool,
    finish: impl FnOnce(&Channel, u32, u64, &WaitResult) + Send + 'static,
) -> napi::Result<()> {
    let channel = on.channel.clone();
    if progress {
        let channel = channel.clone();
        options = options.on_progress(move |p| {
            if let Ok(json) = serde_json::to_string(p) {
                channel.event(slot, key, events::PROGRESS, &json);
            }
        });
    }
    let options = options.on_done(move |result| finish(&channel, slot, key, result));
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

/// Starts wait `key` in `slot` (internal; see `startWait` in
/// `lib/channel.js`): with `jsProbe`, its probe is the JavaScript function
/// the package keeps in that slot, otherwise the spec's built-in probe.
/// The end comes as a `RESULT` event, progress reports (with `progress`)
/// as `PROGRESS` events.
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
    let key = channel::key(key)?;
    let spec = Spec::from_json(&spec).map_err(|e| errors::spec(&e))?;
    let policy = self::policy(policy)?.grants(self::grants(grants.as_deref())?);
    let probe = js_probe.then(|| JsProbe {
        slot,
        key,
        channel: channel.channel.clone(),
    });
    start(
        channel,
        slot,
        key,
        |options| match probe {
            Some(probe) => Engine::global().start_async(spec, probe, options),
            None => Engine::global().start_with(spec, None, options),
        },
        WaitOptions::default().policy(policy),
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
