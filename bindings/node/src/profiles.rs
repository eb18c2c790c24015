//! Seed profiles: every profile's MCP tool definition, calls to them with
//! the host's JavaScript tools, and the shared test vectors.

use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::{FnArgs, Function, Unknown};
use napi_derive::napi;
use serde_json::{json, Value};
use waitfor::profiles::{self, Host, ToolCaller};
use waitfor::{Engine, ErrorInfo, WaitOptions};

use crate::bridge::{Dispatch, JsTools, ToolReply};
use crate::channel::{self, WaitChannel};
use crate::errors;
use crate::events;
use crate::waits::{start, whole};

/// Every profile and its MCP tool object: `[{profile, tool}]`.
#[napi]
pub fn profile_definitions() -> Value {
    serde_json::to_value(profiles::definitions()).unwrap_or(Value::Null)
}

/// Starts profile call `key` in `slot` of `channel`'s environment
/// (internal; see the package's `callTool`). `args` is JSON text; `tools`
/// is the package's dispatcher for the host's tools (absent: the built-in
/// `run_command` and `read_file`, as far as `grants`, JSON text, reach:
/// nothing by default). The end comes as a `DONE` event whose
/// body is `{"output": ...}` or `{"error": {code, message, ...}}`; with
/// `notices`, the profile's notices come before it as `PROGRESS` events
/// whose body is the notice (`{"kind": "progress" | "log", ...}`), and a
/// refusal's notices in the thrown error's `notices`.
// The callback's type is spelled out so napi writes its TypeScript signature.
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
#[napi]
pub fn start_tool_call(
    channel: &WaitChannel,
    slot: u32,
    key: f64,
    profile: String,
    args: String,
    tools: Option<
        Function<'static, FnArgs<(ToolReply, String, Value, f64, f64)>, Unknown<'static>>,
    >,
    notices: bool,
    max_wait_ceiling_ms: Option<f64>,
    grants: Option<String>,
) -> napi::Result<()> {
    let key = channel::key(key)?;
    let args = errors::input("arguments", &args)?;
    let mut host = Host {
        grants: crate::waits::grants(grants.as_deref())?,
        ..Host::default()
    };
    if let Some(ms) = max_wait_ceiling_ms {
        let ms = whole("options.maxWaitCeilingMs", ms)?;
        host.max_wait_ceiling = Some(Duration::from_millis(ms));
    }
    if let Some(f) = tools {
        let tools: Arc<dyn ToolCaller> = Arc::new(JsTools {
            dispatch: Dispatch::new(&f)?,
        });
        host.tools = Some(tools);
    }
    let prepared = profiles::prepare(&profile, &args, &host).map_err(|e| {
        let sent = profiles::refusal_notices(&profile, &e);
        errors::tool(&e, &sent)
    })?;
    let render = prepared.render;
    let report = notices.then(|| Arc::new(prepared.report));
    let mut options = WaitOptions::default().policy(prepared.policy);
    if let Some(report) = report.clone() {
        let channel = channel.channel.clone();
        options = options.on_progress(move |p| {
            for notice in report.progress(p) {
                channel.event(slot, key, events::PROGRESS, &notice.to_json().to_string());
            }
        });
    }
    start(
        channel,
        slot,
        key,
        |options| Engine::global().start_with(prepared.spec, Some(prepared.probe), options),
        options,
        false,
        move |channel, slot, key, result| {
            for notice in report.iter().flat_map(|r| r.end(result)) {
                channel.event(slot, key, events::PROGRESS, &notice.to_json().to_string());
            }
            let done = match render(result) {
                Ok(output) => json!({ "output": output }),
                Err(err) => {
                    // The message names the kind too: "invalid arguments: ...".
                    let mut error = ErrorInfo::from(&err).to_json();
                    error["message"] = err.to_string().into();
                    json!({ "error": error })
                }
            };
            channel.event(slot, key, events::DONE, &done.to_string());
        },
    )
}

/// Runs one shared test vector (`tests/vectors/*.json`) on virtual time;
/// the answer has `result`, `call_starts_ms`, `progress`, and `output` or
/// `tool_error` for profile vectors.
#[napi]
pub fn simulate(vector: String) -> napi::Result<Value> {
    let vector = errors::input("vector", &vector)?;
    waitfor::vectors::run(&vector).map_err(|e| errors::spec(&e))
}

/// What a host tool throws (as an Error's message) for a tool the server
/// does not have (see the package's `UNKNOWN_TOOL`).
#[napi]
pub fn unknown_tool() -> &'static str {
    profiles::UNKNOWN_TOOL
}
