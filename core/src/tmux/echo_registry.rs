//! The process-wide echo registry: where a host records the keys it typed
//! into panes, so that waits on those panes discount the echo.
//!
//! A tool server that sends keys to a pane (a `send_keys` tool) calls
//! [`record_keys`] (or [`record_send_keys`] with the `send-keys` arguments)
//! right after tmux accepted them. Every pane wait of this process reads
//! the same [`echo_log`], so the typed input and the recently submitted
//! lines of that pane are masked before matching (see [`super::echo`]).
//! Records are keyed by socket and pane id, so `%0` on two servers never
//! mix; they expire on their own.
//!
//! ```
//! use waitfor::tmux::{echo_log, echo_key, record_keys, Key};
//! record_keys(Some("doc-socket"), "%7", &[Key::text("make test"), Key::Enter]);
//! let now = std::time::Instant::now();
//! assert_eq!(echo_log().recent(&echo_key(Some("doc-socket"), "%7"), now), ["make test"]);
//! ```

use super::echo::{EchoLog, Key};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

static LOG: OnceLock<Arc<EchoLog>> = OnceLock::new();

/// The process-wide echo log that pane waits read by default.
pub fn echo_log() -> Arc<EchoLog> {
    Arc::clone(LOG.get_or_init(|| Arc::new(EchoLog::new())))
}

/// The key of a pane in an [`EchoLog`]: its socket name (`None` for the
/// default socket) and its `%N` id.
///
/// ```
/// assert_ne!(waitfor::tmux::echo_key(None, "%1"), waitfor::tmux::echo_key(Some("x"), "%1"));
/// ```
pub fn echo_key(socket_name: Option<&str>, pane_id: &str) -> String {
    format!("{}\u{0}{pane_id}", socket_name.unwrap_or(""))
}

/// Records, now, that this process sent `keys` to pane `pane_id` (`%N`) of
/// the tmux server on `socket_name`.
pub fn record_keys(socket_name: Option<&str>, pane_id: &str, keys: &[Key]) {
    echo_log().record(&echo_key(socket_name, pane_id), keys, Instant::now());
}

/// Records a `send-keys` call by its key arguments: with `literal` (`-l`)
/// each argument is text, otherwise each is a tmux key name
/// ([`Key::from_tmux_name`]); `enter` adds a final `Enter`.
///
/// ```
/// use waitfor::tmux::{echo_log, echo_key, record_send_keys};
/// record_send_keys(Some("doc-send"), "%2", &["ls -l"], true, true);
/// let now = std::time::Instant::now();
/// assert_eq!(echo_log().recent(&echo_key(Some("doc-send"), "%2"), now), ["ls -l"]);
/// ```
pub fn record_send_keys(
    socket_name: Option<&str>,
    pane_id: &str,
    args: &[&str],
    literal: bool,
    enter: bool,
) {
    let mut keys: Vec<Key> = args
        .iter()
        .map(|a| {
            if literal {
                Key::text(*a)
            } else {
                Key::from_tmux_name(a)
            }
        })
        .collect();
    if enter {
        keys.push(Key::Enter);
    }
    record_keys(socket_name, pane_id, &keys);
}
