//! Starting waits, with a JavaScript probe or the spec's built-in one
//! (profile calls: `profiles`); ends and reports go to JavaScript as JSON.

use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use waitfor::grants::Grants;
use waitfor::{Engine, Policy, Spec, SpecError, WaitHandle, WaitOptions, WaitResult};

use crate::bridge::{Bridge, Call, Channel, Js, Latest, NativeWait, ToJs, END};
use crate::errors;

/// `value`, if given, as a whole number of at least 1, or refused naming `field`.
pub fn whole(field: &str, value: Option<f64>) -> napi::Result<Option<u64>> {
    let Some(value) = value else { return Ok(None) };
    let message = || format!("{field}: must be a whole number of at least 1, got {value}");
    (value.fract() == 0.0 && (1.0..=9.007_199_254_740_991e15).contains(&value))
        .then_some(Some(value as u64))
        .ok_or_else(|| errors::invalid(field, "out_of_range", message()))
}

/// What built-in probes may reach, from the `grants` option as JSON text; absent: nothing.
pub fn grants(json: Option<&str>) -> napi::Result<Grants> {
    let Some(json) = json else {
        return Ok(Grants::none());
    };
    let value = errors::option("options.grants", json)?;
    Grants::from_json(&value, "options.grants").map_err(|e| errors::spec(&e))
}

/// Sends `kind` (`END`, `PROGRESS`) of wait `key` with `body` as JSON text,
/// which `JSON.parse` reads faster than napi builds objects.
pub fn event(channel: &Channel, kind: u32, key: u32, body: &impl serde::Serialize) {
    if let Ok(json) = serde_json::to_string(body) {
        channel.send(ToJs::Event(kind, key, json), None);
    }
}

impl Bridge {
    /// The JavaScript side of wait `key`'s `call`.
    pub(crate) fn js(&self, key: u32, call: &Arc<Call>) -> Js {
        let (call, channel) = (call.clone(), self.channel.clone());
        Js { key, call, channel }
    }

    /// Starts a wait through `launch` (the engine's `start_with` or
    /// `start_async`), already `cancelled` if its signal aborted before;
    /// `finish` sends its end.
    pub(crate) fn launch(
        &self,
        call: Arc<Call>,
        cancelled: bool,
        options: WaitOptions,
        launch: impl FnOnce(WaitOptions) -> Result<WaitHandle, SpecError>,
        finish: impl FnOnce(&Channel, &WaitResult) + Send + 'static,
    ) -> napi::Result<NativeWait> {
        let (channel, ended) = (self.channel.clone(), call.clone());
        let options = if cancelled {
            options.cancelled()
        } else {
            options
        };
        let options = options.on_done(move |result| {
            ended.end();
            finish(&channel, result);
        });
        let handle = launch(options).map_err(|e| errors::spec(&e))?;
        Ok(NativeWait {
            control: handle.control(),
            call,
        })
    }
}

#[napi]
impl Bridge {
    /// Starts wait `key` (internal; see `lib/channel.js`) with the
    /// JavaScript probe kept for `key` (`jsProbe`) or the spec's; `ceilingMs`
    /// and `capBytes` are the policy's limits.
    #[allow(clippy::too_many_arguments)]
    #[napi]
    pub fn start_wait(
        &self,
        key: u32,
        cancelled: bool,
        spec: String,
        js_probe: bool,
        progress: bool,
        ceiling_ms: Option<f64>,
        cap_bytes: Option<f64>,
        grants: Option<String>,
    ) -> napi::Result<NativeWait> {
        let spec = Spec::from_json(&spec).map_err(|e| errors::spec(&e))?;
        let mut policy = Policy::default().grants(self::grants(grants.as_deref())?);
        if let Some(ms) = whole("options.policy.maxWaitCeilingMs", ceiling_ms)? {
            policy = policy.max_wait_ceiling(Duration::from_millis(ms));
        }
        if let Some(bytes) = whole("options.policy.outputCapBytes", cap_bytes)? {
            policy = policy.output_cap(bytes as usize);
        }
        let mut options = WaitOptions::default().policy(policy);
        if progress {
            let (channel, latest) = (self.channel.clone(), Arc::new(Latest::default()));
            options = options.on_progress(move |p| {
                if let Ok(json) = serde_json::to_string(p) {
                    latest.send(&channel, key, json);
                }
            });
        }
        let call = Arc::new(Call::default());
        let probe = js_probe.then(|| self.js(key, &call));
        let launch = |options| match probe {
            Some(probe) => Engine::global().start_async(spec, probe, options),
            None => Engine::global().start_with(spec, None, options),
        };
        self.launch(call, cancelled, options, launch, move |channel, result| {
            event(channel, END, key, result)
        })
    }
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
pub fn schemas() -> Vec<&'static str> {
    vec![waitfor::SPEC_SCHEMA, waitfor::RESULT_SCHEMA]
}
