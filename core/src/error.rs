//! Errors a wait can raise before it starts: the spec was not acceptable.

use serde::Serialize;

/// Which validation rule an input broke. The names are stable: hosts and
/// bindings branch on them, and they appear as `rule` in error JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// The input is not JSON at all.
    InvalidJson,
    /// A field the schema does not know.
    UnknownField,
    /// A field is missing.
    MissingField,
    /// A value has the wrong JSON type.
    WrongType,
    /// A string or list that must not be empty is.
    Empty,
    /// A regular expression does not compile.
    InvalidRegex,
    /// A duration or count that must be above zero is not.
    NotPositive,
    /// A number is outside its allowed range.
    OutOfRange,
    /// The poll interval is not below the time limit.
    IntervalNotBelowLimit,
    /// The quiet window is longer than the time limit.
    QuietAboveLimit,
    /// Two fields that exclude each other were both given, or neither.
    Conflict,
    /// A JSON pointer is not of RFC 6901's form.
    InvalidPointer,
    /// A resume token is damaged or belongs to another kind of wait.
    InvalidResume,
    /// The input asks a built-in probe to reach what the host did not grant
    /// (a program, a file, a tmux socket path).
    NotGranted,
    /// The input asks for a probe this host's platform cannot run (a tmux
    /// pane on Windows).
    Unsupported,
}

/// A spec or tool input was rejected before any probe call.
///
/// `field` is a path into the input such as `until.any[1].matches`, and
/// `rule` says which rule was broken; `message` says it in words.
///
/// ```
/// let err = waitfor::Spec::from_json(r#"{"regex": true, "until": {"matches": "("}}"#).unwrap_err();
/// assert_eq!(err.field, "until.matches");
/// assert_eq!(err.rule, waitfor::Rule::InvalidRegex);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SpecError {
    /// Path of the offending field (`""` for the input as a whole).
    pub field: String,
    /// The rule that was broken.
    pub rule: Rule,
    /// What was wrong, in words.
    pub message: String,
}

impl SpecError {
    /// An error about `field` breaking `rule`.
    pub fn new(field: impl Into<String>, rule: Rule, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            rule,
            message: message.into(),
        }
    }

    /// Turns a serde error (with the path where it happened) into a spec
    /// error, classifying the serde message into a [`Rule`].
    pub(crate) fn from_serde(path: String, err: &serde_json::Error) -> Self {
        let text = err.to_string();
        // serde_json appends " at line L column C"; the field path says more.
        let text = match text.find(" at line ") {
            Some(at) => text[..at].to_string(),
            None => text,
        };
        let rule = if err.is_syntax() || err.is_eof() {
            Rule::InvalidJson
        } else if text.starts_with("unknown field") || text.starts_with("unknown variant") {
            Rule::UnknownField
        } else if text.starts_with("missing field") {
            Rule::MissingField
        } else {
            Rule::WrongType
        };
        let mut field = if path == "." { String::new() } else { path };
        if rule == Rule::MissingField {
            // serde names the missing field only in its message.
            if let Some(name) = text.split('`').nth(1) {
                field = if field.is_empty() {
                    name.to_string()
                } else {
                    format!("{field}.{name}")
                };
            }
        }
        Self::new(field, rule, text)
    }
}
