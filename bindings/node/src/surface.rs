//! Core's shared surface for the package (internal; see `lib/surface.js`):
//! finding a profile, checking a tool call without running it, parsing a
//! pane id.

use napi_derive::napi;
use serde_json::Value;
use waitfor::profiles::{self, Host};

use crate::errors;

/// `{profile, tool}` by profile id or unique tool name.
#[napi]
pub fn find_profile(name: String) -> napi::Result<Value> {
    let def = profiles::find(&name).map_err(|e| errors::tool(&e, &[]))?;
    serde_json::to_value(def).map_err(|e| errors::other("internal", e))
}

/// The profile id of a tool call that would be accepted; `args` and
/// `grants` are JSON text.
#[napi]
pub fn check_arguments(name: String, args: String, grants: Option<String>) -> napi::Result<String> {
    let args = errors::input("arguments", &args)?;
    let host = Host {
        grants: crate::waits::grants(grants.as_deref())?,
        ..Host::default()
    };
    profiles::check(&name, &args, &host)
        .map(str::to_string)
        .map_err(|e| errors::tool(&e, &[]))
}

/// The number of a `%N` pane id.
#[napi]
pub fn parse_pane_id(pane_id: String) -> napi::Result<u32> {
    waitfor::parse_pane_id(&pane_id, "pane_id").map_err(|e| errors::arguments(&e))
}
