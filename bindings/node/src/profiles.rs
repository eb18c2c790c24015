//! Seed profiles: their MCP tool definitions, calls to them with the
//! host's JavaScript tools, and the shared test vectors.

use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use serde_json::{json, Value};
use waitfor::profiles::{self, Host};
use waitfor::{Engine, ErrorInfo, WaitOptions};

use crate::bridge::{Bridge, Call, NativeWait, END, PROGRESS};
use crate::errors;
use crate::waits::{event, grants, whole};

/// Every profile and its MCP tool object: `[{profile, tool}]`.
#[napi]
pub fn profile_definitions() -> Value {
    serde_json::to_value(profiles::definitions()).unwrap_or(Value::Null)
}

#[napi]
impl Bridge {
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
        let args = errors::input("arguments", &args)?;
        let mut host = Host {
            grants: self::grants(grants.as_deref())?,
            ..Host::default()
        };
        let ceiling = whole("options.maxWaitCeilingMs", ceiling_ms)?;
        host.max_wait_ceiling = ceiling.map(Duration::from_millis);
        let call = Arc::new(Call::default());
        if tools {
            host.tools = Some(Arc::new(self.js(key, &call)));
        }
        let prepared = profiles::prepare(&profile, &args, &host)
            .map_err(|e| errors::tool(&e, &profiles::refusal_notices(&profile, &e)))?;
        let (render, report) = (prepared.render, notices.then(|| Arc::new(prepared.report)));
        let mut options = WaitOptions::default().policy(prepared.policy);
        if let Some(report) = report.clone() {
            let channel = self.channel.clone();
            options = options.on_progress(move |p| {
                report
                    .progress(p)
                    .iter()
                    .for_each(|n| event(&channel, PROGRESS, key, &n.to_json()));
            });
        }
        let launch =
            |options| Engine::global().start_with(prepared.spec, Some(prepared.probe), options);
        self.launch(call, cancelled, options, launch, move |channel, result| {
            for notice in report.iter().flat_map(|r| r.end(result)) {
                event(channel, PROGRESS, key, &notice.to_json());
            }
            let done = render(result)
                .map(|output| json!({ "output": output }))
                .unwrap_or_else(|err| {
                    // The message names the kind too: "invalid arguments: ...".
                    let mut error = ErrorInfo::from(&err).to_json();
                    error["message"] = err.to_string().into();
                    json!({ "error": error })
                });
            event(channel, END, key, &done);
        })
    }
}

/// Runs one shared test vector (`tests/vectors/*.json`) on virtual time.
#[napi]
pub fn simulate(vector: String) -> napi::Result<Value> {
    let vector = errors::input("vector", &vector)?;
    waitfor::vectors::run(&vector).map_err(|e| errors::spec(&e))
}

/// What a host tool throws for a tool the server does not have (`UNKNOWN_TOOL`).
#[napi]
pub fn unknown_tool() -> &'static str {
    profiles::UNKNOWN_TOOL
}
