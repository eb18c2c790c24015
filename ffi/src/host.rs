//! What a C host lends its waits: grants for the built-in probes (the
//! `host` options JSON), its own tools for `aura/wait_for` (a tool-caller
//! callback with a finalizer that runs exactly once) and, for a tool call,
//! where the profile's progress and log notices go.

use crate::callbacks::{observe, waitfor_finalize_fn, waitfor_observation, waitfor_probe_ctx};
use crate::guard::json;
use crate::status::{FfiError, WAITFOR_ERR_INVALID_ARGUMENT};
use serde_json::Value;
use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::Duration;
use waitfor::grants::Grants;
use waitfor::profiles::{Notice, ToolCaller};
use waitfor::{ProbeContext, ProbeError, SpecError};

/// Calls one of the host's own tools for a `wait_for` probe: `name` is the
/// tool's name and `args_json` its arguments object as JSON, both UTF-8,
/// NUL-terminated, `*_len` bytes without the NUL, borrowed for the call
/// only. Fill `out` with the `waitfor_observation_set_*` writers (the
/// tool's text output with `waitfor_observation_set_text`) and return 0;
/// any other return value, or `waitfor_observation_set_error`, makes the
/// call a probe error. For a tool the host does not have, set the error
/// "tool is not exposed by any connected MCP server": `aura/wait_for` then
/// fails as AURA does ("probe tool 'NAME' is not exposed by any connected
/// MCP server").
///
/// Called on a library worker thread, one call at a time per wait, never
/// after the wait has returned, never under an internal lock; a call still
/// running at the deadline is abandoned and `waitfor_probe_ctx_cancelled(ctx)`
/// turns true. A C++ exception must never leave this function.
pub type waitfor_tool_call_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        name: *const c_char,
        name_len: usize,
        args_json: *const c_char,
        args_len: usize,
        ctx: *const waitfor_probe_ctx,
        out: *mut waitfor_observation,
    ) -> i32,
>;

/// The host's own tools, lent to a profile call: `aura/wait_for` probes
/// them instead of its built-in `run_command` and `read_file`.
///
/// The library copies this struct during the call it is passed to.
/// `finalize` (may be NULL) releases `user_data` exactly once, whatever
/// happens (also when the call fails at once, and when the profile never
/// calls a tool), after the last call of `call`; it may run on any thread.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct waitfor_tool_caller {
    /// Calls a tool; must not be NULL.
    pub call: waitfor_tool_call_fn,
    /// The host's context for `call`; the library never reads it.
    pub user_data: *mut c_void,
    /// Releases `user_data`, exactly once; NULL for nothing to release.
    pub finalize: waitfor_finalize_fn,
}

/// The host's tool caller; dropping it runs the finalizer, once.
pub(crate) struct CTools(waitfor_tool_caller);

// SAFETY: the C contract says `call` runs on library threads and
// `user_data` is the host's to make safe for that.
unsafe impl Send for CTools {}
// SAFETY: as above.
unsafe impl Sync for CTools {}

impl CTools {
    /// Copies the host's struct; NULL means no tools.
    ///
    /// # Safety
    /// `raw` is NULL or points to a valid `waitfor_tool_caller`.
    pub unsafe fn take(raw: *const waitfor_tool_caller) -> Option<Self> {
        // SAFETY: per the contract above.
        unsafe { raw.as_ref() }.map(|raw| Self(*raw))
    }

    /// The tools as the profiles take them; an error if `call` is NULL
    /// (the finalizer then runs at once).
    pub fn into_caller(self) -> Result<Arc<dyn ToolCaller>, FfiError> {
        match self.0.call {
            Some(_) => Ok(Arc::new(self)),
            None => Err(FfiError::new(
                WAITFOR_ERR_INVALID_ARGUMENT,
                "`tools->call` is NULL: pass NULL `tools` to lend none",
            )),
        }
    }
}

impl Drop for CTools {
    fn drop(&mut self) {
        if let Some(finalize) = self.0.finalize {
            // SAFETY: the last reference is gone: `call` runs no more, and
            // this runs once.
            unsafe { finalize(self.0.user_data) };
        }
    }
}

impl ToolCaller for CTools {
    fn call_tool(
        &self,
        name: &str,
        args: &Value,
        ctx: &ProbeContext,
    ) -> Result<String, ProbeError> {
        let Some(call) = self.0.call else {
            return Err(ProbeError::new("the host's tool caller has no function"));
        };
        // NUL-terminated copies, for hosts that read C strings.
        let name_c = format!("{name}\0");
        let args_c = format!("{args}\0");
        observe(ctx, "tool", |ctx, out| {
            // SAFETY: the host's function; every pointer lives for the call.
            unsafe {
                call(
                    self.0.user_data,
                    name_c.as_ptr().cast(),
                    name.len(),
                    args_c.as_ptr().cast(),
                    args_c.len() - 1,
                    ctx,
                    out,
                )
            }
        })
        .map(|observation| observation.text)
    }
}

/// Hears a notice of a profile's tool call, to send to the MCP client:
/// `notice_json` is `{"kind": "progress", "progress": P, "total": T | null,
/// "message": M | null}` (a `notifications/progress`) or `{"kind": "log",
/// "level": "debug" | "info" | "warning" | "error", "message": M}` (a
/// `notifications/message`), UTF-8, NUL-terminated, `len` bytes without
/// the NUL, borrowed for the call only.
///
/// Each profile sends what its original tool sends: `libtmux-mcp/wait_for_text`
/// reports progress at every poll with the message "Waiting on pane %N: Xs
/// elapsed, Ys left" and logs warnings (an invalid regex, a wait that ends
/// without a match, a pane's history near its limit); the others report
/// the seconds elapsed with the time limit as the total and no message.
///
/// Called on a library thread (a refusal's notices: on the calling thread,
/// before the call returns), one notice at a time, in order, before the
/// call's `done` callback and before `waitfor_handle_wait` gives its
/// answer; it may run concurrently with the probe's tool calls. A C++
/// exception must never leave this function.
///
/// It must not block: the thread it runs on reports other waits' progress
/// too, and the call's answer waits for it. `waitfor_wait`, `waitfor_call_tool` (any form) and
/// `waitfor_handle_wait` with a timeout other than 0, called from it,
/// return `WAITFOR_ERR_INVALID_ARGUMENT` at once: the result they would
/// wait for could be due on this very thread.
pub type waitfor_notice_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, notice_json: *const c_char, len: usize)>;

/// Where a tool call's notices go (see `waitfor_notice_fn`).
///
/// The library copies this struct during the call it is passed to.
/// `finalize` (may be NULL) releases `user_data` exactly once, whatever
/// happens (also when the call fails at once), after the last notice; it
/// may run on any thread.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct waitfor_notices {
    /// Hears each notice; NULL for none.
    pub notice: waitfor_notice_fn,
    /// The host's context for `notice`; the library never reads it.
    pub user_data: *mut c_void,
    /// Releases `user_data`, exactly once; NULL for nothing to release.
    pub finalize: waitfor_finalize_fn,
}

/// The host's notice sink; dropping it runs the finalizer, once.
pub(crate) struct CNotices(waitfor_notices);

// SAFETY: the C contract says `notice` runs on library threads and
// `user_data` is the host's to make safe for that.
unsafe impl Send for CNotices {}
// SAFETY: as above.
unsafe impl Sync for CNotices {}

impl CNotices {
    /// Copies the host's struct; NULL means no notices.
    ///
    /// # Safety
    /// `raw` is NULL or points to a valid `waitfor_notices`.
    pub unsafe fn take(raw: *const waitfor_notices) -> Option<Self> {
        // SAFETY: per the contract above.
        unsafe { raw.as_ref() }.map(|raw| Self(*raw))
    }

    /// Hands each notice to the host, in order.
    pub fn send(&self, notices: Vec<Notice>) {
        let Some(call) = self.0.notice else { return };
        for notice in notices {
            let json = format!("{}\0", notice.to_json());
            // SAFETY: the host's function, called per its contract; the
            // JSON has no NUL inside (serde escapes control characters).
            crate::callbacks::as_callback(|| unsafe {
                call(self.0.user_data, json.as_ptr().cast(), json.len() - 1)
            });
        }
    }
}

impl Drop for CNotices {
    fn drop(&mut self) {
        if let Some(finalize) = self.0.finalize {
            // SAFETY: the last reference is gone: `notice` runs no more,
            // and this runs once.
            unsafe { finalize(self.0.user_data) };
        }
    }
}

/// The host's options for one wait or tool call.
#[derive(Default)]
pub(crate) struct HostOptions {
    /// What built-in probes may reach.
    pub grants: Grants,
    /// For a tool call, overrides the profile's ceiling on its time limit;
    /// for a spec, the ceiling its `max_wait` is lowered to.
    pub max_wait_ceiling: Option<Duration>,
    /// For a spec, the largest observation (its `output_cap_bytes` may
    /// lower it, never raise it); 256 KiB when `None`.
    pub output_cap: Option<usize>,
}

impl HostOptions {
    /// Reads `{"grants": {...}, "max_wait_ceiling_ms": N, "output_cap_bytes":
    /// N}` (each optional);
    /// NULL with `len` 0 grants nothing.
    ///
    /// # Safety
    /// `ptr` is NULL (with `len` 0) or points to `len` readable bytes.
    pub unsafe fn parse(ptr: *const c_char, len: usize) -> Result<Self, FfiError> {
        if ptr.is_null() && len == 0 {
            return Ok(Self::default());
        }
        // SAFETY: per the contract above.
        let value = unsafe { json(ptr, len, "host") }?;
        Self::from_json(&value).map_err(|e| {
            let mut err = FfiError::new(WAITFOR_ERR_INVALID_ARGUMENT, e.to_string());
            err.detail["field"] = e.field.into();
            err.detail["rule"] = serde_json::to_value(e.rule).unwrap_or_default();
            err
        })
    }

    fn from_json(value: &Value) -> Result<Self, SpecError> {
        use waitfor::Rule;
        let object = value
            .as_object()
            .ok_or_else(|| SpecError::new("host", Rule::WrongType, "host must be an object"))?;
        let mut options = Self::default();
        for (name, value) in object {
            match name.as_str() {
                "grants" => options.grants = Grants::from_json(value, "host.grants")?,
                "max_wait_ceiling_ms" => {
                    let ms = positive_whole(value, "host.max_wait_ceiling_ms", "milliseconds")?;
                    options.max_wait_ceiling = Some(Duration::from_millis(ms));
                }
                "output_cap_bytes" => {
                    let bytes = positive_whole(value, "host.output_cap_bytes", "bytes")?;
                    options.output_cap = Some(usize::try_from(bytes).unwrap_or(usize::MAX));
                }
                other => {
                    return Err(SpecError::unknown_field(
                        format!("host.{other}"),
                        "host options are grants, max_wait_ceiling_ms and output_cap_bytes",
                    ))
                }
            }
        }
        Ok(options)
    }
}

/// A positive whole number up to 2^53 - 1 (what every host's numbers hold
/// exactly), or the refusal that says what is wrong with `value`: not a
/// number, not above zero, or a fraction or too large.
fn positive_whole(value: &Value, field: &str, unit: &str) -> Result<u64, SpecError> {
    use waitfor::Rule;
    let refuse = |rule, why: &str| {
        Err(SpecError::new(
            field,
            rule,
            format!("{field} must be a positive whole number of {unit}{why}"),
        ))
    };
    let Some(n) = value.as_f64() else {
        return refuse(Rule::WrongType, "");
    };
    match value.as_u64() {
        _ if n <= 0.0 => refuse(Rule::NotPositive, &format!(", not {value}")),
        Some(whole) if whole <= waitfor::duration::MAX_EXACT_MS => Ok(whole),
        _ => refuse(
            Rule::OutOfRange,
            &format!(" up to {}, not {value}", waitfor::duration::MAX_EXACT_MS),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use waitfor::grants::Commands;

    fn parse(text: &str) -> Result<HostOptions, FfiError> {
        unsafe { HostOptions::parse(text.as_ptr().cast(), text.len()) }
    }

    #[test]
    fn host_options_read_grants_and_a_ceiling() {
        let options = parse(
            r#"{"grants": {"commands": ["echo"], "file_roots": ["/tmp"]}, "max_wait_ceiling_ms": 2000, "output_cap_bytes": 1048576}"#,
        )
        .unwrap_or_else(|e| panic!("{:?}", e.detail));
        assert_eq!(options.grants.commands, Commands::Only(vec!["echo".into()]));
        assert_eq!(options.max_wait_ceiling, Some(Duration::from_secs(2)));
        assert_eq!(options.output_cap, Some(1 << 20));
        let none = unsafe { HostOptions::parse(std::ptr::null(), 0) }.unwrap_or_else(|_| panic!());
        assert_eq!(none.grants, Grants::none());
    }

    #[test]
    fn bad_host_options_name_their_field() {
        for (text, field) in [
            (r#"{"grants": {"commands": "all"}}"#, "host.grants.commands"),
            (r#"{"max_wait_ceiling_ms": -1}"#, "host.max_wait_ceiling_ms"),
            (r#"{"output_cap_bytes": 0}"#, "host.output_cap_bytes"),
            (r#"{"grant": {}}"#, "host.grant"),
            ("[]", "host"),
        ] {
            let err = parse(text).err().expect(text);
            assert_eq!(err.status, WAITFOR_ERR_INVALID_ARGUMENT, "{text}");
            assert_eq!(err.detail["field"], field, "{text}");
        }
        // The rule says what is wrong: 1e300 is no "not positive".
        for (value, rule) in [
            ("1e300", "out_of_range"),
            ("2.5", "out_of_range"),
            ("9007199254740992", "out_of_range"),
            ("0", "not_positive"),
            ("-0.5", "not_positive"),
            ("\"60000\"", "wrong_type"),
            ("null", "wrong_type"),
        ] {
            for field in ["max_wait_ceiling_ms", "output_cap_bytes"] {
                let text = format!(r#"{{"{field}": {value}}}"#);
                let err = parse(&text).err().expect(&text);
                assert_eq!(err.detail["rule"], rule, "{text}: {}", err.detail);
            }
        }
        // An unknown key of a megabyte is named cut, in field and message.
        let key = "x".repeat(1 << 20);
        for text in [
            format!(r#"{{"{key}": 1}}"#),
            format!(r#"{{"grants": {{"{key}": 1}}}}"#),
        ] {
            let err = parse(&text).err().expect("an unknown key");
            assert_eq!(err.detail["rule"], "unknown_field");
            assert!(err.detail.to_string().len() < 2000, "{}", err.detail);
        }
        let err = parse("{").err().expect("not JSON");
        assert_eq!(err.status, crate::status::WAITFOR_ERR_INVALID_JSON);
    }
}
