//! Which tmux pane a spec names: data only, so a spec naming a pane
//! parses on every platform (the tmux client itself is Unix-only).

/// Which pane to watch, in the Python seed's order of precedence: `pane_id`,
/// then `window_id` (its active pane), `session_id`, `session_name` (the
/// active pane of the session's active window), then `target` (any tmux
/// target string, as the C++ seed takes it), else the first session (sessions
/// sort by name, as `list-sessions` shows them).
///
/// ```
/// let t = waitfor::tmux::PaneTarget { session_name: Some("build".into()), ..Default::default() };
/// assert!(t.pane_id.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaneTarget {
    /// Pane id such as `%3`; matched exactly.
    pub pane_id: Option<String>,
    /// Window id such as `@2`; matched exactly.
    pub window_id: Option<String>,
    /// Session id such as `$1`; matched exactly.
    pub session_id: Option<String>,
    /// Session name; matched exactly (tmux's own `-t` would match a prefix).
    pub session_name: Option<String>,
    /// A tmux target (`sess:1.2`, `%3`), resolved by tmux itself.
    pub target: Option<String>,
}

/// Which pane a window or session target stands for. The engine takes
/// the active pane: it is the one a person at that window is looking at
/// and typing into. libtmux-mcp deliberately takes the first; its profile
/// does so, and a spec may ask for it (`"pick": "first"`).
///
/// ```
/// assert_eq!(waitfor::tmux::PanePick::default(), waitfor::tmux::PanePick::Active);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PanePick {
    /// The active pane of the window (of the session's active window).
    #[default]
    Active,
    /// The first pane of the window (of the session's first window), as
    /// libtmux-mcp resolves it.
    First,
}

/// Which rows of the region count as written after the wait began.
///
/// The engine's rule ([`Freshness::ByRow`]) is the default because it sees
/// what libtmux-mcp's cannot: output that repeats a line already on the
/// screen (a second `OK`, the same prompt again). And on the entry row it
/// counts only what came after the cursor, so a prompt or command line
/// already there cannot match. libtmux-mcp's rule ([`Freshness::ByContent`])
/// is what its profile uses, and a spec may ask for it
/// (`"freshness": "by_content"`).
///
/// ```
/// assert_eq!(waitfor::tmux::Freshness::default(), waitfor::tmux::Freshness::ByRow);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Freshness {
    /// By position (see the `tmux::pane_probe` module): the new part of the
    /// entry cursor row, and rows below it that differ from what the same
    /// row showed at entry, with the host's echo blanked.
    #[default]
    ByRow,
    /// libtmux-mcp's rule: every row from the entry cursor row down, as
    /// `capture-pane -J` prints it (trailing blank rows dropped), whose
    /// content is not one of the contents those rows had at entry. Rows
    /// count whole and unmasked. The observation is each such row
    /// followed by `\n`, so no new row reads as empty text and one empty
    /// new row does not.
    ByContent,
}
