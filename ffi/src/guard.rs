//! The boundary: every export runs inside [`guard`] (or [`guard_or`]), and
//! reads its inputs and writes its outputs through the helpers here.
//!
//! A panic never crosses into the host: it becomes `WAITFOR_ERR_PANIC`
//! with the panic's message in the error JSON.

use crate::status::{
    FfiError, WAITFOR_ERR_INVALID_UTF8, WAITFOR_ERR_PANIC, WAITFOR_ERR_RUNTIME, WAITFOR_OK,
};
use serde_json::Value;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use waitfor::{ErrorCode, ErrorInfo};

/// What a fallible export body returns.
pub type FfiResult<T> = Result<T, FfiError>;

/// Runs an export's body: `Ok` gives `WAITFOR_OK`; an error or a panic
/// gives its status and, when `error_json` is not NULL, its detail there
/// (owned by the caller, freed with `waitfor_string_free`). `*error_json`
/// is set to NULL first, so it is NULL after every success.
pub fn guard(error_json: *mut *mut c_char, body: impl FnOnce() -> FfiResult<()>) -> i32 {
    if !error_json.is_null() {
        // SAFETY: the caller passes NULL or a pointer to writable storage.
        unsafe { *error_json = ptr::null_mut() };
    }
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|p| Err(panic_error(&*p)));
    match outcome {
        Ok(()) => WAITFOR_OK,
        Err(err) => {
            if !error_json.is_null() {
                let text = CString::new(err.detail.to_string()).unwrap_or_default();
                // SAFETY: as above.
                unsafe { *error_json = text.into_raw() };
            }
            err.status
        }
    }
}

/// Runs an export that has no status to return (a getter, a free): a
/// panic gives `fallback`.
pub fn guard_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

fn panic_error(payload: &(dyn std::any::Any + Send)) -> FfiError {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    FfiError::new(
        WAITFOR_ERR_PANIC,
        format!("panic inside libwaitfor: {message}"),
    )
}

/// Reads `(ptr, len)` as UTF-8 text. NULL is allowed when `len` is 0 (the
/// empty string). The text is borrowed from the caller for the call.
///
/// # Safety
/// `ptr` must be NULL or point to `len` readable bytes.
pub unsafe fn text<'a>(ptr: *const c_char, len: usize, what: &str) -> FfiResult<&'a str> {
    if ptr.is_null() {
        return if len == 0 {
            Ok("")
        } else {
            Err(FfiError::null(what))
        };
    }
    // SAFETY: the caller promises `len` readable bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    std::str::from_utf8(bytes).map_err(|e| {
        FfiError::new(
            WAITFOR_ERR_INVALID_UTF8,
            format!(
                "`{what}` is not valid UTF-8 (bad byte at offset {})",
                e.valid_up_to()
            ),
        )
    })
}

/// Reads `(ptr, len)` as UTF-8 JSON text.
///
/// # Safety
/// As for [`text`].
pub unsafe fn json(ptr: *const c_char, len: usize, what: &str) -> FfiResult<Value> {
    // SAFETY: forwarded from the caller.
    let text = unsafe { text(ptr, len, what) }?;
    waitfor::input::parse(text).map_err(|e| {
        // A wait spec (or a test vector holding one) is the spec language's.
        let code = match what {
            "spec" | "vector" => ErrorCode::InvalidSpec,
            _ => ErrorCode::InvalidArguments,
        };
        // The field is core's: the root, or the string a fault is inside.
        FfiError::info(&ErrorInfo {
            message: format!("`{what}`: {e}"),
            ..ErrorInfo::spec(code, &e)
        })
    })
}

/// Checks an out-parameter before any work is done.
pub fn out<'a, T>(ptr: *mut T, what: &str) -> FfiResult<&'a mut T> {
    // SAFETY: non-NULL out-parameters point to writable storage (the
    // documented contract of every export).
    unsafe { ptr.as_mut() }.ok_or_else(|| FfiError::null(what))
}

/// Checks a pointer out-parameter before any work is done and sets it to
/// NULL, so it is NULL after every failure.
pub fn out_ptr<'a, T>(ptr: *mut *mut T, what: &str) -> FfiResult<&'a mut *mut T> {
    let slot = out(ptr, what)?;
    *slot = ptr::null_mut();
    Ok(slot)
}

/// Gives the host a library-allocated C string (freed with
/// `waitfor_string_free`).
pub fn give(slot: &mut *mut c_char, text: String) -> FfiResult<()> {
    let text = CString::new(text)
        .map_err(|_| FfiError::new(WAITFOR_ERR_RUNTIME, "an output held a NUL byte".to_string()))?;
    *slot = text.into_raw();
    Ok(())
}

/// A `'static` NUL-terminated string for getters that return `const char *`.
pub fn static_c(text: &'static str) -> *const c_char {
    debug_assert!(text.ends_with('\0'));
    text.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{WAITFOR_ERR_NULL_POINTER, WAITFOR_ERR_PANIC};

    #[test]
    fn a_panic_becomes_a_status_with_its_message() {
        let mut err: *mut c_char = ptr::null_mut();
        let status = guard(&mut err, || panic!("boom"));
        assert_eq!(status, WAITFOR_ERR_PANIC);
        let detail = unsafe { CString::from_raw(err) };
        assert!(detail.to_str().unwrap().contains("boom"));
    }

    #[test]
    fn null_is_empty_only_when_len_is_zero() {
        assert_eq!(unsafe { text(ptr::null(), 0, "x") }.unwrap(), "");
        let err = unsafe { text(ptr::null(), 3, "x") }.unwrap_err();
        assert_eq!(err.status, WAITFOR_ERR_NULL_POINTER);
    }

    #[test]
    fn bad_utf8_names_the_offset() {
        let bytes = b"ok\xff";
        let err = unsafe { text(bytes.as_ptr().cast(), 3, "spec") }.unwrap_err();
        assert_eq!(err.status, WAITFOR_ERR_INVALID_UTF8);
        assert!(err.detail["message"].as_str().unwrap().contains("offset 2"));
    }

    /// serde_json refuses a lone surrogate escape as text that is not
    /// JSON; the error names the string it is in, as core says.
    #[test]
    fn a_lone_surrogate_names_its_string() {
        let text = r#"{"until": {"matches": "\ud800"}}"#;
        let err = unsafe { json(text.as_ptr().cast(), text.len(), "spec") }.unwrap_err();
        assert_eq!(err.status, crate::status::WAITFOR_ERR_INVALID_JSON);
        assert_eq!(err.detail["field"], "until.matches");
        assert_eq!(err.detail["rule"], "invalid_json");
        let message = err.detail["message"].as_str().unwrap();
        assert!(
            message.starts_with("`spec`: until.matches: not JSON: "),
            "{message}"
        );
    }
}
