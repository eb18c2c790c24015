//! Seed profiles: every profile's MCP tool definition, calls to them with
//! the host's JavaScript tools, and the shared test vectors.

use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use serde_json::{json, Value};
use waitfor::profiles::{self, Host, ToolCaller};
use waitfor::{Engine, ErrorInfo, WaitOptions};

use crate::bridge::{Bridge, Call, JsTools, NativeWait, DONE, PROGRESS};
use crate::errors;
use crate::waits::{event, grants, whole};

/// Every profile and its MCP tool object: `[{profile, tool}]`.
#[napi]
pub fn profile_definitions() -> Value {
    serde_json::to_value(profiles::definitions()).unwrap_or(Value::Null)
}

#[napi]
impl Bridge {
    /// Starts profile call `key` (internal; see the package's `callTool`)
    /// with `args` (JSON text). With `tools`, the host's tools are the
    /// function the package keeps for `key`; without, the built-in
    /// `run_command` and `read_file` reach as far as `grants` (JSON text)
    /// do. The end comes as a `DONE` whose body is `{"output": ...}` or
    /// `{"error": {code, message, ...}}`; with `notices`, the profile's
    /// notices (`{"kind": "progress" | "log", ...}`) come before it as
    /// `PROGRESS`, and a refusal's in the thrown error's `notices`.
    #[allow(clippy::too_many_arguments)]
    #[napi]
    pub fn start_tool_call(
        &self,
        key: u32,
        profile: String,
        args: String,
        tools: bool,
        notices: bool,
        max_wait_ceiling_ms: Option<f64>,
        grants: Option<String>,
    ) -> napi::Result<NativeWait> {
        let args = errors::input("arguments", &args)?;
        let mut host = Host {
            grants: self::grants(grants.as_deref())?,
            ..Host::default()
        };
        if let Some(ms) = max_wait_ceiling_ms {
            host.max_wait_ceiling = Some(Duration::from_millis(whole(
                "options.maxWaitCeilingMs",
                ms,
            )?));
        }
        if tools {
            let tools: Arc<dyn ToolCaller> = Arc::new(JsTools {
                key,
                channel: self.channel.clone(),
            });
            host.tools = Some(tools);
        }
        let prepared = profiles::prepare(&profile, &args, &host)
            .map_err(|e| errors::tool(&e, &profiles::refusal_notices(&profile, &e)))?;
        let render = prepared.render;
        let report = notices.then(|| Arc::new(prepared.report));
        let mut options = WaitOptions::default().policy(prepared.policy);
        if let Some(report) = report.clone() {
            let channel = self.channel.clone();
            options = options.on_progress(move |p| {
                for notice in report.progress(p) {
                    event(&channel, PROGRESS, key, &notice.to_json());
                }
            });
        }
        self.launch(
            Arc::new(Call::default()),
            options,
            |options| Engine::global().start_with(prepared.spec, Some(prepared.probe), options),
            move |channel, result| {
                for notice in report.iter().flat_map(|r| r.end(result)) {
                    event(channel, PROGRESS, key, &notice.to_json());
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
                event(channel, DONE, key, &done);
            },
        )
    }
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
