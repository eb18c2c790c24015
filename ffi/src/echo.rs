//! Echo recording for tmux panes: a host that types into a pane records
//! the keys here, and every pane wait of this process discounts them.

use crate::guard::{guard, json, text};
use crate::host::HostOptions;
use crate::status::{FfiError, WAITFOR_ERR_INVALID_ARGUMENT};
use std::ffi::c_char;
use std::ptr;

/// Records, now, that this process sent keys to a tmux pane with
/// `send-keys`, so that waits on that pane (the `wait_for_text` profiles)
/// discount the typed input and its echo instead of matching it. Grants
/// nothing: `socket_name` must be a plain name (see
/// `waitfor_echo_record_send_keys_with_host` for a host that allows
/// socket paths).
///
/// @param socket_name the tmux socket name (`-L`), or NULL with length 0
///                    for the default socket; borrowed. A path (a `/` or
///                    `\` in it, or `.` or `..`: rule `not_granted`), a NUL
///                    byte (rule `contains_nul`) or more than 103 bytes
///                    (rule `out_of_range`) is refused, as the
///                    `wait_for_text` profiles and the bindings'
///                    `record_send_keys` refuse it.
/// @param pane_id     the pane's `%N` id; borrowed.
/// @param keys_json   the `send-keys` key arguments as a JSON array of
///                    strings, e.g. `["make test"]`; borrowed.
/// @param literal     the keys were sent with `-l` (each is text); else
///                    each is a tmux key name (`Enter`, `C-c`, `x`).
/// @param enter       an `Enter` followed the keys.
/// @param error_json  NULL, or receives the error JSON on failure (owned by
///                    the caller, `waitfor_string_free`); NULL on success.
///                    For `WAITFOR_ERR_INVALID_ARGUMENT` it names `field`
///                    (`socket_name`, `pane_id`) and `rule` when there is one.
/// @return `WAITFOR_OK`, `WAITFOR_ERR_NULL_POINTER`, `WAITFOR_ERR_INVALID_UTF8`,
///         `WAITFOR_ERR_INVALID_JSON`, `WAITFOR_ERR_INVALID_ARGUMENT` (a
///         socket name refused as above, not a list of strings, or a pane
///         id not of the form `%N`: rule `invalid_pane_id`, as
///         `waitfor_pane_id_parse`), `WAITFOR_ERR_RUNTIME` (off Unix, where
///         no pane wait runs) or `WAITFOR_ERR_PANIC`. Nothing is recorded
///         unless it returns `WAITFOR_OK`.
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
    // SAFETY: forwarded from this function's contract; no host options.
    unsafe {
        waitfor_echo_record_send_keys_with_host(
            socket_name,
            socket_name_len,
            pane_id,
            pane_id_len,
            keys_json,
            keys_json_len,
            literal,
            enter,
            ptr::null(),
            0,
            error_json,
        )
    }
}

/// Records keys this process sent to a tmux pane, as
/// `waitfor_echo_record_send_keys` does, with the host's options: a
/// `socket_name` may be a path (`tmux -S`) when their grants allow
/// `tmux_socket_paths`.
///
/// @param host        NULL (with `host_len` 0: nothing granted, as
///                    `waitfor_echo_record_send_keys`) or the host's options
///                    JSON (see `waitfor_wait_with_host`), borrowed for the
///                    call; only its `grants` (`tmux_socket_paths`) matter
///                    here. A path is still refused when it is longer than
///                    103 bytes or holds a NUL byte.
/// @return as for `waitfor_echo_record_send_keys`;
///         `WAITFOR_ERR_INVALID_JSON` or `WAITFOR_ERR_INVALID_ARGUMENT`
///         also when `host` is not JSON or breaks its schema (the error
///         JSON names its `field`, e.g. `host.grants.tmux_socket_paths`).
///
/// Threads: any; records are process-wide and expire on their own.
///
/// # Safety
/// As for `waitfor_echo_record_send_keys`; `host` is NULL (with `host_len`
/// 0) or points to `host_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn waitfor_echo_record_send_keys_with_host(
    socket_name: *const c_char,
    socket_name_len: usize,
    pane_id: *const c_char,
    pane_id_len: usize,
    keys_json: *const c_char,
    keys_json_len: usize,
    literal: bool,
    enter: bool,
    host: *const c_char,
    host_len: usize,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        // SAFETY: per the contract.
        let socket = unsafe { text(socket_name, socket_name_len, "socket_name") }?;
        // SAFETY: as above.
        let pane = unsafe { text(pane_id, pane_id_len, "pane_id") }?;
        // SAFETY: as above.
        let keys = unsafe { json(keys_json, keys_json_len, "keys_json") }?;
        // SAFETY: as above.
        let host = unsafe { HostOptions::parse(host, host_len) }?;
        // Empty (NULL with length 0) is the default socket, as everywhere.
        host.grants
            .check_send_keys(Some(socket), pane, ["socket_name", "pane_id"])
            .map_err(|e| FfiError::arguments(&e))?;
        let keys: Vec<&str> = keys
            .as_array()
            .and_then(|list| list.iter().map(|k| k.as_str()).collect::<Option<Vec<_>>>())
            .ok_or_else(|| {
                FfiError::new(
                    WAITFOR_ERR_INVALID_ARGUMENT,
                    "`keys_json` must be a JSON array of strings",
                )
            })?;
        record_send_keys(socket, pane, &keys, literal, enter)
    })
}

#[cfg(unix)]
fn record_send_keys(
    socket: &str,
    pane: &str,
    keys: &[&str],
    literal: bool,
    enter: bool,
) -> Result<(), FfiError> {
    waitfor::tmux::record_send_keys(Some(socket), pane, keys, literal, enter);
    Ok(())
}

/// Off Unix no pane wait can run, so there is nothing to record for:
/// `WAITFOR_ERR_RUNTIME` with the reason.
#[cfg(not(unix))]
fn record_send_keys(
    _socket: &str,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{WAITFOR_ERR_INVALID_JSON, WAITFOR_OK};
    use serde_json::Value;
    use std::ffi::CStr;

    /// Records `%7` typing `x` on `socket` under `host` (NULL for none):
    /// the status and the error JSON, `Null` on success.
    fn record(socket: &str, host: Option<&str>) -> (i32, Value) {
        let (pane, keys) = ("%7", r#"["x"]"#);
        let mut error: *mut c_char = ptr::null_mut();
        // SAFETY: every `(ptr, len)` is a live Rust string; `error` is
        // writable.
        let status = unsafe {
            waitfor_echo_record_send_keys_with_host(
                socket.as_ptr().cast(),
                socket.len(),
                pane.as_ptr().cast(),
                pane.len(),
                keys.as_ptr().cast(),
                keys.len(),
                true,
                false,
                host.map_or(ptr::null(), |h| h.as_ptr().cast()),
                host.map_or(0, str::len),
                &mut error,
            )
        };
        if error.is_null() {
            return (status, Value::Null);
        }
        // SAFETY: the library gave a NUL-terminated string it owns.
        let detail = unsafe { CStr::from_ptr(error) }.to_str().unwrap_or("");
        let detail = serde_json::from_str(detail).unwrap_or_default();
        // SAFETY: the library's own allocation, freed once.
        unsafe { crate::info::waitfor_string_free(error) };
        (status, detail)
    }

    #[test]
    fn socket_names_are_names_unless_the_host_allows_paths() {
        let long = "s".repeat(waitfor::limits::MAX_SOCKET_NAME_BYTES + 1);
        for (socket, rule) in [
            ("../x.sock", "not_granted"),
            ("/tmp/x", "not_granted"),
            ("..", "not_granted"),
            ("a\0b", "contains_nul"),
            (long.as_str(), "out_of_range"),
        ] {
            let (status, detail) = record(socket, None);
            assert_eq!(status, WAITFOR_ERR_INVALID_ARGUMENT, "{socket:?}");
            assert_eq!(
                (&detail["field"], &detail["rule"], &detail["code"]),
                (
                    &Value::from("socket_name"),
                    &Value::from(rule),
                    &Value::from("invalid_arguments")
                ),
                "{socket:?}: {detail}"
            );
        }
        assert_eq!(record("ffi-unit-test", None), (WAITFOR_OK, Value::Null));
        assert_eq!(record("", None), (WAITFOR_OK, Value::Null));
        let paths = r#"{"grants": {"tmux_socket_paths": true}}"#;
        assert_eq!(record("/tmp/x", Some(paths)), (WAITFOR_OK, Value::Null));
        // Paths granted or not, no socket is longer than 103 bytes.
        let long_path = format!("/{long}");
        assert_eq!(record(&long_path, Some(paths)).1["rule"], "out_of_range");
        let (status, detail) = record("../x.sock", Some(r#"{"grants": {}}"#));
        assert_eq!(
            (status, &detail["rule"]),
            (WAITFOR_ERR_INVALID_ARGUMENT, &Value::from("not_granted"))
        );
    }

    #[test]
    fn bad_host_options_are_refused_before_anything_is_recorded() {
        let (status, detail) = record("x", Some(r#"{"grants": {"tmux_socket_paths": 1}}"#));
        assert_eq!(status, WAITFOR_ERR_INVALID_ARGUMENT);
        assert_eq!(detail["field"], "host.grants.tmux_socket_paths", "{detail}");
        assert_eq!(
            record("x", Some(r#"{"grant": {}}"#)).1["field"],
            "host.grant"
        );
        assert_eq!(record("x", Some("{")).0, WAITFOR_ERR_INVALID_JSON);
    }
}
