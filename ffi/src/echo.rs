//! Echo recording for tmux panes: a host that types into a pane records
//! the keys here, and every pane wait of this process discounts them.

use crate::guard::{guard, json, text};
use crate::status::{FfiError, WAITFOR_ERR_INVALID_ARGUMENT};
use std::ffi::c_char;

/// Records, now, that this process sent keys to a tmux pane with
/// `send-keys`, so that waits on that pane (the `wait_for_text` profiles)
/// discount the typed input and its echo instead of matching it.
///
/// @param socket_name the tmux socket name (`-L`), or NULL with length 0
///                    for the default socket; borrowed.
/// @param pane_id     the pane's `%N` id; borrowed.
/// @param keys_json   the `send-keys` key arguments as a JSON array of
///                    strings, e.g. `["make test"]`; borrowed.
/// @param literal     the keys were sent with `-l` (each is text); else
///                    each is a tmux key name (`Enter`, `C-c`, `x`).
/// @param enter       an `Enter` followed the keys.
/// @return `WAITFOR_OK`, `WAITFOR_ERR_NULL_POINTER`, `WAITFOR_ERR_INVALID_UTF8`,
///         `WAITFOR_ERR_INVALID_JSON`, `WAITFOR_ERR_INVALID_ARGUMENT` (not a
///         list of strings, or a pane id not of the form `%N`: rule
///         `invalid_pane_id`, as `waitfor_pane_id_parse`) or
///         `WAITFOR_ERR_PANIC`.
///
/// Threads: any; records are process-wide and expire on their own.
///
/// # Safety
/// Each `(ptr, len)` is NULL with length 0 or points to that many readable
/// bytes; `error_json` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_echo_record_send_keys(
    socket_name: *const c_char,
    socket_name_len: usize,
    pane_id: *const c_char,
    pane_id_len: usize,
    keys_json: *const c_char,
    keys_json_len: usize,
    literal: bool,
    enter: bool,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        // SAFETY: per the contract.
        let socket = unsafe { text(socket_name, socket_name_len, "socket_name") }?;
        // SAFETY: as above.
        let pane = unsafe { text(pane_id, pane_id_len, "pane_id") }?;
        // SAFETY: as above.
        let keys = unsafe { json(keys_json, keys_json_len, "keys_json") }?;
        waitfor::parse_pane_id(pane, "pane_id").map_err(|e| FfiError::arguments(&e))?;
        let keys: Vec<&str> = keys
            .as_array()
            .and_then(|list| list.iter().map(|k| k.as_str()).collect::<Option<Vec<_>>>())
            .ok_or_else(|| {
                FfiError::new(
                    WAITFOR_ERR_INVALID_ARGUMENT,
                    "`keys_json` must be a JSON array of strings",
                )
            })?;
        let socket = (!socket.is_empty()).then_some(socket);
        record_send_keys(socket, pane, &keys, literal, enter)
    })
}

#[cfg(unix)]
fn record_send_keys(
    socket: Option<&str>,
    pane: &str,
    keys: &[&str],
    literal: bool,
    enter: bool,
) -> Result<(), FfiError> {
    waitfor::tmux::record_send_keys(socket, pane, keys, literal, enter);
    Ok(())
}

/// Off Unix no pane wait can run, so there is nothing to record for:
/// `WAITFOR_ERR_RUNTIME` with the reason.
#[cfg(not(unix))]
fn record_send_keys(
    _socket: Option<&str>,
    _pane: &str,
    _keys: &[&str],
    _literal: bool,
    _enter: bool,
) -> Result<(), FfiError> {
    Err(FfiError::new(
        crate::status::WAITFOR_ERR_RUNTIME,
        waitfor::tmux::NEEDS_UNIX_HOST,
    ))
}
