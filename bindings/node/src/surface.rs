//! Core's shared surface (see `lib/waitfor.js`): finding a profile,
//! checking a tool call or grants, parsing a pane id, recording keys sent
//! to a pane.

use napi_derive::napi;
use serde_json::Value;
use waitfor::grants::Grants;
use waitfor::profiles::{self, Host};

use crate::errors;
use crate::waits::grants;

/// `{profile, tool}` by profile id or unique tool name.
#[napi]
pub fn find_profile(name: String) -> napi::Result<Value> {
    let def = profiles::find(&name).map_err(|e| errors::tool(&e, &[]))?;
    serde_json::to_value(def).map_err(|e| errors::other("internal", e))
}

/// The profile id of a tool call that would be accepted (`args`, `grants`: JSON text).
#[napi]
pub fn check_arguments(name: String, args: String, grants: Option<String>) -> napi::Result<String> {
    let args = errors::input("arguments", &args)?;
    let host = Host {
        grants: self::grants(grants.as_deref())?,
        ..Host::default()
    };
    profiles::check(&name, &args, &host)
        .map(str::to_string)
        .map_err(|e| errors::tool(&e, &[]))
}

/// The `grants` option (JSON text, camelCase) checked by core's rules, as
/// the JSON text the engine reads.
#[napi]
pub fn grants_json(grants: String) -> napi::Result<String> {
    let value = errors::option("options.grants", &grants)?;
    let grants = Grants::from_json_named(&value, "options.grants", Grants::CAMEL_CASE)
        .map_err(|e| errors::arguments(&e))?;
    Ok(grants.to_json().to_string())
}

/// The number of a `%N` pane id.
#[napi]
pub fn parse_pane_id(pane_id: String) -> napi::Result<u32> {
    waitfor::tmux::parse_pane_id(&pane_id, "pane_id").map_err(|e| errors::arguments(&e))
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
    self::grants(grants.as_deref())?
        .check_send_keys(socket_name.as_deref(), &pane_id, ["socketName", "paneId"])
        .map_err(|e| errors::arguments(&e))?;
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    waitfor::tmux::record_send_keys(socket_name.as_deref(), &pane_id, &keys, literal, enter);
    Ok(())
}
