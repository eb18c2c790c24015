//! Everything that is not a wait: versions, status names, strings, schemas,
//! tool definitions, test vectors and durations.

use crate::guard::{give, guard, guard_or, json, out, out_ptr, static_c, text};
use crate::status::{self, FfiError};
use serde_json::Value;
use std::ffi::{c_char, CString};
use std::sync::OnceLock;

/// The ABI version: bumped whenever a change could break a program built
/// against an older `waitfor.h` (a struct's layout, a function's
/// signature, what an existing function does). Adding a function or a
/// status code does not bump it. 2: built-in probes reach only what the
/// host grants (`waitfor_*_with_host`); nothing by default. 3:
/// `waitfor_tool_definitions` gives the tools alone (`waitfor_profiles`
/// gives `{profile, tool}`), and durations stop at 2^53 - 1 ms.
pub const WAITFOR_ABI_VERSION: u32 = 3;

/// The library's version (`"MAJOR.MINOR.PATCH"`).
///
/// Ownership: a static string; do not free it. Threads: any.
#[no_mangle]
pub extern "C" fn waitfor_version() -> *const c_char {
    static_c(concat!(env!("CARGO_PKG_VERSION"), "\0"))
}

/// The ABI version of the loaded library; compare it with
/// `WAITFOR_ABI_VERSION` from the header the program was built with.
///
/// Threads: any.
#[no_mangle]
pub extern "C" fn waitfor_abi_version() -> u32 {
    WAITFOR_ABI_VERSION
}

/// The stable name of a status code (`"ok"`, `"invalid_json"`, ...), or
/// `"unknown"`.
///
/// Ownership: a static string; do not free it. Threads: any.
#[no_mangle]
pub extern "C" fn waitfor_status_name(status: i32) -> *const c_char {
    status::c_name(status)
}

/// Sets how many profile calls (`waitfor_call_tool*`, `waitfor_tool_start*`)
/// may be in flight in this process at once, 1,024 by default, and returns
/// the cap it replaces. A call over the cap fails at once with
/// `WAITFOR_ERR_TOO_MANY_CALLS` (code `too_many_calls`); the calls running
/// go on, also when the cap is lowered under their number. 0 refuses every
/// call. A call's place comes back when its wait ends, however it ends
/// (result, error, cancel, a failing probe), before the host hears the end.
/// Plain waits (`waitfor_wait`, `waitfor_start`) are not counted.
///
/// Threads: any.
#[no_mangle]
pub extern "C" fn waitfor_set_max_tool_calls(cap: usize) -> usize {
    guard_or(0, || waitfor::profiles::set_max_calls(cap))
}

/// How many profile calls may be in flight in this process at once (see
/// `waitfor_set_max_tool_calls`).
///
/// Threads: any.
#[no_mangle]
pub extern "C" fn waitfor_max_tool_calls() -> usize {
    guard_or(0, waitfor::profiles::max_calls)
}

/// Frees a string the library gave the caller; NULL does nothing. Never
/// pass it a string from anywhere else, and never `free()` the library's
/// strings.
///
/// Ownership: takes ownership of `text`. Threads: any.
///
/// # Safety
/// `text` is NULL or a string from this library, not freed before.
#[no_mangle]
pub unsafe extern "C" fn waitfor_string_free(text: *mut c_char) {
    guard_or((), || {
        if !text.is_null() {
            // SAFETY: per the contract: ours, from `CString::into_raw`, once.
            drop(unsafe { CString::from_raw(text) });
        }
    })
}

fn static_json(cell: &'static OnceLock<CString>, text: &str) -> *const c_char {
    cell.get_or_init(|| CString::new(text).unwrap_or_default())
        .as_ptr()
}

/// The JSON Schema (draft 2020-12) of a wait spec.
///
/// Ownership: a static string; do not free it. Threads: any.
#[no_mangle]
pub extern "C" fn waitfor_spec_schema() -> *const c_char {
    static CELL: OnceLock<CString> = OnceLock::new();
    guard_or(std::ptr::null(), || {
        static_json(&CELL, waitfor::SPEC_SCHEMA)
    })
}

/// The JSON Schema (draft 2020-12) of a wait result.
///
/// Ownership: a static string; do not free it. Threads: any.
#[no_mangle]
pub extern "C" fn waitfor_result_schema() -> *const c_char {
    static CELL: OnceLock<CString> = OnceLock::new();
    guard_or(std::ptr::null(), || {
        static_json(&CELL, waitfor::RESULT_SCHEMA)
    })
}

/// Every profile, as a JSON array of `{"profile": "family/tool", "tool":
/// definition}` (the shape of Python's and Node's `profiles()`).
///
/// @param profiles_json receives the JSON, owned by the caller
///                      (`waitfor_string_free`).
/// @return `WAITFOR_OK`, `WAITFOR_ERR_NULL_POINTER` or `WAITFOR_ERR_PANIC`.
///
/// Threads: any.
///
/// # Safety
/// `profiles_json` points to writable storage; `error_json` is NULL or
/// points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_profiles(
    profiles_json: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        let slot = out_ptr(profiles_json, "profiles_json")?;
        let profiles = waitfor::profiles::definitions()
            .into_iter()
            .map(|def| serde_json::json!({"profile": def.profile, "tool": def.tool}));
        give(slot, Value::Array(profiles.collect()).to_string())
    })
}

/// Every profile's MCP tool definition, in `waitfor_profiles` order, as a
/// JSON array of `{name, title, description, inputSchema, outputSchema,
/// annotations}`, ready to register (the shape of Python's and Node's
/// `tool_definitions()`).
///
/// @param definitions_json receives the JSON, owned by the caller
///                         (`waitfor_string_free`).
/// @return `WAITFOR_OK`, `WAITFOR_ERR_NULL_POINTER` or `WAITFOR_ERR_PANIC`.
///
/// Threads: any.
///
/// # Safety
/// `definitions_json` points to writable storage; `error_json` is NULL or
/// points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_tool_definitions(
    definitions_json: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        let slot = out_ptr(definitions_json, "definitions_json")?;
        let tools = waitfor::profiles::definitions()
            .into_iter()
            .map(|def| def.tool);
        give(slot, Value::Array(tools.collect()).to_string())
    })
}

/// Checks a wait spec without running it: what `waitfor_wait` would
/// refuse, this refuses.
///
/// @return `WAITFOR_OK`, `WAITFOR_ERR_INVALID_SPEC` (the error JSON names
///         `field` and `rule`; `code` is `invalid_spec`),
///         `WAITFOR_ERR_INVALID_JSON`, `WAITFOR_ERR_INVALID_UTF8`,
///         `WAITFOR_ERR_NULL_POINTER` or `WAITFOR_ERR_PANIC`.
///
/// Threads: any.
///
/// # Safety
/// `spec` is NULL (with `spec_len` 0) or points to `spec_len` readable
/// bytes; `error_json` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_check_spec(
    spec: *const c_char,
    spec_len: usize,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        // SAFETY: per the contract.
        let spec = unsafe { json(spec, spec_len, "spec") }?;
        waitfor::Spec::from_value(&spec)?;
        Ok(())
    })
}

/// Checks a profile's tool call without running it, as
/// `waitfor_call_tool_with_host` would before it starts, and gives the
/// profile's id. `profile` is a profile id or a tool name only one profile
/// has.
///
/// @param host       NULL (with `host_len` 0) or the host's options JSON
///                   (`grants` decide what `not_granted` refuses).
/// @param profile_id receives the profile's id (owned by the caller,
///                   `waitfor_string_free`).
/// @return `WAITFOR_OK`, `WAITFOR_ERR_UNKNOWN_PROFILE`,
///         `WAITFOR_ERR_INVALID_SPEC` (code `invalid_arguments`, with
///         `field` and `rule`), `WAITFOR_ERR_INVALID_JSON`,
///         `WAITFOR_ERR_INVALID_ARGUMENT` (bad host options),
///         `WAITFOR_ERR_INVALID_UTF8`, `WAITFOR_ERR_NULL_POINTER` or
///         `WAITFOR_ERR_PANIC`.
///
/// Threads: any.
///
/// # Safety
/// `profile`, `args` and `host` are NULL (with length 0) or point to that
/// many readable bytes; `profile_id` points to writable storage;
/// `error_json` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_tool_check(
    profile: *const c_char,
    profile_len: usize,
    args: *const c_char,
    args_len: usize,
    host: *const c_char,
    host_len: usize,
    profile_id: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        let slot = out_ptr(profile_id, "profile_id")?;
        // SAFETY: per the contract.
        let profile = unsafe { text(profile, profile_len, "profile") }?;
        // SAFETY: as above.
        let args = unsafe { json(args, args_len, "args") }?;
        // SAFETY: as above.
        let options = unsafe { crate::host::HostOptions::parse(host, host_len) }?;
        let host = waitfor::profiles::Host {
            grants: options.grants,
            max_wait_ceiling: options.max_wait_ceiling,
            ..Default::default()
        };
        let id = waitfor::profiles::check(profile, &args, &host).map_err(|e| FfiError::tool(&e))?;
        give(slot, id.to_string())
    })
}

/// A profile by its id (`aura/wait_for`) or by a tool name only one
/// profile has (`wait_for`), as JSON `{"profile", "tool"}` (the shape of
/// `waitfor_profiles`' items).
///
/// @param definition_json receives the JSON (owned by the caller,
///                        `waitfor_string_free`).
/// @return `WAITFOR_OK`, `WAITFOR_ERR_UNKNOWN_PROFILE`,
///         `WAITFOR_ERR_INVALID_UTF8`, `WAITFOR_ERR_NULL_POINTER` or
///         `WAITFOR_ERR_PANIC`.
///
/// Threads: any.
///
/// # Safety
/// `name` is NULL (with `name_len` 0) or points to `name_len` readable
/// bytes; `definition_json` points to writable storage; `error_json` is
/// NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_profile_find(
    name: *const c_char,
    name_len: usize,
    definition_json: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        let slot = out_ptr(definition_json, "definition_json")?;
        // SAFETY: per the contract.
        let name = unsafe { text(name, name_len, "name") }?;
        let def = waitfor::profiles::find(name).map_err(|e| FfiError::tool(&e))?;
        let def = serde_json::to_string(&def)
            .map_err(|e| FfiError::new(status::WAITFOR_ERR_RUNTIME, e.to_string()))?;
        give(slot, def)
    })
}

/// Parses a tmux pane id, `%` then digits (`%12`), into its number.
///
/// @param number receives the number.
/// @return `WAITFOR_OK`, `WAITFOR_ERR_INVALID_ARGUMENT` (code
///         `invalid_arguments`, field `pane_id`, rule `invalid_pane_id`),
///         `WAITFOR_ERR_INVALID_UTF8`, `WAITFOR_ERR_NULL_POINTER` or
///         `WAITFOR_ERR_PANIC`.
///
/// Threads: any.
///
/// # Safety
/// `pane_id` is NULL (with `len` 0) or points to `len` readable bytes;
/// `number` points to writable storage; `error_json` is NULL or points to
/// writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_pane_id_parse(
    pane_id: *const c_char,
    len: usize,
    number: *mut u32,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        let number = out(number, "number")?;
        // SAFETY: per the contract.
        let pane_id = unsafe { text(pane_id, len, "pane_id") }?;
        *number = waitfor::tmux::parse_pane_id(pane_id, "pane_id")
            .map_err(|e| FfiError::arguments(&e))?;
        Ok(())
    })
}

/// Checks an Ouro `wait/1` envelope (`ouro/wait`'s output): its shape, and
/// that a wait that can go on says how to resume and a satisfied one
/// carries its events. Gives `{"ok": bool, "errors": [...]}`, each error
/// starting with its field.
///
/// @param validation_json receives the JSON (owned by the caller,
///                        `waitfor_string_free`).
/// @return `WAITFOR_OK` (also for an invalid envelope: see `ok`),
///         `WAITFOR_ERR_INVALID_JSON`, `WAITFOR_ERR_INVALID_UTF8`,
///         `WAITFOR_ERR_NULL_POINTER` or `WAITFOR_ERR_PANIC`.
///
/// Threads: any.
///
/// # Safety
/// `envelope` is NULL (with `len` 0) or points to `len` readable bytes;
/// `validation_json` points to writable storage; `error_json` is NULL or
/// points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_ouro_validate_wait(
    envelope: *const c_char,
    len: usize,
    validation_json: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        let slot = out_ptr(validation_json, "validation_json")?;
        // SAFETY: per the contract.
        let envelope = unsafe { json(envelope, len, "envelope") }?;
        let validation = serde_json::to_string(&waitfor::ouro::validate_wait(&envelope))
            .map_err(|e| FfiError::new(status::WAITFOR_ERR_RUNTIME, e.to_string()))?;
        give(slot, validation)
    })
}

/// Runs one shared test vector (an object of the `vectors` list in the files of `tests/vectors`) on
/// virtual time, as every binding does, and gives its answer:
/// `{"result", "call_starts_ms", "progress", "output"?, "tool_error"?}`.
///
/// @param answer_json receives the answer (owned by the caller,
///                    `waitfor_string_free`).
/// @return `WAITFOR_OK`, `WAITFOR_ERR_NULL_POINTER`, `WAITFOR_ERR_INVALID_UTF8`,
///         `WAITFOR_ERR_INVALID_JSON`, `WAITFOR_ERR_INVALID_SPEC` or
///         `WAITFOR_ERR_PANIC`.
///
/// Threads: any; runs on the calling thread, takes no real time.
///
/// # Safety
/// `vector` is NULL (with `vector_len` 0) or points to `vector_len`
/// readable bytes; `answer_json` points to writable storage; `error_json`
/// is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_simulate(
    vector: *const c_char,
    vector_len: usize,
    answer_json: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        let slot = out_ptr(answer_json, "answer_json")?;
        // SAFETY: per the contract.
        let vector = unsafe { json(vector, vector_len, "vector") }?;
        give(slot, waitfor::vectors::run(&vector)?.to_string())
    })
}

/// Parses a duration as agents write it (`"90s"`, `"2m"`, `"1h"`,
/// `"500ms"`, or a bare number of seconds) into milliseconds, as every
/// binding does (core's `duration::parse_millis`): at most 2^53 - 1 ms,
/// the longest duration every language holds exactly.
///
/// @param ms receives the milliseconds.
/// @return `WAITFOR_OK`, `WAITFOR_ERR_INVALID_ARGUMENT` (code
///         `invalid_arguments`, field `duration`: rule `wrong_type`, not a
///         duration; `out_of_range`, longer than 2^53 - 1 ms),
///         `WAITFOR_ERR_INVALID_UTF8`, `WAITFOR_ERR_NULL_POINTER` or
///         `WAITFOR_ERR_PANIC`.
///
/// Threads: any.
///
/// # Safety
/// `text` is NULL (with `len` 0) or points to `len` readable bytes; `ms`
/// points to writable storage; `error_json` is NULL or points to writable
/// storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_duration_parse(
    text_ptr: *const c_char,
    len: usize,
    ms: *mut u64,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        let ms = out(ms, "ms")?;
        // SAFETY: per the contract.
        let text = unsafe { text(text_ptr, len, "text") }?;
        *ms = waitfor::duration::parse_millis(text).map_err(|e| FfiError::arguments(&e))?;
        Ok(())
    })
}

/// Writes milliseconds as the shortest exact duration that
/// `waitfor_duration_parse` reads back (`"2m"`, `"90s"`, `"500ms"`).
/// Above 2^53 - 1 ms no language reads the text back exactly: refused as
/// `waitfor_duration_format_number` refuses it.
///
/// @param text receives the text (owned by the caller, `waitfor_string_free`).
/// @return `WAITFOR_OK`, `WAITFOR_ERR_INVALID_ARGUMENT` (`ms` above 2^53 -
///         1: field `duration`, rule `out_of_range`),
///         `WAITFOR_ERR_NULL_POINTER` or `WAITFOR_ERR_PANIC`.
///
/// Threads: any.
///
/// # Safety
/// `text` points to writable storage; `error_json` is NULL or points to
/// writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_duration_format(
    ms: u64,
    text: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        let slot = out_ptr(text, "text")?;
        // Exact up to 2^53 - 1; anything above converts to 2^53 or more,
        // which is refused.
        give(slot, format_number(ms as f64)?)
    })
}

/// Writes a number of milliseconds, as JavaScript and Python hand one
/// over, as the shortest exact duration `waitfor_duration_parse` reads
/// back, by the rule every binding's `formatDuration` follows (core's
/// `duration::format_millis`): a fraction is rounded to the nearest
/// millisecond, a half upwards (`1.5` gives `"2ms"`, `-0.4` gives `"0s"`).
///
/// @param text receives the text (owned by the caller, `waitfor_string_free`).
/// @return `WAITFOR_OK`, `WAITFOR_ERR_INVALID_ARGUMENT` (field `duration`:
///         rule `wrong_type` for NaN, `out_of_range` below 0 once rounded,
///         infinite or above 2^53 - 1), `WAITFOR_ERR_NULL_POINTER` or
///         `WAITFOR_ERR_PANIC`.
///
/// Threads: any.
///
/// # Safety
/// `text` points to writable storage; `error_json` is NULL or points to
/// writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_duration_format_number(
    ms: f64,
    text: *mut *mut c_char,
    error_json: *mut *mut c_char,
) -> i32 {
    guard(error_json, || {
        let slot = out_ptr(text, "text")?;
        give(slot, format_number(ms)?)
    })
}

fn format_number(ms: f64) -> Result<String, FfiError> {
    waitfor::duration::format_millis(ms).map_err(|e| FfiError::arguments(&e))
}

/// Panics inside the library on purpose, so a host's test can check that
/// a panic comes back as `WAITFOR_ERR_PANIC` and leaves the library usable.
/// Nothing else calls it.
///
/// @return `WAITFOR_ERR_PANIC`, with the message in `error_json`.
///
/// Threads: any.
///
/// # Safety
/// `error_json` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn waitfor_selftest_panic(error_json: *mut *mut c_char) -> i32 {
    guard(error_json, || panic!("waitfor_selftest_panic was called"))
}
