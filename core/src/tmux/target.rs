//! What a tmux wait names, on every platform: the pane, and why a host
//! without Unix cannot watch it.

/// Why a tmux wait is refused on a host that is not Unix (Windows): tmux
/// runs on Unix only.
///
/// ```
/// assert!(waitfor::tmux::NEEDS_UNIX_HOST.contains("Unix"));
/// ```
pub const NEEDS_UNIX_HOST: &str =
    "tmux waits need a Unix host (Linux, macOS, BSD): tmux does not run here";

pub use crate::pane_id::parse_pane_id;
pub use crate::spec::{Freshness, PanePick, PaneTarget};
