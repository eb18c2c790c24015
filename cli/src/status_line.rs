//! The live status line on stderr: elapsed time, samples, last line.
//!
//! Drawn only when stderr is a terminal, redrawn in place with `\r` and
//! "erase line", and erased before the result is printed, so nothing of it
//! is left in the terminal's scrollback or in a redirected stream.

use crate::controls;
use crate::render::human_ms;
use std::io::{IsTerminal, Write};
use waitfor::Progress;

/// The status line; a no-op when stderr is not a terminal.
pub struct StatusLine {
    enabled: bool,
    drawn: bool,
}

impl StatusLine {
    /// On when stderr is a terminal.
    pub fn new() -> Self {
        Self {
            enabled: std::io::stderr().is_terminal(),
            drawn: false,
        }
    }

    /// Redraws the line.
    pub fn draw(&mut self, elapsed_ms: u64, progress: Option<&Progress>) {
        if !self.enabled {
            return;
        }
        let line = format_line(elapsed_ms, progress, terminal_width());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Erases the line, if drawn.
    pub fn clear(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The line's text, at most `width - 1` characters, with the characters
/// of the observed output that would act on the terminal
/// ([`controls::acts`]) blanked out: the line is redrawn in place, so it
/// keeps its width rather than showing escapes.
pub fn format_line(elapsed_ms: u64, progress: Option<&Progress>, width: usize) -> String {
    let mut line = format!("waiting {}", human_ms(elapsed_ms));
    if let Some(p) = progress {
        line.push_str(&format!(
            " · {} sample{}",
            p.samples,
            if p.samples == 1 { "" } else { "s" }
        ));
        if let Some(last) = &p.last_line {
            line.push_str(" · ");
            line.extend(
                last.chars()
                    .map(|c| if controls::acts(c) { ' ' } else { c }),
            );
        }
    }
    let max = width.saturating_sub(1).max(10);
    if line.chars().count() > max {
        line = line.chars().take(max - 1).collect();
        line.push('…');
    }
    line
}

/// Columns of the terminal on stderr, 80 if unknown.
#[cfg(unix)]
fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ fills a winsize struct we own; fd 2 may be any fd.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 {
        usize::from(size.ws_col)
    } else {
        80
    }
}

/// 80 columns: the status line is cut to the classic console width.
#[cfg(not(unix))]
fn terminal_width() -> usize {
    80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_the_width_and_blanks_controls() {
        let p = Progress {
            samples: 7,
            elapsed_ms: 0,
            last_line: Some("\x1b[31m\u{2028}\u{200f}building module 42 of 300".into()),
        };
        let line = format_line(12_300, Some(&p), 40);
        assert_eq!(line.chars().count(), 39);
        assert!(
            line.starts_with("waiting 12.3s · 7 samples ·  [31m  bui"),
            "{line}"
        );
        assert!(line.ends_with('…'));
        assert_eq!(format_line(500, None, 80), "waiting 500ms");
    }
}
