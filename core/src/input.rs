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
/// `invalid_json`, message `not JSON: ...` with the line and column). The
/// error's field is the root (`""`), but for a fault inside a string (a
/// lone surrogate escape such as `"\ud800"`, a bad escape, a raw control
/// character), where it is that string's path; a door names its input in
/// front of the message.
///
/// ```
/// use waitfor::input::{parse, MAX_INPUT_BYTES};
/// assert_eq!(parse(r#"{"a": 1}"#).unwrap()["a"], 1);
/// let huge = format!(r#"{{"a": "{}"}}"#, "x".repeat(MAX_INPUT_BYTES));
/// assert_eq!(parse(&huge).unwrap_err().rule, waitfor::Rule::TooLarge);
/// assert_eq!(parse("{").unwrap_err().rule, waitfor::Rule::InvalidJson);
/// let err = parse(r#"{"until": {"any": [{"matches": "\ud800"}]}}"#).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("until.any[0].matches", waitfor::Rule::InvalidJson));
/// ```
pub fn parse(text: &str) -> Result<Value, SpecError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(too_large());
    }
    serde_json::from_str(text).map_err(|e| not_json(text, &e))
}

/// serde_json's words for a fault inside a string, where the string's
/// path says where the fault is.
const STRING_FAULTS: [&str; 5] = [
    "control character (\\u0000-\\u001F) found while parsing a string",
    "invalid escape",
    "invalid unicode code point",
    "lone leading surrogate in hex escape",
    "unexpected end of hex escape",
];

/// The refusal of `text`, which serde_json refused with `e`. The message
/// gives serde's words and where they apply (line and column). A fault
/// inside a string (a lone surrogate escape, a bad escape, a raw control
/// character) is a fault of one value, and the field names it as other
/// refused values are named: the path of that string, or of the key it
/// is.
fn not_json(text: &str, e: &serde_json::Error) -> SpecError {
    let err = SpecError::from_serde(String::new(), e);
    let mut message = format!("not JSON: {}", err.message);
    if err.message.contains("surrogate") || err.message == "unexpected end of hex escape" {
        message.push_str(
            " (an escape from \\uD800 to \\uDFFF is half of a pair, a high one followed \
             at once by a low one, and stands for no character alone)",
        );
    }
    if e.line() > 0 {
        message.push_str(&format!(" at line {} column {}", e.line(), e.column()));
    }
    let field = if STRING_FAULTS.contains(&err.message.as_str()) {
        byte_at(text, e.line(), e.column()).and_then(|at| string_path(text, at))
    } else {
        None
    };
    SpecError::new(field.unwrap_or_default(), err.rule, message)
}

/// The index of the byte serde_json's `line` and `column` point at: its
/// lines count from 1, and its column counts the bytes of the line read,
/// the faulty one included.
fn byte_at(text: &str, line: usize, column: usize) -> Option<usize> {
    let line_start = match line {
        0 => return None,
        1 => 0,
        _ => text.match_indices('\n').nth(line - 2)?.0 + 1,
    };
    (line_start + column)
        .checked_sub(1)
        .filter(|&at| at < text.len())
}

/// A container open at the faulty byte.
enum Open {
    /// An object: the key of the member being read, and whether a key
    /// comes next.
    Object { key: String, want_key: bool },
    /// An array: the index of the element being read.
    Array { index: usize },
}

/// The path (as serde_path_to_error writes it: `until.any[1].matches`) of
/// the string that byte `at` of `text` is inside, if it is inside one
/// (past its opening quote). serde_json read every byte before `at` as
/// JSON, so a scan of them that knows only brackets, commas, colons and
/// strings finds the containers open at `at`.
fn string_path(text: &str, at: usize) -> Option<String> {
    let bytes = text.as_bytes();
    let mut open: Vec<Open> = Vec::new();
    let mut i = 0;
    while i < at {
        match bytes[i] {
            b'{' => open.push(Open::Object {
                key: String::new(),
                want_key: true,
            }),
            b'[' => open.push(Open::Array { index: 0 }),
            b'}' | b']' => {
                open.pop();
            }
            b',' => match open.last_mut() {
                Some(Open::Object { want_key, .. }) => *want_key = true,
                Some(Open::Array { index }) => *index += 1,
                None => {}
            },
            b':' => {
                if let Some(Open::Object { want_key, .. }) = open.last_mut() {
                    *want_key = false;
                }
            }
            b'"' => {
                let start = i + 1;
                let mut end = start;
                // As serde_json reads: `\\u` takes the four bytes after it,
                // a quote among them, so a short `"\\u"` runs on past its
                // quote as serde_json's read (and its fault position) does.
                while end < bytes.len() && bytes[end] != b'"' {
                    end += match bytes[end..] {
                        [b'\\', b'u', ..] => 6,
                        [b'\\', ..] => 2,
                        _ => 1,
                    };
                }
                let end = end.min(bytes.len());
                let raw = String::from_utf8_lossy(&bytes[start..end]);
                let key = match open.last_mut() {
                    Some(Open::Object {
                        key,
                        want_key: true,
                    }) => Some(key),
                    _ => None,
                };
                if at <= end {
                    // The faulty string: a value, or a key of the innermost object.
                    let (outer, key) = match key {
                        Some(_) => (&open[..open.len() - 1], Some(unescaped(&raw))),
                        None => (&open[..], None),
                    };
                    let mut path = path_of(outer);
                    if let Some(key) = key {
                        push_key(&mut path, &key);
                    }
                    return Some(path);
                }
                if let Some(key) = key {
                    *key = unescaped(&raw);
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The path through `open`: the member or element each is reading.
fn path_of(open: &[Open]) -> String {
    let mut path = String::new();
    for container in open {
        match container {
            Open::Object { key, .. } => push_key(&mut path, key),
            Open::Array { index } => path.push_str(&format!("[{index}]")),
        }
    }
    path
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// The text of a JSON string's inside `raw`, its escapes read; an escape
/// that stands for no character (a lone surrogate, a bad escape) reads as
/// U+FFFD.
fn unescaped(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    let hex = |chars: &mut std::str::Chars<'_>| -> Option<u32> {
        let digits: String = chars.clone().take(4).collect();
        let unit = u32::from_str_radix(&digits, 16)
            .ok()
            .filter(|_| digits.len() == 4)?;
        chars.nth(3);
        Some(unit)
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let read = match chars.next() {
            Some('"') => '"',
            Some('\\') => '\\',
            Some('/') => '/',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('u') => match hex(&mut chars) {
                Some(high @ 0xD800..=0xDBFF) => {
                    let mut after = chars.clone();
                    let low = (after.next() == Some('\\') && after.next() == Some('u'))
                        .then(|| hex(&mut after))
                        .flatten()
                        .filter(|low| (0xDC00..=0xDFFF).contains(low));
                    match low {
                        Some(low) => {
                            chars = after;
                            char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                                .unwrap_or(char::REPLACEMENT_CHARACTER)
                        }
                        None => char::REPLACEMENT_CHARACTER,
                    }
                }
                Some(unit) => char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER),
                None => char::REPLACEMENT_CHARACTER,
            },
            _ => char::REPLACEMENT_CHARACTER,
        };
        out.push(read);
    }
    out
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

#[cfg(test)]
mod review_tests {
    use super::parse;

    /// serde_json reads the four bytes after `\u` whatever they are, a
    /// closing quote among them, and reports its fault past that quote:
    /// the field is still the string the short escape is in, never the
    /// key or value after it.
    #[test]
    fn a_short_unicode_escape_names_its_own_string() {
        for (text, field) in [
            (r#"{"until":"\u","x":1}"#, "until"),
            (r#"{"a":{"m":"\u"},"b":{"c":"d"}}"#, "a.m"),
            (r#"{"a":"\ud800\u","b":1}"#, "a"),
            (r#"{"a":"\u1","zz":1}"#, "a"),
            (r#"{"a": "\u12"}"#, "a"),
        ] {
            assert_eq!(parse(text).unwrap_err().field, field, "{text}");
        }
    }
}
