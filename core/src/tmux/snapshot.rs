//! One sample of a pane: its facts and its content joined across soft wraps.
//!
//! # Absolute rows
//!
//! tmux numbers the rows of a pane's grid from the oldest history row (0)
//! down to the bottom of the visible screen (`history_size + pane_height -
//! 1`); visible row `y` is absolute row `history_size + y`. While output
//! scrolls, rows move from the screen into history, `history_size` grows by
//! the same amount, and the absolute number of every row stays the same. So
//! the fresh view anchors at entry on `history_size + cursor_y`
//! ([`PaneSnapshot::cursor_row`]) and asks each later sample for
//! [`Rows::From`] that row: nothing is lost or repeated however much scrolled
//! in between.
//!
//! The anchor is only valid while `history_size` never goes down. It goes
//! down when history is cleared (`clear-history`, `reset`), and when the
//! history is full: tmux then drops the oldest rows, a tenth of
//! `history_limit` at a time, and every absolute number shifts. A caller that
//! sees `history_size` shrink must treat its anchor as lost.
//!
//! # Rows and joined lines
//!
//! A line longer than the pane is soft-wrapped over several rows. A snapshot
//! returns *lines* joined across soft wraps (as `capture-pane -J`), each with
//! the absolute row it starts on ([`PaneSnapshot::line_rows`]); a line
//! covers the rows from its start up to the next line's start. When a joined
//! line started above the requested first row, only its part from that row
//! on is returned, starting at that row: text written before the anchor
//! never reaches the caller.
//!
//! tmux reports no per-row wrap flag, so the one tmux invocation per sample
//! runs `display-message` (the facts), `capture-pane -N` (one output line
//! per row, exact) and `capture-pane -J` (joined), and lines the two
//! captures up: a joined line is exactly the concatenation of its rows.
//! tmux runs the commands of one invocation back to back, so the three see
//! the same grid. If the two captures ever fail to line up (an emptied
//! continuation row), [`PaneSnapshot::rows_exact`] is false and the joined
//! lines are returned with best-effort start rows.
//!
//! Measured with tmux 3.3a (80x24 pane): the combined invocation takes about
//! 4.5 ms per sample, a bare `capture-pane` 3.8 ms, and `display-message`
//! plus `capture-pane` as two invocations 8.2 ms: process start-up dominates,
//! the second capture costs little.
//!
//! `capture-pane -S` counts from the top of the visible screen, which moves
//! as history grows, so a request for absolute row `n` passes the history
//! size seen last time as a hint and captures [`MARGIN`] rows more. When the
//! history grew by more than that since the hint, the sample is retaken at
//! once with the fresh size and room for as much growth again (a second
//! invocation; rare), up to [`MAX_INVOCATIONS`] while output scrolls that
//! fast.

use super::{ServerIdentity, Tmux, TmuxError};
use crate::CancelToken;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

/// Extra rows captured above a [`Rows::From`] request, to absorb history
/// growth since the hint without a second invocation.
pub const MARGIN: u64 = 32;

/// The most tmux invocations one sample takes: the first and its retakes
/// while the history outruns the margin (see the module's doc).
///
/// ```
/// assert_eq!(waitfor::tmux::MAX_INVOCATIONS, 3);
/// ```
pub const MAX_INVOCATIONS: u32 = 3;

const FACTS: &str = "#{pane_id}\t#{history_size}\t#{history_limit}\t#{cursor_x}\t#{cursor_y}\t\
#{pane_height}\t#{pane_width}\t#{alternate_on}\t#{pane_dead}\t#{pane_pid}\t#{pane_in_mode}\t#{pane_dead_status}\t\
#{pid}\t#{start_time}\t#{socket_path}";

/// Which rows a snapshot captures (always down to the bottom of the screen).
///
/// ```
/// use waitfor::tmux::Rows;
/// let r = Rows::from_row(120, 100);
/// assert_eq!(r, Rows::From { row: 120, history_hint: 100 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    /// The visible screen only.
    Visible,
    /// All history and the screen.
    All,
    /// From absolute row `row` to the bottom of the screen. `history_hint`
    /// is the `history_size` of an earlier snapshot of the same pane (the
    /// one that gave the anchor will do).
    From {
        /// Absolute row (see the module docs).
        row: u64,
        /// A recent `history_size` of the pane.
        history_hint: u64,
    },
}

impl Rows {
    /// [`Rows::From`] `row`, with a recent history size as hint.
    pub fn from_row(row: u64, history_hint: u64) -> Self {
        Rows::From { row, history_hint }
    }
}

/// One sample of a pane.
///
/// ```
/// let s = waitfor::tmux::PaneSnapshot { history_size: 10, cursor_y: 3, ..Default::default() };
/// assert_eq!(s.cursor_row(), 13);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaneSnapshot {
    /// `%N`.
    pub pane_id: String,
    /// Content joined across soft wraps, trailing spaces removed, from
    /// [`PaneSnapshot::first_row`] to the bottom of the screen.
    pub lines: Vec<String>,
    /// The same lines as `capture-pane -J` prints them: spaces the
    /// program wrote at the end of a line are kept (a prompt's `"$ "`).
    pub printed_lines: Vec<String>,
    /// The visible screen row by row, not joined, trailing spaces removed:
    /// what `capture-pane -p` prints, one entry per row.
    pub screen_rows: Vec<String>,
    /// The visible screen as `capture-pane -p -J` prints it, one entry per
    /// line: rows joined across soft wraps, spaces written at the end of a
    /// line kept; a line wrapped in from the history starts at the top row.
    pub joined_screen: Vec<String>,
    /// Absolute row on which each of `lines` starts.
    pub line_rows: Vec<u64>,
    /// Absolute row of the first captured row (the start of `lines[0]`).
    pub first_row: u64,
    /// Rows in history above the visible screen.
    pub history_size: u64,
    /// Most rows the history keeps.
    pub history_limit: u64,
    /// Cursor column.
    pub cursor_x: u32,
    /// Cursor row within the visible screen.
    pub cursor_y: u32,
    /// Visible rows.
    pub pane_height: u32,
    /// Visible columns.
    pub pane_width: u32,
    /// Whether the pane is on the alternate screen (a pager, an editor).
    pub alternate_on: bool,
    /// Whether the pane's program exited (kept by `remain-on-exit`).
    pub pane_dead: bool,
    /// Exit status of a dead pane's program, when tmux knows it.
    pub pane_dead_status: Option<i32>,
    /// Pid of the pane's program (changes when the pane is respawned).
    pub pane_pid: Option<u32>,
    /// Whether the pane is in a mode such as copy mode (the capture still
    /// shows the pane's own content, not the mode's view).
    pub pane_in_mode: bool,
    /// Whether `line_rows` are exact (see the module docs).
    pub rows_exact: bool,
    /// The tmux server the pane belongs to.
    pub server: ServerIdentity,
    /// tmux invocations this sample took (1, or more after retakes, at
    /// most [`MAX_INVOCATIONS`]).
    pub invocations: u32,
}

/// What a capture tells of a pane beyond its text, the facts a change made
/// without output (a kill, a respawn, a resize, `clear-history`) alters; a
/// pane's watches compare them to share one periodic capture (see
/// [`super::ControlClient::check_turn`]).
///
/// ```
/// let s = waitfor::tmux::PaneSnapshot { history_size: 7, ..Default::default() };
/// let mut cleared = s.clone();
/// cleared.history_size = 0;
/// assert_ne!(s.facts(), cleared.facts());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PaneFacts {
    pane_pid: Option<u32>,
    pane_dead: bool,
    history_size: u64,
    size: (u32, u32),
    cursor: (u32, u32),
    alternate_on: bool,
    /// A hash of the visible screen: a pane redrawn in place (a progress
    /// line rewritten after `\r`) while its `%output` reaches no client of
    /// ours (its window moved to another session) still differs.
    screen: u64,
    gone: bool,
}

impl PaneFacts {
    /// The facts of a pane that no longer exists: they equal no capture's.
    ///
    /// ```
    /// use waitfor::tmux::{PaneFacts, PaneSnapshot};
    /// assert_ne!(PaneFacts::gone(), PaneSnapshot::default().facts());
    /// ```
    pub fn gone() -> Self {
        Self {
            gone: true,
            ..Self::default()
        }
    }
}

impl PaneSnapshot {
    /// The pane's [`PaneFacts`] at this capture.
    pub fn facts(&self) -> PaneFacts {
        PaneFacts {
            pane_pid: self.pane_pid,
            pane_dead: self.pane_dead,
            history_size: self.history_size,
            size: (self.pane_width, self.pane_height),
            cursor: (self.cursor_x, self.cursor_y),
            alternate_on: self.alternate_on,
            screen: {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                self.screen_rows.hash(&mut hasher);
                hasher.finish()
            },
            gone: false,
        }
    }

    /// Absolute row of the cursor: `history_size + cursor_y`; the fresh
    /// view's entry anchor.
    pub fn cursor_row(&self) -> u64 {
        self.history_size + u64::from(self.cursor_y)
    }

    /// One past the absolute row of the bottom of the screen.
    pub fn end_row(&self) -> u64 {
        self.history_size + u64::from(self.pane_height)
    }

    /// Index in `lines` of the line that covers absolute row `row`.
    ///
    /// ```
    /// let s = waitfor::tmux::PaneSnapshot {
    ///     lines: vec!["a".into(), "long".into(), "b".into()],
    ///     line_rows: vec![5, 6, 8],
    ///     first_row: 5, history_size: 5, pane_height: 4,
    ///     ..Default::default()
    /// };
    /// assert_eq!(s.line_at_row(7), Some(1));
    /// assert_eq!(s.line_at_row(4), None);
    /// assert_eq!(s.line_at_row(9), None);
    /// ```
    pub fn line_at_row(&self, row: u64) -> Option<usize> {
        if row < self.first_row || row >= self.end_row() {
            return None;
        }
        match self.line_rows.binary_search(&row) {
            Ok(i) => Some(i),
            Err(0) => None,
            Err(i) => Some(i - 1),
        }
    }

    /// The visible screen as `capture-pane -p -J` prints it: each line
    /// joined across soft wraps and a newline.
    ///
    /// ```
    /// let s = waitfor::tmux::PaneSnapshot {
    ///     joined_screen: vec!["$ ls".into(), "$ ".into()],
    ///     ..Default::default()
    /// };
    /// assert_eq!(s.joined_screen_text(), "$ ls\n$ \n");
    /// ```
    pub fn joined_screen_text(&self) -> String {
        self.joined_screen
            .iter()
            .map(|r| format!("{r}\n"))
            .collect()
    }

    /// Index in `lines` of the line holding the cursor.
    pub fn cursor_line(&self) -> Option<usize> {
        self.line_at_row(self.cursor_row())
    }
}

struct Facts {
    pane_id: String,
    history_size: u64,
    history_limit: u64,
    cursor_x: u32,
    cursor_y: u32,
    pane_height: u32,
    pane_width: u32,
    alternate_on: bool,
    pane_dead: bool,
    pane_pid: Option<u32>,
    pane_in_mode: bool,
    pane_dead_status: Option<i32>,
    server: ServerIdentity,
}

fn parse_facts(line: &str) -> Result<Facts, TmuxError> {
    // The socket path comes last, so a tab inside it cannot shift fields.
    let f: Vec<&str> = line.splitn(15, '\t').collect();
    let bad = || TmuxError::unexpected("pane facts", line);
    if f.len() != 15 {
        return Err(bad());
    }
    let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
    let small = |s: &str| s.parse::<u32>().map_err(|_| bad());
    Ok(Facts {
        pane_id: f[0].to_string(),
        history_size: num(f[1])?,
        history_limit: num(f[2])?,
        cursor_x: small(f[3])?,
        cursor_y: small(f[4])?,
        pane_height: small(f[5])?,
        pane_width: small(f[6])?,
        alternate_on: f[7] == "1",
        pane_dead: f[8] == "1",
        pane_pid: f[9].parse().ok(),
        pane_in_mode: f[10] != "0" && !f[10].is_empty(),
        pane_dead_status: f[11].parse().ok(),
        server: ServerIdentity {
            socket_path: f[14].to_string(),
            pid: small(f[12])?,
            start_time: num(f[13])?,
        },
    })
}

/// The top row tmux's `capture-pane -S start` picks, as an absolute row,
/// on a pane of `history_size` and `pane_height`.
pub(crate) fn capture_top(start: Option<i64>, history_size: u64, pane_height: u32) -> u64 {
    // Saturating: the numbers come from tmux's output, whatever it says.
    let hs = i64::try_from(history_size).unwrap_or(i64::MAX);
    let last = hs.saturating_add(i64::from(pane_height.max(1)) - 1);
    let top = match start {
        None => 0,
        Some(n) => hs.saturating_add(n),
    };
    top.min(last).max(0) as u64
}

impl Tmux {
    /// Takes one sample of `pane_id` (an exact `%N` id from
    /// [`Tmux::resolve_pane`]): the facts and the rows asked for, in one
    /// tmux invocation (see the module docs for the rare second one).
    pub fn snapshot(
        &self,
        pane_id: &str,
        rows: Rows,
        budget: Duration,
        cancel: &CancelToken,
    ) -> Result<PaneSnapshot, TmuxError> {
        let deadline = super::deadline_in(budget);
        snapshot_through(rows, |s_arg| {
            let args = [
                "display-message",
                "-p",
                "-t",
                pane_id,
                FACTS,
                ";",
                "capture-pane",
                "-p",
                "-N",
                "-t",
                pane_id,
                "-S",
                s_arg,
                ";",
                "capture-pane",
                "-p",
                "-J",
                "-t",
                pane_id,
                "-S",
                s_arg,
            ];
            let remaining = deadline.saturating_duration_since(Instant::now());
            self.run(&args, remaining, cancel)
        })
    }
}

/// A snapshot of `rows`, taken through `invoke`: one tmux invocation of
/// the facts and the two captures from `-S` its argument (a row number,
/// or `-`), giving what tmux printed. A real server's invocation
/// ([`Tmux::snapshot`]) or the simulator's scripted pane: both are read
/// the same way.
pub(crate) fn snapshot_through(
    rows: Rows,
    mut invoke: impl FnMut(&str) -> Result<String, TmuxError>,
) -> Result<PaneSnapshot, TmuxError> {
    let mut hint = match rows {
        Rows::From { history_hint, .. } => history_hint,
        _ => 0,
    };
    let mut margin = MARGIN;
    let mut invocations = 0;
    loop {
        let start: Option<i64> = match rows {
            Rows::Visible => Some(0),
            Rows::All => None,
            // Never below the top of the screen: the whole visible
            // screen is always captured (`screen_rows`).
            Rows::From { row, .. } => Some(
                (row as i64)
                    .saturating_sub(hint as i64)
                    .saturating_sub(margin as i64)
                    .min(0),
            ),
        };
        let s_arg = start.map_or_else(|| "-".to_string(), |n| n.to_string());
        let out = invoke(&s_arg)?;
        invocations += 1;
        let (facts_line, rest) = out
            .split_once('\n')
            .ok_or_else(|| TmuxError::Parse("empty capture".into()))?;
        let facts = parse_facts(facts_line)?;
        let top = capture_top(start, facts.history_size, facts.pane_height);
        if let Rows::From { row, .. } = rows {
            if top > row
                && invocations < MAX_INVOCATIONS
                && row < facts.history_size + u64::from(facts.pane_height)
            {
                // History grew by more than the margin since the hint: it
                // may grow as much again while the retake starts.
                let grown = facts.history_size.saturating_sub(hint);
                margin = MARGIN.saturating_add(grown);
                hint = facts.history_size;
                continue;
            }
        }
        let want_from = match rows {
            Rows::From { row, .. } => row.max(top),
            _ => top,
        };
        return assemble(facts, rest, top, want_from, invocations);
    }
}

/// Reads one invocation's output (the facts line, then the two captures)
/// as [`Tmux::snapshot`] does for `capture-pane -S start` and rows from
/// `from_row` on: the fuzz targets' way in, no tmux needed.
///
/// ```
/// let out = "%1\t0\t2000\t0\t0\t1\t4\t0\t0\t42\t0\t\t7\t1700000000\t/tmp/tmux-0/default\nab\nab\n";
/// let s = waitfor::tmux::snapshot::parse_capture(out, Some(0), None).unwrap();
/// assert_eq!(s.lines, ["ab"]);
/// ```
#[doc(hidden)]
pub fn parse_capture(
    out: &str,
    start: Option<i64>,
    from_row: Option<u64>,
) -> Result<PaneSnapshot, TmuxError> {
    let (facts_line, rest) = out
        .split_once('\n')
        .ok_or_else(|| TmuxError::Parse("empty capture".into()))?;
    let facts = parse_facts(facts_line)?;
    let top = capture_top(start, facts.history_size, facts.pane_height);
    assemble(
        facts,
        rest,
        top,
        from_row.map_or(top, |row| row.max(top)),
        1,
    )
}

fn split_lines(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text.split('\n').collect();
    if v.last() == Some(&"") {
        v.pop();
    }
    v
}

fn assemble(
    facts: Facts,
    rest: &str,
    top: u64,
    want_from: u64,
    invocations: u32,
) -> Result<PaneSnapshot, TmuxError> {
    // Saturating: the facts are tmux output, which a test or a broken server may fill with anything.
    let end = facts
        .history_size
        .saturating_add(u64::from(facts.pane_height));
    let nrows = end.saturating_sub(top) as usize;
    let all = split_lines(rest);
    if all.len() < nrows {
        return Err(TmuxError::Parse(format!(
            "expected {nrows} rows, got {} lines",
            all.len()
        )));
    }
    let (rows, joined) = all.split_at(nrows);
    let screen_rows = rows
        .get(facts.history_size.saturating_sub(top) as usize..)
        .unwrap_or_default()
        .iter()
        .map(|r| r.trim_end_matches(' ').to_string())
        .collect();

    // Line the joined capture up with the rows.
    let mut exact = true;
    let mut groups: Vec<(usize, usize)> = Vec::with_capacity(joined.len());
    let mut r = 0usize;
    for line in joined {
        let start = r;
        let mut acc = String::new();
        loop {
            if r >= rows.len() {
                exact = false;
                break;
            }
            acc.push_str(rows[r]);
            r += 1;
            if acc.len() >= line.len() {
                break;
            }
        }
        if acc != *line {
            exact = false;
        }
        groups.push((start, r.saturating_sub(start).max(1)));
    }
    if r != rows.len() {
        exact = false;
    }

    // The visible screen as `-S 0 -J` prints it: a line wrapped in from
    // the history starts at the top row.
    let screen_top = facts.history_size.saturating_sub(top) as usize;
    let joined_screen = joined
        .iter()
        .zip(&groups)
        .filter(|(_, &(start, count))| start + count > screen_top)
        .map(|(line, &(start, _))| {
            let above = if start < screen_top && exact {
                rows[start..screen_top].concat()
            } else {
                String::new()
            };
            line.strip_prefix(above.as_str())
                .unwrap_or(line)
                .to_string()
        })
        .collect();

    let mut lines = Vec::new();
    let mut printed_lines = Vec::new();
    let mut line_rows = Vec::new();
    for (line, &(start, count)) in joined.iter().zip(&groups) {
        let abs = top + start as u64;
        let abs_end = abs + count as u64;
        if abs_end <= want_from {
            continue;
        }
        let (printed, trimmed) = if abs >= want_from || !exact {
            (line.to_string(), line.trim_end_matches(' ').to_string())
        } else {
            // Rows (`-N`) are padded to the pane's width: keep the trimmed text.
            let from = (want_from - top) as usize;
            let cut = rows[from..start + count].concat();
            let cut = cut.trim_end_matches(' ').to_string();
            (cut.clone(), cut)
        };
        lines.push(trimmed);
        printed_lines.push(printed);
        line_rows.push(abs.max(want_from));
    }
    Ok(PaneSnapshot {
        pane_id: facts.pane_id,
        lines,
        printed_lines,
        screen_rows,
        joined_screen,
        line_rows,
        first_row: want_from,
        history_size: facts.history_size,
        history_limit: facts.history_limit,
        cursor_x: facts.cursor_x,
        cursor_y: facts.cursor_y,
        pane_height: facts.pane_height,
        pane_width: facts.pane_width,
        alternate_on: facts.alternate_on,
        pane_dead: facts.pane_dead,
        pane_dead_status: facts.pane_dead_status,
        pane_pid: facts.pane_pid,
        pane_in_mode: facts.pane_in_mode,
        rows_exact: exact,
        server: facts.server,
        invocations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(hs: u64, height: u32) -> Facts {
        parse_facts(&format!(
            "%1\t{hs}\t2000\t0\t0\t{height}\t4\t0\t0\t42\t0\t\t7\t1700000000\t/tmp/s"
        ))
        .unwrap()
    }

    #[test]
    fn joined_lines_get_their_start_rows() {
        // Width 4: "abcdefgh" wraps over rows 10 and 11.
        let rest = "x\nabcd\nefgh\ny\nx\nabcdefgh\ny\n";
        let s = assemble(facts(10, 3), rest, 9, 9, 1).unwrap();
        assert!(s.rows_exact);
        assert_eq!(s.lines, ["x", "abcdefgh", "y"]);
        assert_eq!(s.line_rows, [9, 10, 12]);
        assert_eq!(s.line_at_row(11), Some(1));
    }

    #[test]
    fn the_joined_screen_starts_at_the_top_row() {
        // Width 4, screen rows 10..13: "abcdefgh" wraps in from row 9.
        let rest = "x\nabcd\nefgh\n$ \n\nx\nabcdefgh\n$ \n\n";
        let s = assemble(facts(10, 3), rest, 8, 8, 1).unwrap();
        assert_eq!(s.joined_screen, ["efgh", "$ ", ""]);
        assert_eq!(s.joined_screen_text(), "efgh\n$ \n\n");
        // Captured from the top: every line whole, a prompt's space kept.
        let s = assemble(facts(10, 3), "x\nabcd\nefgh\nx\nabcdefgh\n", 10, 10, 1).unwrap();
        assert_eq!(s.joined_screen, ["x", "abcdefgh"]);
    }

    #[test]
    fn a_line_cut_by_the_anchor_keeps_only_rows_from_the_anchor() {
        let rest = "x\nabcd\nefgh\ny\nx\nabcdefgh\ny\n";
        let s = assemble(facts(10, 3), rest, 9, 11, 1).unwrap();
        assert_eq!(s.lines, ["efgh", "y"]);
        assert_eq!(s.line_rows, [11, 12]);
        assert_eq!(s.first_row, 11);
    }

    #[test]
    fn bad_facts_are_a_parse_error() {
        assert!(matches!(parse_facts("%1\tx"), Err(TmuxError::Parse(_))));
        assert!(matches!(
            assemble(facts(0, 5), "a\n", 0, 0, 1),
            Err(TmuxError::Parse(_))
        ));
    }

    /// A sample from row 100 (hint 100) of a pane whose history grows by
    /// `growth[i]` rows before invocation `i`, row n reading "r{n}".
    fn sample_while_scrolling(growth: &[u64]) -> PaneSnapshot {
        let height = 5;
        let mut history = 100;
        let mut growth = growth.iter();
        snapshot_through(Rows::from_row(100, 100), |start| {
            history += growth.next().unwrap();
            let top = capture_top(Some(start.parse().unwrap()), history, height);
            let rows: String = (top..history + u64::from(height))
                .map(|n| format!("r{n}\n"))
                .collect();
            Ok(format!(
                "%1\t{history}\t2000\t0\t0\t{height}\t80\t0\t0\t42\t0\t\t7\t1700000000\t/tmp/s\n{rows}{rows}"
            ))
        })
        .unwrap()
    }

    #[test]
    fn history_outrunning_the_margin_again_is_retaken_with_no_row_lost() {
        // More than MARGIN rows before each invocation, as under fast
        // output: the retake leaves room for as much growth again...
        let snap = sample_while_scrolling(&[40, 40]);
        assert_eq!(snap.first_row, 100, "rows from the anchor on, none lost");
        assert_eq!(snap.lines.first().map(String::as_str), Some("r100"));
        assert_eq!(snap.invocations, 2);
        // ...and output that speeds up is retaken once more.
        let snap = sample_while_scrolling(&[40, 100, 100]);
        assert_eq!((snap.first_row, snap.invocations), (100, MAX_INVOCATIONS));
    }

    #[test]
    fn capture_top_follows_tmux_clamping() {
        assert_eq!(capture_top(None, 10, 5), 0);
        assert_eq!(capture_top(Some(-50), 10, 5), 0);
        assert_eq!(capture_top(Some(-3), 10, 5), 7);
        assert_eq!(capture_top(Some(2), 10, 5), 12);
        assert_eq!(capture_top(Some(99), 10, 5), 14);
        // Whatever numbers tmux prints, the sum saturates instead of panicking.
        assert_eq!(capture_top(Some(i64::MAX), u64::MAX, 5), i64::MAX as u64);
        assert_eq!(capture_top(Some(i64::MIN), u64::MAX, 5), 0);
    }
}
