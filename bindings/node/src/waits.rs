//! Starting waits, with a JavaScript probe or the spec's built-in one
//! (profile calls: `profiles`); their ends and progress reports go to
//! JavaScript through the bridge as JSON text.

use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use waitfor::grants::Grants;
use waitfor::{Engine, Policy, Spec, SpecError, WaitHandle, WaitOptions, WaitResult};

use crate::bridge::{Bridge, Call, Channel, JsProbe, NativeWait, ToJs, PROGRESS, RESULT};
use crate::errors;

/// The host's limits for one wait (`Policy` in `lib/waitfor.d.ts`).
#[napi(object)]
pub struct NativePolicy {
    pub max_wait_ceiling_ms: Option<f64>,
    pub output_cap_bytes: Option<f64>,
}

/// `value` as a whole number of at least 1; refused naming `field` (its
/// path from the call's arguments) and rule `out_of_range`.
pub fn whole(field: &str, value: f64) -> napi::Result<u64> {
    let whole = value.is_finite()
        && value.fract() == 0.0
        && (1.0..=9.007_199_254_740_991e15).contains(&value);
    whole.then_some(value as u64).ok_or_else(|| {
        let message = format!("{field}: must be a whole number of at least 1, got {value}");
        errors::invalid(field, "out_of_range", message)
    })
}

/// The engine policy, refusing values that are not whole numbers of at least 1.
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

/// Sends `kind` of wait `key` with `body` as JSON text.
pub fn event(channel: &Channel, kind: u32, key: u32, body: &impl serde::Serialize) {
    if let Ok(json) = serde_json::to_string(body) {
        channel.send(ToJs::Event { kind, key, json });
    }
}

impl Bridge {
    /// Starts a wait through `launch` (the engine's `start_with` or
    /// `start_async`); `finish` sends its end.
    pub(crate) fn launch(
        &self,
        call: Arc<Call>,
        options: WaitOptions,
        launch: impl FnOnce(WaitOptions) -> Result<WaitHandle, SpecError>,
        finish: impl FnOnce(&Channel, &WaitResult) + Send + 'static,
    ) -> napi::Result<NativeWait> {
        let (channel, ended) = (self.channel.clone(), call.clone());
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
    /// Starts wait `key` (internal; see `lib/channel.js`): with `jsProbe`,
    /// its probe is the JavaScript function the package keeps for `key`,
    /// otherwise the spec's built-in probe. Its end comes as a `RESULT`,
    /// its reports (with `progress`) as `PROGRESS`.
    #[napi]
    pub fn start_wait(
        &self,
        key: u32,
        spec: String,
        js_probe: bool,
        progress: bool,
        policy: Option<NativePolicy>,
        grants: Option<String>,
    ) -> napi::Result<NativeWait> {
        let spec = Spec::from_json(&spec).map_err(|e| errors::spec(&e))?;
        let policy = self::policy(policy)?.grants(self::grants(grants.as_deref())?);
        let mut options = WaitOptions::default().policy(policy);
        if progress {
            let channel = self.channel.clone();
            options = options.on_progress(move |p| event(&channel, PROGRESS, key, p));
        }
        let call = Arc::new(Call::default());
        let probe = js_probe.then(|| JsProbe {
            key,
            call: call.clone(),
            channel: self.channel.clone(),
        });
        self.launch(
            call,
            options,
            |options| match probe {
                Some(probe) => Engine::global().start_async(spec, probe, options),
                None => Engine::global().start_with(spec, None, options),
            },
            move |channel, result| event(channel, RESULT, key, result),
        )
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
pub fn schemas() -> Vec<String> {
    vec![
        waitfor::SPEC_SCHEMA.to_string(),
        waitfor::RESULT_SCHEMA.to_string(),
    ]
}
