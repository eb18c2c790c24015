//! Core's shared surface (see `lib/waitfor.js`): specs and their schemas,
//! profiles, checking a tool call, the shared test vectors, parsing a pane
//! id, recording keys sent to a pane.

use napi_derive::napi;
use serde_json::Value;
use waitfor::profiles::{self, Host};
use waitfor::Spec;

use crate::errors::{self, arguments};

/// Checks a spec without running it (internal; see `checkSpec`).
#[napi]
pub fn check_spec(spec: String) -> napi::Result<()> {
    Spec::from_json(&spec).map(drop).map_err(errors::spec)
}

/// The JSON Schemas of a spec and of a result (JSON text), and what a host
/// tool throws for a tool the server does not have (`UNKNOWN_TOOL`).
#[napi]
pub fn constants() -> Vec<&'static str> {
    vec![
        waitfor::SPEC_SCHEMA,
        waitfor::RESULT_SCHEMA,
        profiles::UNKNOWN_TOOL,
    ]
}

/// Every profile and its MCP tool object: `[{profile, tool}]`.
#[napi]
pub fn profile_definitions() -> Value {
    serde_json::to_value(profiles::definitions()).unwrap_or(Value::Null)
}

/// How many profile calls may be in flight in this process; with `cap` (a
/// whole number, checked in `setMaxToolCalls`; past `usize`, no cap), sets
/// it and gives the cap it replaces.
#[napi]
pub fn max_tool_calls(cap: Option<f64>) -> f64 {
    cap.map_or_else(profiles::max_calls, |cap| {
        profiles::set_max_calls(cap as usize)
    }) as f64
}

/// `{profile, tool}` by profile id or unique tool name.
#[napi]
pub fn find_profile(name: String) -> napi::Result<Value> {
    let def = profiles::find(&name).map_err(|e| errors::tool(&e, &[]))?;
    Ok(serde_json::to_value(def).unwrap_or(Value::Null))
}

/// The profile id of a tool call that would be accepted (`args`, `grants`: JSON text).
#[napi]
pub fn check_arguments(name: String, args: String, grants: Option<String>) -> napi::Result<String> {
    let grants = errors::grants(grants.as_deref())?;
    let args = errors::input("arguments", &args)?;
    let host = Host {
        grants,
        ..Host::default()
    };
    profiles::check(&name, &args, &host)
        .map(str::to_string)
        .map_err(|e| errors::tool(&e, &[]))
}

/// Runs one shared test vector (`tests/vectors/*.json`) on virtual time.
#[napi]
pub fn simulate(vector: String) -> napi::Result<Value> {
    let vector = errors::input("vector", &vector)?;
    waitfor::vectors::run(&vector).map_err(errors::spec)
}

/// The number of a `%N` pane id.
#[napi]
pub fn parse_pane_id(pane_id: String) -> napi::Result<u32> {
    waitfor::tmux::parse_pane_id(&pane_id, "pane_id").map_err(arguments)
}

/// Records keys this process sent to a pane in core's registry, so pane
/// waits discount their echo; refused as every door refuses it (core's
/// `Grants::check_send_keys`).
#[napi]
pub fn record_send_keys(
    socket_name: Option<String>,
    pane_id: String,
    keys: Vec<String>,
    literal: bool,
    enter: bool,
    grants: Option<String>,
) -> napi::Result<()> {
    errors::grants(grants.as_deref())?
        .check_send_keys(socket_name.as_deref(), &pane_id, ["socketName", "paneId"])
        .map_err(arguments)?;
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    waitfor::tmux::record_send_keys(socket_name.as_deref(), &pane_id, &keys, literal, enter);
    Ok(())
}
