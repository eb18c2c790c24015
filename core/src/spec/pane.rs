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
