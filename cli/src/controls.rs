//! What the CLI says for people, safe for a terminal and for a reader who
//! takes each line for one message. The CLI repeats text an agent chose (a
//! flag's value, a spec's key, a path, a probe's error) inside its own
//! messages. Raw, a control character in it (`ESC [2J` clears the screen,
//! `\r` returns to the start of the line and writes over it) would rewrite
//! the terminal, a line break would start a line the reader takes for the
//! CLI's own (`error: ...`), and a bidirectional control would reorder
//! what is shown around it.
//!
//! The rule: each message is escaped whole with [`escaped`], line breaks
//! included, and only then does the CLI end it with its own line break.
//! Text the CLI lays out in several lines itself (clap's refusals, a
//! summary of several lines whose items are already one line each) goes
//! through [`escaped_lines`], which keeps the breaks between the lines.
//! Every JSON text the CLI writes goes through [`escaped_json`] instead,
//! which writes the same characters as JSON escapes: the value is exact.

use std::borrow::Cow;

/// A character that would act on a terminal or on the lines a reader
/// sees rather than show: a control character (C0 with `\n` and `\r`,
/// DEL, C1), a line or paragraph separator (U+2028, U+2029), a
/// bidirectional mark, embedding, override or isolate (LRM, RLM, ALM,
/// U+202A..U+202E, U+2066..U+2069), which reorder the text around them,
/// or a tag character (U+E0000..U+E007F): invisible to a person, read as
/// ASCII by a language model, so text a file or command wrote could
/// carry instructions nobody sees.
pub fn acts(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{e0000}'..='\u{e007f}'
        )
}

/// `text`, one message, with each character that [`acts`] written as its
/// Rust escape (`\n`, `\r`, `\u{1b}`, `\u{2028}`, `\u{202e}`): it shows as
/// one line, whatever it holds.
///
/// ```text
/// "a⏎error: b"  ->  a\nerror: b
/// ```
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if acts(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text`, lines the CLI laid out, with each line [`escaped`] and the
/// `\n` between lines kept. A line break inside text it quotes must have
/// been escaped before, as [`escaped`] does.
///
/// ```text
/// "error: 'a␛[2J'⏎Usage: ..."  ->  error: 'a\u{1b}[2J'
///                                 Usage: ...
/// ```
pub fn escaped_lines(text: &str) -> String {
    text.split('\n').map(escaped).collect::<Vec<_>>().join("\n")
}

/// `json`, JSON text as serde_json wrote it (one line or pretty), with
/// each character that [`acts`] and serde_json leaves raw (DEL, C1, the
/// separators, the bidirectional controls, the tag characters) written as
/// its `\uXXXX` escape (a surrogate pair past U+FFFF): still JSON, it
/// parses to the same value, and a terminal or a line reader sees no such
/// character in it.
///
/// serde_json escapes the C0 controls inside strings itself, and outside
/// strings JSON holds only ASCII (RFC 8259: whitespace, punctuation,
/// digits, `true`, `false`, `null`), so a pass over the text suffices:
/// each of these characters is inside a string, and there as itself (an
/// escape sequence is ASCII after its `\`), where `\uXXXX` means the
/// same character.
///
/// ```text
/// {"s":"a␤b"}  ->  {"s":"a\u2028b"}      (␤ = U+2028)
/// ```
pub fn escaped_json(json: String) -> String {
    let raw = |c: char| c >= '\u{7f}' && acts(c);
    if !json.chars().any(raw) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if raw(c) {
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_shows_as_one_line() {
        assert_eq!(escaped("plain text"), "plain text");
        assert_eq!(
            escaped("a\u{1b}[2J\rb\tc\u{7f}\u{9b}d\u{202e}e\nerror: f"),
            r"a\u{1b}[2J\rb\tc\u{7f}\u{9b}d\u{202e}e\nerror: f"
        );
        assert_eq!(
            escaped("a\u{2028}b\u{2029}c\u{200e}d\u{200f}e\u{61c}f\u{2066}g\u{2069}"),
            r"a\u{2028}b\u{2029}c\u{200e}d\u{200f}e\u{61c}f\u{2066}g\u{2069}"
        );
        assert_eq!(escaped("a\u{e0041}\u{e007f}b"), r"a\u{e0041}\u{e007f}b");
    }

    #[test]
    fn laid_out_lines_keep_their_breaks() {
        assert_eq!(
            escaped_lines("error: '\u{1b}[2J\r'\n\nUsage: x\n"),
            "error: '\\u{1b}[2J\\r'\n\nUsage: x\n"
        );
    }

    #[test]
    fn json_keeps_its_values_and_shows_no_control() {
        let hostile = "a\u{7f}\u{80}\u{9b}[2J\u{9f}\\\u{2028}\u{2029}\u{200e}\u{200f}\u{61c}\u{202a}\u{202e}\u{2066}\u{2069}\n\u{1b}é✓\u{e0001}\u{e0041}\u{e007f}";
        let value = serde_json::json!({ hostile: [hostile, 1, null] });
        for text in [value.to_string(), format!("{value:#}")] {
            let json = escaped_json(text);
            assert!(!json.contains(|c: char| c >= '\u{7f}' && acts(c)), "{json}");
            assert!(json.contains(r"\u009b[2J") && json.contains('é'), "{json}");
            assert!(json.contains(r"\udb40\udc41"), "{json}");
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&json).unwrap(),
                value
            );
        }
        assert_eq!(escaped_json("{\n  \"a\": 1\n}".into()), "{\n  \"a\": 1\n}");
    }
}
