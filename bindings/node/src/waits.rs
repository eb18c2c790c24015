//! Starting waits, with a JavaScript probe or the spec's built-in one, and
//! profile calls with the host's JavaScript tools; ends and reports go to
//! JavaScript as JSON text, which `JSON.parse` reads faster than napi
//! builds objects.

use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use serde_json::json;
use waitfor::profiles::{self, Host};
use waitfor::{
    Engine, ErrorInfo, Policy, Rule, Spec, SpecError, WaitHandle, WaitOptions, WaitResult,
};

use crate::bridge::{Bridge, Call, Channel, Js, Latest, NativeWait, ToJs, END, PROGRESS};
use crate::errors::{self, arguments};

/// `value`, if given, as a whole number of at least 1, or refused naming `field`.
fn whole(field: &str, value: Option<f64>) -> napi::Result<Option<u64>> {
    let Some(value) = value else { return Ok(None) };
    let message = format!("must be a whole number of at least 1, got {value}");
    (value.fract() == 0.0 && (1.0..=9.007_199_254_740_991e15).contains(&value))
        .then_some(Some(value as u64))
        .ok_or_else(|| arguments(SpecError::new(field, Rule::OutOfRange, message)))
}

/// Sends `kind` (`END`, `PROGRESS`) of wait `key` with `body` as JSON text.
fn event(channel: &Channel, kind: u32, key: u32, body: &impl serde::Serialize) {
    if let Ok(json) = serde_json::to_string(body) {
        channel.send(ToJs::Event(kind, key, json), None);
    }
}

impl Bridge {
    /// The JavaScript side of wait `key`: its probe or host tools.
    fn js(&self, key: u32, call: &Arc<Call>) -> Js {
        let (call, channel) = (call.clone(), self.channel.clone());
        Js { key, call, channel }
    }

    /// Starts a wait through `launch` (the engine's `start_with` or
    /// `start_async`), already `cancelled` if its signal aborted before;
    /// `finish` sends its end.
    fn launch(
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
        let handle = launch(options.on_done(move |result| {
            ended.end();
            finish(&channel, result);
        }))
        .map_err(errors::spec)?;
        let control = handle.control();
        Ok(NativeWait { control, call })
    }
}

#[napi]
impl Bridge {
    /// Starts wait `key` (internal; see `lib/channel.js`) with the
    /// JavaScript probe kept for `key` (`jsProbe`) or the spec's; `ceilingMs`
    /// and `capBytes` are the policy's limits, `grants` JSON text.
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
        let mut policy = Policy::default().grants(errors::grants(grants.as_deref())?);
        let spec = Spec::from_json(&spec).map_err(errors::spec)?;
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

    /// Starts profile call `key` (internal; see `callTool`) with `args`
    /// (JSON text); with `tools`, the host's tools are the function kept
    /// for `key`. Its end is `{"output": ...}` or `{"error": {...}}`; with
    /// `notices`, the profile's notices come before it as reports, and a
    /// refusal's in the thrown error's `notices`.
    #[allow(clippy::too_many_arguments)]
    #[napi]
    pub fn start_tool_call(
        &self,
        key: u32,
        cancelled: bool,
        profile: String,
        args: String,
        tools: bool,
        notices: bool,
        ceiling_ms: Option<f64>,
        grants: Option<String>,
    ) -> napi::Result<NativeWait> {
        let grants = errors::grants(grants.as_deref())?;
        let args = errors::input("arguments", &args)?;
        let ceiling = whole("options.maxWaitCeilingMs", ceiling_ms)?;
        let call = Arc::new(Call::default());
        let host = Host {
            grants,
            max_wait_ceiling: ceiling.map(Duration::from_millis),
            tools: tools.then(|| Arc::new(self.js(key, &call)) as _),
        };
        let prepared = profiles::prepare(&profile, &args, &host)
            .map_err(|e| errors::tool(&e, &profiles::refusal_notices(&profile, &e)))?;
        let (spec, probe, mut options, render, report) = prepared.into_parts();
        let report = notices.then(|| Arc::new(report));
        if let Some(report) = report.clone() {
            let channel = self.channel.clone();
            options = options.on_progress(move |p| {
                for notice in report.progress(p) {
                    event(&channel, PROGRESS, key, &notice.to_json());
                }
            });
        }
        let launch = |options| Engine::global().start_with(spec, Some(probe), options);
        self.launch(call, cancelled, options, launch, move |channel, result| {
            for notice in report.iter().flat_map(|r| r.end(result)) {
                event(channel, PROGRESS, key, &notice.to_json());
            }
            let done = render(result).map(|output| json!({ "output": output }));
            let done = done.unwrap_or_else(|err| {
                // The message names the kind too: "invalid arguments: ...".
                let mut error = ErrorInfo::from(&err).to_json();
                error["message"] = err.to_string().into();
                json!({ "error": error })
            });
            event(channel, END, key, &done);
        })
    }
}
