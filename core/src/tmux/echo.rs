//! Echo records: the keys a host typed into a pane, so that a wait does not
//! mistake the terminal's echo of them for output.
//!
//! The host records what it sent ("these keys to pane `%3`"): literal text,
//! `Enter`, `BSpace`, or any other key. Per pane the log keeps
//!
//! - the *pending* input: typed on the current line, not yet submitted; at
//!   most [`ECHO_MAX_PENDING`] characters and forgotten [`ECHO_PENDING_TTL`]
//!   after the last key;
//! - the *recent* submitted lines: at most [`ECHO_RECENT_LIMIT`], each kept for
//!   [`ECHO_RECENT_TTL`].
//!
//! As libtmux-cxx models them, `C-c` and `C-u` end the line as `Enter` does
//! (its echo stays on screen, so it is kept among the recent lines), the
//! first erase (`BSpace`, `C-h`) after typing keeps the line as it was
//! before the edit (a shell's redraw may still show it), and `DC` and
//! `Delete` change nothing. Any other key the log does not model (arrows,
//! `Tab`, `C-a`...) makes the current line unknown: the log stops tracking
//! it (nothing of it is masked, and its submission is not recorded) until
//! the next `Enter`. Going over the pending cap does the same. The log
//! always errs towards treating text as output (fail open), never towards
//! hiding output.
//!
//! [`EchoLog::mask`] blanks, whole-word, the recent submitted lines on every
//! line and the pending input on the cursor line, where typed input sits.
//!
//! Time is a parameter (`now`), so tests are exact.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use waitfor::tmux::{EchoLog, Key};
//!
//! let log = EchoLog::new();
//! let t0 = Instant::now();
//! log.record("%1", &[Key::text("echo ready"), Key::Enter], t0);
//! let lines = vec!["$ echo ready".to_string(), "ready".to_string(), "$".to_string()];
//! let masked = log.mask("%1", &lines, Some(2), t0 + Duration::from_secs(1));
//! assert_eq!(masked.lines[0], "$           ");
//! assert_eq!(masked.lines[1], "ready");
//! assert!(!masked.only_echo("ready"));
//! assert!(masked.only_echo("echo ready"));
//! ```

use crate::sync::Mutex;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// How long a submitted line is remembered.
pub const ECHO_RECENT_TTL: Duration = Duration::from_secs(10);
/// Most submitted lines remembered per pane.
pub const ECHO_RECENT_LIMIT: usize = 4;
/// Most characters of pending input tracked per pane; beyond it the line is
/// no longer tracked.
pub const ECHO_MAX_PENDING: usize = 4096;
/// Pending input is forgotten this long after the last key.
pub const ECHO_PENDING_TTL: Duration = Duration::from_secs(60);

/// Which tmux server a pane belongs to. A server restarted on the same
/// socket is another server (another pid, start time), and its panes
/// reuse ids: echo records are kept per server.
///
/// ```
/// let a = waitfor::tmux::ServerIdentity { socket_path: "/tmp/s".into(), pid: 7, start_time: 1 };
/// let b = waitfor::tmux::ServerIdentity { pid: 8, ..a.clone() };
/// assert_ne!(a, b);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ServerIdentity {
    /// `#{socket_path}`.
    pub socket_path: String,
    /// `#{pid}`: the server's process id.
    pub pid: u32,
    /// `#{start_time}`: when the server started (seconds since the epoch).
    pub start_time: u64,
}

/// A key sent to a pane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// Literal text (`send-keys -l`). A `\n` or `\r` inside submits the line.
    Text(String),
    /// `Enter` (also `C-m`, `KPEnter`).
    Enter,
    /// `BSpace` (also `C-h`): removes the last pending character.
    Backspace,
    /// Any other key, by its tmux name: `C-c` and `C-u` end the line, `DC`
    /// and `Delete` do nothing, and the rest (`Up`, `Tab`) are unmodelled,
    /// so the current line stops being tracked.
    Other(String),
}

impl Key {
    /// [`Key::Text`] from anything string-like.
    pub fn text(s: impl Into<String>) -> Self {
        Key::Text(s.into())
    }

    /// Maps a tmux key name as `send-keys` takes it (without `-l`):
    /// `Enter`, `C-m`, `KPEnter` submit, `BSpace` and `C-h` erase, a single
    /// character is text, and anything else is [`Key::Other`].
    ///
    /// ```
    /// use waitfor::tmux::Key;
    /// assert_eq!(Key::from_tmux_name("C-m"), Key::Enter);
    /// assert_eq!(Key::from_tmux_name("x"), Key::text("x"));
    /// assert_eq!(Key::from_tmux_name("C-c"), Key::Other("C-c".into()));
    /// ```
    pub fn from_tmux_name(name: &str) -> Self {
        match name {
            "Enter" | "C-m" | "KPEnter" => Key::Enter,
            "BSpace" | "C-h" => Key::Backspace,
            "Space" => Key::text(" "),
            s if s.chars().count() == 1 => Key::text(s),
            s => Key::Other(s.to_string()),
        }
    }
}

#[derive(Debug)]
struct PaneEcho {
    pending: String,
    pending_chars: usize,
    tracking: bool,
    /// The pending line was kept among the recent lines by an erase, and
    /// nothing was typed since.
    kept: bool,
    last_key: Instant,
    recent: VecDeque<(String, Instant)>,
}

impl PaneEcho {
    fn new(now: Instant) -> Self {
        Self {
            pending: String::new(),
            pending_chars: 0,
            tracking: true,
            kept: false,
            last_key: now,
            recent: VecDeque::new(),
        }
    }

    fn expire(&mut self, now: Instant) {
        if now.saturating_duration_since(self.last_key) >= ECHO_PENDING_TTL {
            self.pending.clear();
            self.pending_chars = 0;
            self.tracking = true;
            self.kept = false;
        }
        while let Some((_, at)) = self.recent.front() {
            if now.saturating_duration_since(*at) >= ECHO_RECENT_TTL {
                self.recent.pop_front();
            } else {
                break;
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.recent.is_empty() && self.tracking
    }

    fn untrack(&mut self) {
        self.pending.clear();
        self.pending_chars = 0;
        self.tracking = false;
    }

    fn push_char(&mut self, c: char) {
        if !self.tracking {
            return;
        }
        if self.pending_chars >= ECHO_MAX_PENDING {
            self.untrack();
            return;
        }
        self.pending.push(c);
        self.pending_chars += 1;
        self.kept = false;
    }

    /// Keeps the tracked pending line among the recent lines.
    fn keep(&mut self, now: Instant) {
        if self.tracking && !self.pending.trim().is_empty() {
            self.recent.push_back((self.pending.clone(), now));
            while self.recent.len() > ECHO_RECENT_LIMIT {
                self.recent.pop_front();
            }
        }
    }

    fn submit(&mut self, now: Instant) {
        self.keep(now);
        self.pending.clear();
        self.pending_chars = 0;
        self.tracking = true;
        self.kept = false;
    }

    fn erase(&mut self, now: Instant) {
        if !self.kept {
            self.keep(now);
            self.kept = true;
        }
        if self.tracking && self.pending.pop().is_some() {
            self.pending_chars -= 1;
        }
    }

    fn key(&mut self, key: &Key, now: Instant) {
        match key {
            Key::Text(text) => {
                for c in text.chars() {
                    match c {
                        '\n' | '\r' => self.submit(now),
                        c if c.is_control() => self.untrack(),
                        c => self.push_char(c),
                    }
                }
            }
            Key::Enter => self.submit(now),
            Key::Backspace => self.erase(now),
            Key::Other(name) => match name.as_str() {
                "C-c" | "C-u" => self.submit(now),
                "C-h" => self.erase(now),
                "DC" | "Delete" => {}
                _ => self.untrack(),
            },
        }
    }
}

/// Per-pane echo records. All methods take `&self` (there is a lock inside),
/// so one log can be shared, e.g. in an `Arc`, between the code that sends
/// keys and the waits that read panes.
#[derive(Debug, Default)]
pub struct EchoLog {
    panes: Mutex<HashMap<String, PaneEcho>>,
}

/// Lines with the echo blanked out, from [`EchoLog::mask`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EchoMask {
    /// The lines, with each masked character replaced by a space.
    pub lines: Vec<String>,
    /// The lines as given.
    pub original: Vec<String>,
    /// How many occurrences were masked.
    pub masked: usize,
}

impl EchoMask {
    /// `lines` with nothing masked.
    ///
    /// ```
    /// let m = waitfor::tmux::EchoMask::unmasked(&["$ ls".to_string()]);
    /// assert_eq!(m.lines, m.original);
    /// ```
    pub fn unmasked(lines: &[String]) -> Self {
        Self {
            lines: lines.to_vec(),
            original: lines.to_vec(),
            masked: 0,
        }
    }

    /// Whether `text` is visible in the original lines but not in the masked
    /// ones: on screen only as the host's own echo (`-unconfirmed`).
    pub fn only_echo(&self, text: &str) -> bool {
        !text.is_empty()
            && self.original.iter().any(|l| l.contains(text))
            && !self.lines.iter().any(|l| l.contains(text))
    }
}

impl EchoLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records keys sent to `pane_id` at `now`.
    pub fn record(&self, pane_id: &str, keys: &[Key], now: Instant) {
        let mut panes = self.panes.lock();
        let pane = panes
            .entry(pane_id.to_string())
            .or_insert_with(|| PaneEcho::new(now));
        pane.expire(now);
        for key in keys {
            pane.key(key, now);
        }
        pane.last_key = now;
    }

    /// The pending (unsubmitted, tracked) input of a pane.
    ///
    /// ```
    /// # use std::time::Instant;
    /// # use waitfor::tmux::{EchoLog, Key};
    /// let log = EchoLog::new();
    /// let t = Instant::now();
    /// log.record("%1", &[Key::text("ls -l")], t);
    /// assert_eq!(log.pending("%1", t).as_deref(), Some("ls -l"));
    /// log.record("%1", &[Key::Other("C-c".into())], t);
    /// assert_eq!(log.pending("%1", t), None);
    /// ```
    pub fn pending(&self, pane_id: &str, now: Instant) -> Option<String> {
        let mut panes = self.panes.lock();
        let pane = panes.get_mut(pane_id)?;
        pane.expire(now);
        (!pane.pending.is_empty()).then(|| pane.pending.clone())
    }

    /// The recent submitted lines of a pane, oldest first.
    pub fn recent(&self, pane_id: &str, now: Instant) -> Vec<String> {
        let mut panes = self.panes.lock();
        match panes.get_mut(pane_id) {
            Some(pane) => {
                pane.expire(now);
                pane.recent.iter().map(|(l, _)| l.clone()).collect()
            }
            None => Vec::new(),
        }
    }

    /// Drops expired records of every pane, and panes with nothing left.
    pub fn expire(&self, now: Instant) {
        let mut panes = self.panes.lock();
        panes.retain(|_, p| {
            p.expire(now);
            !p.is_empty()
        });
    }

    /// Forgets a pane (it was killed or respawned).
    pub fn forget(&self, pane_id: &str) {
        self.panes.lock().remove(pane_id);
    }

    /// Blanks the echo in `lines` of `pane_id`: every whole-word occurrence
    /// of a recent submitted line on any line, and of the pending input on
    /// the cursor line (`cursor_line`, an index into `lines`).
    pub fn mask(
        &self,
        pane_id: &str,
        lines: &[String],
        cursor_line: Option<usize>,
        now: Instant,
    ) -> EchoMask {
        let (pending, recent) = {
            let mut panes = self.panes.lock();
            match panes.get_mut(pane_id) {
                Some(p) => {
                    p.expire(now);
                    (
                        p.pending.clone(),
                        p.recent.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>(),
                    )
                }
                None => (String::new(), Vec::new()),
            }
        };
        let mut out = EchoMask {
            lines: lines.to_vec(),
            original: lines.to_vec(),
            masked: 0,
        };
        for (i, line) in out.lines.iter_mut().enumerate() {
            for r in &recent {
                out.masked += mask_word(line, r.trim());
            }
            if Some(i) == cursor_line {
                out.masked += mask_word(line, pending.trim());
            }
        }
        out
    }
}

fn is_word(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// Replaces every whole-word occurrence of `needle` in `line` with spaces;
/// returns how many. "Whole word": the characters just outside the
/// occurrence are not word characters where the needle's own ends are.
fn mask_word(line: &mut String, needle: &str) -> usize {
    if needle.is_empty() {
        return 0;
    }
    let first = needle.chars().next();
    let last = needle.chars().next_back();
    let mut count = 0;
    let mut from = 0;
    while let Some(pos) = line[from..].find(needle).map(|p| p + from) {
        let end = pos + needle.len();
        let before = line[..pos].chars().next_back();
        let after = line[end..].chars().next();
        let left_ok = !(is_word(first) && is_word(before));
        let right_ok = !(is_word(last) && is_word(after));
        if left_ok && right_ok {
            let blank = " ".repeat(line[pos..end].chars().count());
            line.replace_range(pos..end, &blank);
            count += 1;
            from = pos + blank.len();
        } else {
            from = pos + line[pos..].chars().next().map_or(1, char::len_utf8);
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn whole_word_only() {
        let mut l = "make makefile remake make".to_string();
        assert_eq!(mask_word(&mut l, "make"), 2);
        assert_eq!(l, "     makefile remake     ");
        let mut l = "x=a.b".to_string();
        assert_eq!(mask_word(&mut l, ".b"), 1);
        let mut l = "naïve ïve".to_string();
        assert_eq!(mask_word(&mut l, "ïve"), 1);
        assert_eq!(l, "naïve    ");
    }

    #[test]
    fn pending_only_masked_on_cursor_line() {
        let log = EchoLog::new();
        let t = Instant::now();
        log.record("%1", &[Key::text("ready")], t);
        let m = log.mask("%1", &s(&["ready", "$ ready"]), Some(1), t);
        assert_eq!(m.lines, s(&["ready", "$      "]));
        let m = log.mask("%1", &s(&["$ ready"]), None, t);
        assert_eq!(m.masked, 0);
        assert!(log.mask("%2", &s(&["$ ready"]), Some(0), t).masked == 0);
    }

    #[test]
    fn recent_lines_expire_and_are_capped() {
        let log = EchoLog::new();
        let t = Instant::now();
        for i in 0..6 {
            log.record(
                "%1",
                &[Key::text(format!("cmd{i}")), Key::Enter],
                t + Duration::from_secs(i),
            );
        }
        assert_eq!(
            log.recent("%1", t + Duration::from_secs(6)),
            s(&["cmd2", "cmd3", "cmd4", "cmd5"])
        );
        // cmd2 was submitted at t+2: gone at t+12, cmd5 (t+5) lives until t+15.
        assert_eq!(
            log.recent("%1", t + Duration::from_secs(12)),
            s(&["cmd3", "cmd4", "cmd5"])
        );
        assert_eq!(
            log.recent("%1", t + ECHO_RECENT_TTL + Duration::from_secs(5)),
            Vec::<String>::new()
        );
        log.expire(t + Duration::from_secs(100));
        assert!(log.panes.lock().is_empty());
    }

    /// libtmux-cxx (`pane_echo_test.cpp`): `C-c` and `C-u` end the line and
    /// keep it among the recent lines, as its echo may still be on screen.
    #[test]
    fn kill_keys_end_the_line_and_keep_it() {
        for kill in ["C-c", "C-u"] {
            let log = EchoLog::new();
            let t = Instant::now();
            log.record("%1", &[Key::text("oops"), Key::from_tmux_name(kill)], t);
            assert_eq!(log.pending("%1", t), None, "{kill}");
            assert_eq!(log.recent("%1", t), s(&["oops"]), "{kill}");
            log.record("%1", &[Key::text("next")], t);
            assert_eq!(log.pending("%1", t).as_deref(), Some("next"), "{kill}");
        }
    }

    /// libtmux-cxx: the first erase after typing keeps the line as it was
    /// (a shell's redraw may still show it), then erases one character;
    /// `C-h` erases as `BSpace` does.
    #[test]
    fn an_erase_keeps_the_line_before_the_edit() {
        let log = EchoLog::new();
        let t = Instant::now();
        let mut keys: Vec<Key> = "xMARKER"
            .chars()
            .map(|c| Key::from_tmux_name(&c.to_string()))
            .collect();
        keys.extend(std::iter::repeat_n(Key::Backspace, 6));
        log.record("%1", &keys, t);
        assert_eq!(log.pending("%1", t).as_deref(), Some("x"));
        assert_eq!(log.recent("%1", t), s(&["xMARKER"]));
        log.record("%1", &[Key::from_tmux_name("C-h")], t);
        assert_eq!(log.pending("%1", t), None);
        assert_eq!(log.recent("%1", t), s(&["xMARKER"]), "kept once per edit");
        log.record("%1", &[Key::text("ab"), Key::Backspace], t);
        assert_eq!(log.recent("%1", t), s(&["xMARKER", "ab"]));
    }

    /// libtmux-cxx: `DC` and `Delete` leave the line as it is.
    #[test]
    fn delete_keys_change_nothing() {
        let log = EchoLog::new();
        let t = Instant::now();
        for key in ["DC", "Delete"] {
            log.record("%1", &[Key::text("MARKER"), Key::from_tmux_name(key)], t);
            assert_eq!(log.pending("%1", t).as_deref(), Some("MARKER"), "{key}");
            log.record("%1", &[Key::Other("C-u".into())], t);
        }
    }

    #[test]
    fn unknown_keys_fail_open_until_enter() {
        let log = EchoLog::new();
        let t = Instant::now();
        log.record(
            "%1",
            &[
                Key::text("rm -rf x"),
                Key::Other("Left".into()),
                Key::text("more"),
                Key::Enter,
            ],
            t,
        );
        assert_eq!(log.pending("%1", t), None);
        assert!(
            log.recent("%1", t).is_empty(),
            "an untracked line is not recorded"
        );
        log.record("%1", &[Key::text("ls\n")], t);
        assert_eq!(log.recent("%1", t), s(&["ls"]));
        log.record("%1", &[Key::text("ab"), Key::Backspace, Key::text("c")], t);
        assert_eq!(log.pending("%1", t).as_deref(), Some("ac"));
        log.record("%1", &[Key::text("\u{1b}[A")], t);
        assert_eq!(log.pending("%1", t), None);
    }

    #[test]
    fn pending_is_capped_and_expires() {
        let log = EchoLog::new();
        let t = Instant::now();
        log.record("%1", &[Key::text("x".repeat(ECHO_MAX_PENDING + 1))], t);
        assert_eq!(log.pending("%1", t), None);
        log.record("%1", &[Key::Enter, Key::text("abc")], t);
        assert_eq!(log.pending("%1", t).as_deref(), Some("abc"));
        assert_eq!(log.pending("%1", t + ECHO_PENDING_TTL), None);
    }

    #[test]
    fn only_echo_reports_text_hidden_by_masking() {
        let log = EchoLog::new();
        let t = Instant::now();
        log.record("%1", &[Key::text("echo done")], t);
        let m = log.mask("%1", &s(&["$ echo done"]), Some(0), t);
        assert!(m.only_echo("done"));
        assert!(!m.only_echo("absent"));
        let m = log.mask("%1", &s(&["done", "$ echo done"]), Some(1), t);
        assert!(!m.only_echo("done"));
    }
}
