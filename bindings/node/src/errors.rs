//! The one place core's errors ([`waitfor::ErrorInfo`]) become JavaScript
//! errors: a JSON document in the message (`code`, `field`, `rule`,
//! `message`), which `lib/errors.js` turns into a `WaitforError`.

use napi_derive::napi;
use serde_json::Value;
use waitfor::grants::Grants;
use waitfor::profiles::{Notice, ToolError};
use waitfor::{ErrorCode, ErrorInfo, Rule, SpecError};

/// An error whose message is `detail` as JSON (core's shape: `code`, `message`, ...).
fn typed(detail: Value) -> napi::Error {
    napi::Error::from_reason(detail.to_string())
}

/// A rejected wait spec: `invalid_spec` with its field and rule.
pub fn spec(err: SpecError) -> napi::Error {
    typed(ErrorInfo::spec(ErrorCode::InvalidSpec, &err).to_json())
}

/// Rejected arguments: `invalid_arguments` with their field and rule.
pub fn arguments(err: SpecError) -> napi::Error {
    typed(ErrorInfo::spec(ErrorCode::InvalidArguments, &err).to_json())
}

/// A profile call that gave no result, with the notices its profile sends
/// with the refusal (in `notices`, when there are any).
pub fn tool(err: &ToolError, notices: &[Notice]) -> napi::Error {
    let mut detail = ErrorInfo::from(err).to_json();
    if !notices.is_empty() {
        detail["notices"] = notices.iter().map(Notice::to_json).collect();
    }
    typed(detail)
}

/// Caller JSON text named `what` (`arguments`, `options.grants`), read
/// within core's size bound; its errors name the field inside it under
/// `what` (an option) or in `what`'s words (`arguments: until.matches: ...`).
pub fn input(what: &str, text: &str) -> napi::Result<Value> {
    waitfor::input::parse(text).map_err(|e| {
        let field = match (what.starts_with("options."), e.field.as_str()) {
            (false, at) => at.to_string(),
            (true, "") => what.to_string(),
            (true, at) => format!("{what}.{at}"),
        };
        let message = format!("{what}: {e}");
        let info = ErrorInfo {
            message,
            field: Some(field),
            ..ErrorInfo::spec(ErrorCode::InvalidArguments, &e)
        };
        typed(info.to_json())
    })
}

/// What built-in probes may reach, from the `grants` option as JSON text
/// (camelCase, as `Grants` in waitfor.d.ts); absent: nothing.
pub fn grants(json: Option<&str>) -> napi::Result<Grants> {
    let Some(json) = json else {
        return Ok(Grants::none());
    };
    let value = input("options.grants", json)?;
    Grants::from_json_named(&value, "options.grants", Grants::CAMEL_CASE).map_err(arguments)
}

/// The detail of an `invalid_arguments` error the package's own checks
/// raise (`invalid` in `lib/errors.js`): core names `field` (cut when
/// long) and words it.
#[napi]
pub fn invalid_arguments(field: String, rule: String, message: String) -> Value {
    let rule: Rule = serde_json::from_value(rule.into()).unwrap_or(Rule::WrongType);
    ErrorInfo::spec(
        ErrorCode::InvalidArguments,
        &SpecError::new(field, rule, message),
    )
    .to_json()
}
