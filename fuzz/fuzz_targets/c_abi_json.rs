//! The C ABI's entry points that read JSON or text, called as a C host
//! would, with every string they give freed. The first byte picks the
//! door: 0 `waitfor_simulate` with a test vector, 1 `waitfor_duration_parse`,
//! 2 `waitfor_duration_format` (then parsed back), else
//! `waitfor_tool_definitions` and the status names. A call answers with a
//! documented status and, on an error, the error JSON with that status;
//! never a panic.
#![no_main]

use ffi::info::{
    waitfor_duration_format, waitfor_duration_parse, waitfor_simulate, waitfor_status_name,
    waitfor_string_free, waitfor_tool_definitions,
};
use ffi::status::{
    WAITFOR_ERR_INVALID_ARGUMENT, WAITFOR_ERR_INVALID_JSON, WAITFOR_ERR_INVALID_SPEC,
    WAITFOR_ERR_INVALID_UTF8, WAITFOR_OK,
};
use serde_json::Value;
use std::ffi::{c_char, CStr};
use std::ptr;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&door, rest)) = data.split_first() else {
        return;
    };
    match door {
        0 => simulate(rest),
        1 => parse(rest),
        2 => {
            let mut ms = [0u8; 8];
            let n = rest.len().min(8);
            ms[..n].copy_from_slice(&rest[..n]);
            format(u64::from_le_bytes(ms));
        }
        _ => definitions(),
    }
});

/// Takes a string the library gave, and frees it.
fn take(text: *mut c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: the library's own NUL-terminated string, freed once below.
    let owned = unsafe { CStr::from_ptr(text) }
        .to_str()
        .expect("the library gives UTF-8")
        .to_string();
    // SAFETY: as above.
    unsafe { waitfor_string_free(text) };
    Some(owned)
}

/// Checks a call's status and what it gave: on success the answer (which
/// it returns), otherwise no answer and an error JSON with that status.
fn answered(
    status: i32,
    answer: *mut c_char,
    error: *mut c_char,
    allowed: &[i32],
) -> Option<String> {
    let (answer, error) = (take(answer), take(error));
    assert!(
        allowed.contains(&status),
        "status {status}, error {error:?}"
    );
    if status == WAITFOR_OK {
        assert!(error.is_none());
        return Some(answer.unwrap_or_default());
    }
    assert!(answer.is_none());
    let error: Value =
        serde_json::from_str(&error.expect("an error JSON")).expect("the error is JSON");
    assert_eq!(error["status"], status);
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{error}"
    );
    if status == WAITFOR_ERR_INVALID_SPEC {
        assert!(
            error["field"].is_string() && error["rule"].is_string(),
            "{error}"
        );
    }
    None
}

/// A vector as JSON goes in with its paths confined and its scripted
/// output bounded (a step's `fill` repeats a byte that many times: a test
/// helper, not an agent's input); anything else goes in as it is.
fn simulate(bytes: &[u8]) {
    let mut input = bytes.to_vec();
    if let Ok(mut vector) = serde_json::from_slice::<Value>(bytes) {
        if too_much_fill(&vector) {
            return;
        }
        waitfor_fuzz::confine_paths(&mut vector);
        input = vector.to_string().into_bytes();
    }
    let (mut answer, mut error) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: a readable buffer and writable slots.
    let status =
        unsafe { waitfor_simulate(input.as_ptr().cast(), input.len(), &mut answer, &mut error) };
    let allowed = [
        WAITFOR_OK,
        WAITFOR_ERR_INVALID_JSON,
        WAITFOR_ERR_INVALID_UTF8,
        WAITFOR_ERR_INVALID_SPEC,
    ];
    if let Some(answer) = answered(status, answer, error, &allowed) {
        let answer: Value = serde_json::from_str(&answer).expect("the answer is JSON");
        assert!(
            answer.get("result").is_some() || answer.get("tool_error").is_some(),
            "{answer}"
        );
    }
}

fn too_much_fill(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(k, v)| {
            (k == "fill" && v.as_u64().is_some_and(|n| n > 1 << 16)) || too_much_fill(v)
        }),
        Value::Array(items) => items.iter().any(too_much_fill),
        _ => false,
    }
}

fn parse(text: &[u8]) {
    if let Some(ms) = parse_ms(text) {
        assert_eq!(format(ms), Some(ms), "{:?}", String::from_utf8_lossy(text));
    }
}

/// `waitfor_duration_parse`: the milliseconds, or `None` for a text that
/// is not a duration.
fn parse_ms(text: &[u8]) -> Option<u64> {
    let (mut ms, mut error) = (0u64, ptr::null_mut());
    // SAFETY: a readable buffer and writable slots.
    let status =
        unsafe { waitfor_duration_parse(text.as_ptr().cast(), text.len(), &mut ms, &mut error) };
    let allowed = [
        WAITFOR_OK,
        WAITFOR_ERR_INVALID_ARGUMENT,
        WAITFOR_ERR_INVALID_UTF8,
    ];
    answered(status, ptr::null_mut(), error, &allowed).map(|_| ms)
}

/// Formats `ms`, parses the text back and gives what it read; a count
/// past the exact range is refused, and gives `None`.
fn format(ms: u64) -> Option<u64> {
    let (mut text, mut error) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: writable slots.
    let status = unsafe { waitfor_duration_format(ms, &mut text, &mut error) };
    let exact = ms <= waitfor::duration::MAX_EXACT_MS;
    let allowed = if exact {
        WAITFOR_OK
    } else {
        WAITFOR_ERR_INVALID_ARGUMENT
    };
    let text = answered(status, text, error, &[allowed])?;
    let back = parse_ms(text.as_bytes()).expect("a formatted duration parses");
    assert_eq!(back, ms, "{text:?}");
    Some(back)
}

fn definitions() {
    let (mut defs, mut error) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: writable slots.
    let status = unsafe { waitfor_tool_definitions(&mut defs, &mut error) };
    let defs = answered(status, defs, error, &[WAITFOR_OK]).expect("definitions");
    let defs: Value = serde_json::from_str(&defs).expect("definitions are JSON");
    assert!(defs.as_array().is_some_and(|d| d.len() >= 4));
    for code in -1..12 {
        // SAFETY: a static NUL-terminated string.
        let name = unsafe { CStr::from_ptr(waitfor_status_name(code)) };
        assert!(!name.to_bytes().is_empty());
    }
}
