//! Views: how successive observations become the text conditions read.

mod snapshot_diff;

use crate::observation::ProbeMode;
use crate::spec::ViewKind;
use snapshot_diff::Change;

/// What changed with the last observation, for incremental matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Update {
    /// Byte offset in [`View::text`] where new content starts
    /// (`text().len()` when nothing is new).
    pub new_from: usize,
    /// The text is not a continuation of what conditions saw before, so
    /// they rescan it and forget earlier hits.
    pub reset: bool,
    /// The view's text differs from the previous sample's.
    pub changed: bool,
}

/// The view of one wait.
#[derive(Clone)]
pub(crate) struct View {
    kind: ViewKind,
    mode: ProbeMode,
    /// Whole view: the latest observation. Fresh view: what is new since
    /// entry (bounded: the oldest lines are dropped past `keep`).
    text: String,
    /// Fresh snapshot view: the previous observation, to diff against.
    anchor: String,
    /// Whether anything new was seen since entry.
    has_output: bool,
    /// Whole view: whether an observation was taken in.
    sampled: bool,
    /// The most fresh text kept.
    keep: usize,
    samples: u64,
}

impl View {
    /// A view; `anchor` seeds a fresh snapshot view (a resumed wait).
    pub fn new(kind: ViewKind, mode: ProbeMode, keep: usize, anchor: Option<String>) -> Self {
        let seeded = anchor.is_some();
        Self {
            kind,
            mode,
            text: String::new(),
            anchor: anchor.unwrap_or_default(),
            has_output: false,
            sampled: false,
            keep,
            samples: u64::from(seeded),
        }
    }

    /// The text conditions read.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The last observation as the probe gave it (for the tail), or the
    /// fresh text of a stream.
    pub fn display(&self) -> &str {
        match (self.kind, self.mode) {
            (ViewKind::Fresh, ProbeMode::Snapshot) => &self.anchor,
            _ => &self.text,
        }
    }

    /// Whether anything new appeared since the wait began.
    pub fn has_output(&self) -> bool {
        self.has_output
    }

    /// Whether the first sample only set the anchor (fresh snapshot view
    /// before its second sample): nothing was compared yet.
    pub fn is_entry(&self) -> bool {
        self.kind == ViewKind::Fresh && self.mode == ProbeMode::Snapshot && self.samples == 1
    }

    /// Takes in one observation's text.
    pub fn update(&mut self, observed: String) -> Update {
        self.samples += 1;
        match (self.kind, self.mode) {
            (ViewKind::Whole, _) => self.replace_whole(observed),
            (ViewKind::Fresh, ProbeMode::Stream) => self.append(&observed, false),
            (ViewKind::Fresh, ProbeMode::Snapshot) => self.diff_snapshot(observed),
        }
    }

    fn replace_whole(&mut self, observed: String) -> Update {
        // One pass over the bytes at most: a continuation of the same
        // length is the same text.
        let continues = self.samples > 1 && observed.starts_with(self.text.as_str());
        let changed = self.samples == 1 || !continues || observed.len() != self.text.len();
        let new_from = if continues { self.text.len() } else { 0 };
        // New output: a sample unlike the first. Until one is, every sample
        // equals the first, so comparing with the previous one is enough,
        // and no copy of the first is kept.
        self.has_output |= self.sampled && changed;
        self.sampled = true;
        self.text = observed;
        Update {
            new_from,
            reset: !continues,
            changed,
        }
    }

    fn diff_snapshot(&mut self, observed: String) -> Update {
        if self.samples == 1 {
            // The entry snapshot is the anchor: none of it is fresh.
            self.anchor = observed;
            return self.nothing_new();
        }
        let update = match snapshot_diff::diff(&self.anchor, &observed) {
            Change::Appended(text) => {
                let text = text.to_string();
                self.append(&text, false)
            }
            Change::Scrolled(text) => self.append(&text, false),
            Change::Replaced(text) => {
                let text = text.to_string();
                self.append(&text, true)
            }
        };
        self.anchor = observed;
        update
    }

    fn nothing_new(&self) -> Update {
        Update {
            new_from: self.text.len(),
            reset: false,
            changed: false,
        }
    }

    /// Appends new text; `separate` starts it on a line of its own.
    fn append(&mut self, new: &str, separate: bool) -> Update {
        if new.is_empty() {
            return self.nothing_new();
        }
        self.drop_oldest(new.len());
        if separate && !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        let new_from = self.text.len();
        self.text.push_str(new);
        self.has_output = true;
        Update {
            new_from,
            reset: false,
            changed: true,
        }
    }

    /// Keeps the fresh text within `keep` bytes, dropping whole lines from
    /// the front. Conditions remember hits, not offsets, so this is safe.
    fn drop_oldest(&mut self, incoming: usize) {
        let excess = (self.text.len() + incoming).saturating_sub(self.keep);
        if excess == 0 {
            return;
        }
        let cut = match self.text[excess.min(self.text.len())..].find('\n') {
            Some(i) => excess + i + 1,
            None => self.text.len(),
        };
        self.text.drain(..cut);
    }

    /// The last lines of the snapshot anchor, for a resume token.
    pub fn anchor_lines(&self, count: usize) -> Vec<String> {
        let text = snapshot_diff::trim_blank_end(&self.anchor);
        let lines: Vec<&str> = text.split('\n').collect();
        lines[lines.len().saturating_sub(count)..]
            .iter()
            .map(|l| l.to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh_snapshot() -> View {
        View::new(ViewKind::Fresh, ProbeMode::Snapshot, 1 << 20, None)
    }

    #[test]
    fn whole_view_detects_continuation() {
        let mut v = View::new(ViewKind::Whole, ProbeMode::Snapshot, 1 << 20, None);
        let u = v.update("abc".into());
        assert!(u.reset && u.changed && u.new_from == 0);
        let u = v.update("abcdef".into());
        assert_eq!((u.new_from, u.reset, u.changed), (3, false, true));
        assert!(v.has_output());
        let u = v.update("xyz".into());
        assert!(u.reset && u.new_from == 0);
        let u = v.update("xyz".into());
        assert!(!u.changed);
    }

    #[test]
    fn fresh_view_ignores_the_entry_snapshot() {
        let mut v = fresh_snapshot();
        v.update("$ make\nready\n".into());
        assert_eq!(v.text(), "");
        assert!(!v.has_output());
        let u = v.update("$ make\nready\nready\n".into());
        assert_eq!(v.text(), "\nready");
        assert_eq!(u.new_from, 0);
    }

    #[test]
    fn fresh_view_after_clear_starts_a_new_line() {
        let mut v = fresh_snapshot();
        v.update("a".into());
        v.update("a\nb".into());
        v.update("zzz".into());
        assert_eq!(v.text(), "\nb\nzzz");
    }

    #[test]
    fn fresh_stream_appends_and_stays_bounded() {
        let mut v = View::new(ViewKind::Fresh, ProbeMode::Stream, 8, None);
        v.update("line1\n".into());
        let u = v.update("line2\nl3".into());
        assert_eq!(v.text(), "line2\nl3");
        assert_eq!(u.new_from, 0);
    }

    #[test]
    fn seeded_anchor_makes_the_first_sample_comparable() {
        let mut v = View::new(
            ViewKind::Fresh,
            ProbeMode::Snapshot,
            1 << 20,
            Some("a\nb".into()),
        );
        v.update("a\nb\nc".into());
        assert_eq!(v.text(), "\nc");
    }
}
