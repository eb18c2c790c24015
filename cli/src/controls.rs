//! What the CLI says on stderr, safe for a terminal. Its errors repeat
//! text an agent chose (a flag's value, a spec's key, a path), and a raw
//! control character in it (`ESC [2J` clears the screen, `\r` returns to
//! the start of the line and writes over it) would rewrite the terminal
//! that shows them. Every error the CLI prints passes through [`escaped`]
//! (clap's and the tool's) or [`Escaping`] (the events subcommand's).

use std::borrow::Cow;
use std::io::{self, Write};

/// A character that would act on a terminal rather than show: a control
/// character (C0, DEL, C1) but the newline that ends a line, or a
/// bidirectional override, which reorders the text shown around it.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with each character that would act on a terminal written as
/// its Rust escape (`\u{1b}`, `\r`, `\t`, `\u{202e}`).
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

/// A writer that passes what it is given through [`escaped`]. Formatted
/// text (`writeln!`) comes whole characters at a time; bytes that are not
/// UTF-8 are written as U+FFFD.
pub struct Escaping<W>(pub W);

impl<W: Write> Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(escaped(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_newlines_kept() {
        assert_eq!(escaped("plain\ntext"), "plain\ntext");
        assert_eq!(
            escaped("a\u{1b}[2J\rb\tc\u{7f}\u{9b}d\u{202e}e"),
            r"a\u{1b}[2J\rb\tc\u{7f}\u{9b}d\u{202e}e"
        );
        let mut out = Escaping(Vec::new());
        let path = "/tmp/\u{1b}[2J\r";
        writeln!(out, "path {path}: gone").unwrap();
        assert_eq!(out.0, b"path /tmp/\\u{1b}[2J\\r: gone\n");
    }
}
