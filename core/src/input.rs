//! JSON text from callers (a spec, a tool call's arguments, grants, a
//! test vector), read within a size bound.
//!
//! Every door parses caller JSON through [`parse`], so an agent that sends
//! a spec of many megabytes is refused before any of it is read: parsing
//! and checking an accepted input takes milliseconds, never a slice of the
//! caller's deadline (or, in Python, of the interpreter lock).

use crate::error::{Rule, SpecError};
use serde_json::Value;

/// The largest JSON text a caller input may be: 4 MiB. Far above any real
/// spec or tool call (a pattern is at most 64 KiB), far below what takes
/// visible time to parse.
///
/// ```
/// assert_eq!(waitfor::input::MAX_INPUT_BYTES, 4 << 20);
/// ```
pub const MAX_INPUT_BYTES: usize = 4 << 20;

/// Parses caller JSON text, refusing text longer than [`MAX_INPUT_BYTES`]
/// (rule `too_large`) before reading it, and text that is not JSON (rule
/// `invalid_json`, message `not JSON: ...`). The error's field is the
/// root (`""`); a door names its input in front of the message.
///
/// ```
/// use waitfor::input::{parse, MAX_INPUT_BYTES};
/// assert_eq!(parse(r#"{"a": 1}"#).unwrap()["a"], 1);
/// let huge = format!(r#"{{"a": "{}"}}"#, "x".repeat(MAX_INPUT_BYTES));
/// assert_eq!(parse(&huge).unwrap_err().rule, waitfor::Rule::TooLarge);
/// assert_eq!(parse("{").unwrap_err().rule, waitfor::Rule::InvalidJson);
/// ```
pub fn parse(text: &str) -> Result<Value, SpecError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(too_large());
    }
    serde_json::from_str(text).map_err(|e| {
        let err = SpecError::from_serde(String::new(), &e);
        SpecError::new("", err.rule, format!("not JSON: {}", err.message))
    })
}

/// The refusal of an input past [`MAX_INPUT_BYTES`], in the same words
/// whether it came as text or as a host value measured while converted
/// (which stops counting at the bound).
///
/// ```
/// let err = waitfor::input::too_large();
/// assert_eq!((err.field.as_str(), err.rule), ("", waitfor::Rule::TooLarge));
/// assert!(err.message.contains("4 MiB"));
/// ```
pub fn too_large() -> SpecError {
    SpecError::new(
        "",
        Rule::TooLarge,
        format!("input is larger than {MAX_INPUT_BYTES} bytes (4 MiB) of JSON, the most accepted"),
    )
}
