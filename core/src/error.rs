//! Errors a wait can raise before it starts (the spec was not
//! acceptable), and the one error surface every binding maps: a stable
//! [`ErrorCode`] and the [`ErrorInfo`] shape (`code`, `field`, `rule`,
//! `message`).

use serde::{Deserialize, Serialize};

/// Which validation rule an input broke. The names are stable: hosts and
/// bindings branch on them, and they appear as `rule` in error JSON (and
/// are read back from it, as a binding names the rule its own check broke).
///
/// ```
/// let rule: waitfor::Rule = serde_json::from_str(r#""unknown_field""#).unwrap();
/// assert_eq!(rule, waitfor::Rule::UnknownField);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    /// A tmux pane id is not of the form `%N` (a `%` and decimal digits).
    InvalidPaneId,
    /// The input is larger than [`crate::input::MAX_INPUT_BYTES`].
    TooLarge,
    /// A program, argument, path or tmux name holds a NUL byte, which no
    /// operating-system string can hold.
    ContainsNul,
}

/// The kind of a refusal, with a stable code every binding gives as
/// `code` (Python exception attribute, Node `Error` property, C error
/// JSON). Hosts branch on the code; the message is for people.
///
/// A normal end of a wait (a timeout, a stop marker, a probe that kept
/// failing) is a result, never one of these.
///
/// ```
/// assert_eq!(waitfor::ErrorCode::InvalidSpec.as_str(), "invalid_spec");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A wait spec (the engine's own spec language, as given to `wait`,
    /// `start` or `check_spec`, or in a test vector) broke a rule; `field`
    /// and `rule` say where and which. A spec reaching beyond the host's
    /// grants is this code with rule `not_granted`.
    InvalidSpec,
    /// The arguments of a profile's tool call, or of a binding function
    /// (a pane id, an option), broke a rule; `field` and `rule` say where
    /// and which. Grant refusals carry rule `not_granted`.
    InvalidArguments,
    /// No profile has that profile id or tool name, or a tool name is
    /// offered by more than one profile.
    UnknownProfile,
    /// A profile's wait ran and could not give its tool's output (its
    /// probe failed, its output went over the cap, ...). MCP servers
    /// return it as a tool result with `isError: true`.
    Runtime,
    /// A profile call refused because the process already runs as many
    /// profile calls as its host allows (`waitfor::profiles::set_max_calls`
    /// and each binding's max tool calls setting); the calls running are
    /// untouched. MCP servers return it as a tool result with `isError:
    /// true`; retrying once a call has ended may succeed.
    TooManyCalls,
    /// A wait's probe failure, raised because the caller asked for it.
    ProbeError,
    /// An Ouro `wait/1` envelope is not valid (`errors` lists why).
    InvalidWait,
    /// An event cursor is damaged or belongs to another source.
    BadCursor,
    /// An event source was replaced or rewritten under a cursor.
    SourceReplaced,
    /// Reading an event source failed.
    Io,
    /// A bug in libwaitfor (a panic caught at the boundary).
    Internal,
}

impl ErrorCode {
    /// Every code, in a stable order.
    pub const ALL: [ErrorCode; 11] = [
        Self::InvalidSpec,
        Self::InvalidArguments,
        Self::UnknownProfile,
        Self::Runtime,
        Self::ProbeError,
        Self::InvalidWait,
        Self::BadCursor,
        Self::SourceReplaced,
        Self::Io,
        Self::Internal,
        Self::TooManyCalls,
    ];

    /// The stable code text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidSpec => "invalid_spec",
            Self::InvalidArguments => "invalid_arguments",
            Self::UnknownProfile => "unknown_profile",
            Self::Runtime => "runtime",
            Self::ProbeError => "probe_error",
            Self::InvalidWait => "invalid_wait",
            Self::BadCursor => "bad_cursor",
            Self::SourceReplaced => "source_replaced",
            Self::Io => "io",
            Self::Internal => "internal",
            Self::TooManyCalls => "too_many_calls",
        }
    }
}

/// An error as every binding exposes it: `code`, `field` and `rule`
/// (`None`, JSON `null`, unless the error is about one field), and
/// `message`.
///
/// ```
/// use waitfor::{ErrorCode, ErrorInfo, Spec};
/// let err = Spec::from_json(r#"{"regex": true, "until": {"matches": "("}}"#).unwrap_err();
/// let info = ErrorInfo::spec(ErrorCode::InvalidSpec, &err);
/// assert_eq!(serde_json::to_value(&info).unwrap()["rule"], "invalid_regex");
/// let info = ErrorInfo::new(ErrorCode::UnknownProfile, "unknown profile `x`");
/// assert_eq!(serde_json::to_value(&info).unwrap()["field"], serde_json::Value::Null);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorInfo {
    /// The error's kind.
    pub code: ErrorCode,
    /// Path of the offending field (`""`: the input as a whole).
    pub field: Option<String>,
    /// The rule the field broke.
    pub rule: Option<Rule>,
    /// What was wrong, in words.
    pub message: String,
}

impl ErrorInfo {
    /// An error that is not about one field.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            field: None,
            rule: None,
            message: message.into(),
        }
    }

    /// A refused input: `code` is [`ErrorCode::InvalidSpec`] for a wait
    /// spec, [`ErrorCode::InvalidArguments`] for anything else.
    pub fn spec(code: ErrorCode, err: &SpecError) -> Self {
        Self {
            code,
            field: Some(err.field.clone()),
            rule: Some(err.rule),
            message: err.to_string(),
        }
    }

    /// The error as JSON: `{"code", "field", "rule", "message"}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "code": self.code,
            "field": self.field,
            "rule": self.rule,
            "message": self.message,
        })
    }
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
#[error("{}{message}", field_prefix(.field))]
pub struct SpecError {
    /// Path of the offending field (`""` for the input as a whole).
    pub field: String,
    /// The rule that was broken.
    pub rule: Rule,
    /// What was wrong, in words.
    pub message: String,
}

/// `"field: "`, or nothing for the input as a whole (`": message"` reads
/// as a typo).
fn field_prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    }
}

/// Most bytes of what a serde message quotes that are kept whole: serde
/// quotes a refused string or key whole (a megabyte where a number
/// belongs).
const SERDE_QUOTE_BYTES: usize = 200;

/// `text`, a serde message (or one in its words, `unknown field `key`,
/// expected ...`), with what comes before its `, expected ...` (the
/// refused value or key it quotes) cut past [`SERDE_QUOTE_BYTES`].
pub(crate) fn cut_quote(text: String) -> String {
    let at = text.rfind(", expected ").unwrap_or(text.len());
    if at <= SERDE_QUOTE_BYTES {
        return text;
    }
    let cut = text
        .char_indices()
        .nth(ECHO_CHARS + 30)
        .map_or(at, |(cut, _)| cut.min(at));
    format!("{}... (cut){}", &text[..cut], &text[at..])
}

/// `text`, a serde message, naming the types it expected as a reader
/// knows them: `expected i64` is a whole number, and for a whole number
/// out of the type's range (`invalid value: integer`), the range.
fn in_words(text: &str) -> String {
    let Some(at) = text.rfind(", expected ") else {
        return text.to_string();
    };
    let (head, expected) = text.split_at(at + ", expected ".len());
    let range = |min: i128, max: i128| format!("a whole number from {min} to {max}");
    let word = match expected {
        _ if !text.starts_with("invalid value: integer") => match expected {
            "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" | "usize" => {
                "a whole number".to_string()
            }
            "f32" | "f64" => "a number".to_string(),
            other => other.to_string(),
        },
        "i32" => range(i32::MIN.into(), i32::MAX.into()),
        "i64" => range(i64::MIN.into(), i64::MAX.into()),
        "u32" => range(0, u32::MAX.into()),
        "u64" | "usize" => range(0, u64::MAX.into()),
        other => other.to_string(),
    };
    format!("{head}{word}")
}

/// Most characters of a refused text that its error repeats.
const ECHO_CHARS: usize = 40;

/// `text` quoted, cut after [`ECHO_CHARS`] characters: an error does not
/// repeat a megabyte it was handed.
pub(crate) fn echo(text: &str) -> String {
    match text.char_indices().nth(ECHO_CHARS) {
        None => format!("{text:?}"),
        Some((cut, _)) => format!("{:?} (cut; {} bytes in all)", &text[..cut], text.len()),
    }
}

/// Most characters of a field path that an error gives whole when one
/// of its steps is longer ([`FIELD_STEP_CHARS`]): an unknown key an agent
/// sent may be a megabyte.
const FIELD_CHARS: usize = 200;

/// Most characters of one step (a key) of a field path that is given
/// whole past [`FIELD_CHARS`]: a path the schema knows may be long only
/// by its depth (`until.any[0].any[0]....matches`), each step short.
const FIELD_STEP_CHARS: usize = 64;

/// Most bytes of a deep path of short steps given whole.
const FIELD_DEEP_BYTES: usize = 4096;

/// `field`, a path into an input, as an error names it: whole up to
/// [`FIELD_CHARS`] characters, or up to [`FIELD_DEEP_BYTES`] when every
/// step is short (a deep condition names its leaf); past that its first
/// characters (the path down to the long key, and the key's start), then
/// `... (cut; N bytes in all)`.
pub(crate) fn shown_field(field: String) -> String {
    let Some((cut, _)) = field.char_indices().nth(FIELD_CHARS) else {
        return field;
    };
    let deep = field.len() <= FIELD_DEEP_BYTES
        && field
            .split(['.', '['])
            .all(|step| step.chars().nth(FIELD_STEP_CHARS).is_none());
    if deep {
        return field;
    }
    format!("{}... (cut; {} bytes in all)", &field[..cut], field.len())
}

/// Most characters of a path that an error repeats.
const PATH_CHARS: usize = 1000;

/// `path` as an error shows it: whole up to [`PATH_CHARS`] characters (a
/// real path is far shorter), cut past that.
pub(crate) fn shown_path(path: &std::path::Path) -> String {
    let text = path.to_string_lossy();
    match text.char_indices().nth(PATH_CHARS) {
        None => text.into_owned(),
        Some((cut, _)) => format!("{}... (cut; {} bytes in all)", &text[..cut], text.len()),
    }
}

/// The longest tmux socket name or path: tmux puts the server's socket at
/// that path (a name goes below a directory of its own), and a socket's
/// path fits in 104 bytes on macOS, 108 on Linux, its closing NUL included.
///
/// ```
/// assert_eq!(waitfor::limits::MAX_SOCKET_NAME_BYTES, 103);
/// ```
pub const MAX_SOCKET_NAME_BYTES: usize = 103;

impl SpecError {
    /// An error about `field` breaking `rule`. A field past 200
    /// characters (an unknown key of a megabyte) is cut, and says so.
    ///
    /// ```
    /// use waitfor::{Rule, SpecError};
    /// let key = "x".repeat(1 << 20);
    /// let err = SpecError::new(format!("until.{key}"), Rule::UnknownField, "unknown");
    /// assert!(err.field.starts_with("until.xxx"));
    /// assert!(err.field.ends_with("... (cut; 1048582 bytes in all)"));
    /// ```
    pub fn new(field: impl Into<String>, rule: Rule, message: impl Into<String>) -> Self {
        Self {
            field: shown_field(field.into()),
            rule,
            message: message.into(),
        }
    }

    /// An unknown key at `field`: the message names it as the field is
    /// named, cut past 200 characters (a key of a megabyte is not
    /// repeated whole), then says what is `expected`.
    ///
    /// ```
    /// use waitfor::{Rule, SpecError};
    /// let err = SpecError::unknown_field("host.grant", "host options are grants");
    /// assert_eq!(err.rule, Rule::UnknownField);
    /// assert_eq!(err.message, "unknown field host.grant; host options are grants");
    /// let key = "x".repeat(1 << 20);
    /// let err = SpecError::unknown_field(format!("host.{key}"), "host options are grants");
    /// assert!(err.message.len() < 300 && err.message.contains("... (cut; 1048581 bytes in all)"));
    /// ```
    pub fn unknown_field(field: impl Into<String>, expected: &str) -> Self {
        let field = shown_field(field.into());
        Self {
            message: format!("unknown field {field}; {expected}"),
            field,
            rule: Rule::UnknownField,
        }
    }

    /// Refuses `text`, the value of `field`, if it holds a NUL byte: it is
    /// bound for the operating system (a program, an argument, a path, a
    /// tmux name), where a NUL ends a string, so no run could honour it.
    ///
    /// ```
    /// use waitfor::{Rule, SpecError};
    /// assert!(SpecError::check_no_nul("probe.file.path", "/tmp/log").is_ok());
    /// let err = SpecError::check_no_nul("probe.file.path", "/tmp/a\0b").unwrap_err();
    /// assert_eq!(err.rule, Rule::ContainsNul);
    /// ```
    pub fn check_no_nul(field: &str, text: &str) -> Result<(), SpecError> {
        if !text.contains('\0') {
            return Ok(());
        }
        Err(Self::new(
            field,
            Rule::ContainsNul,
            "holds a NUL byte (\\u0000), which no program name, argument, path or tmux name can hold",
        ))
    }

    /// Refuses a tmux socket name or path that no socket can have: one
    /// holding NUL ([`SpecError::check_no_nul`]), or one longer than
    /// [`MAX_SOCKET_NAME_BYTES`].
    pub(crate) fn check_socket_name(field: &str, name: &str) -> Result<(), SpecError> {
        Self::check_no_nul(field, name)?;
        if name.len() <= MAX_SOCKET_NAME_BYTES {
            return Ok(());
        }
        Err(Self::new(
            field,
            Rule::OutOfRange,
            format!(
                "is {} bytes long, and a socket's path may be at most {MAX_SOCKET_NAME_BYTES} \
                 bytes: no tmux server can listen there",
                name.len()
            ),
        ))
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
        let text = in_words(&cut_quote(text));
        let rule = if err.is_syntax() || err.is_eof() {
            Rule::InvalidJson
        } else if text.starts_with("unknown field") || text.starts_with("unknown variant") {
            Rule::UnknownField
        } else if text.starts_with("missing field") {
            Rule::MissingField
        } else if text.starts_with("invalid value: integer") {
            Rule::OutOfRange
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

#[cfg(test)]
mod shown_field_tests {
    use super::*;

    /// A deep condition's path is long only by its depth: it is given
    /// whole, its leaf named; a long key is still cut.
    #[test]
    fn a_deep_path_of_short_steps_is_whole() {
        let deep = format!("until{}.matches", ".any[0]".repeat(40));
        assert_eq!(
            SpecError::new(deep.clone(), Rule::InvalidRegex, "x").field,
            deep
        );
        let long = format!("until.{}", "x".repeat(1 << 20));
        assert!(SpecError::new(long, Rule::UnknownField, "x")
            .field
            .ends_with("bytes in all)"));
        let dotted = "a.".repeat(1 << 19);
        assert!(SpecError::new(dotted, Rule::UnknownField, "x").field.len() < 300);
    }
}
