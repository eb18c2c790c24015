//! Echo recording for tmux panes: a host that types into a pane records
//! the keys in the core's process-wide registry, so every pane wait of
//! this process discounts their echo (the typed command line is not new
//! output).

use napi_derive::napi;

/// What a host sent to a pane with `tmux send-keys` (internal; see the
/// package's `recordSendKeys`).
#[napi(object)]
pub struct SendKeys {
    /// `tmux -L` socket name; absent for the default server.
    pub socket_name: Option<String>,
    /// The pane's `%N` id.
    pub pane_id: String,
    /// The `send-keys` key arguments: text with `literal`, otherwise tmux
    /// key names (`C-c`, `Enter`, a single character, ...).
    pub keys: Vec<String>,
    /// `send-keys -l`: every argument is literal text.
    pub literal: Option<bool>,
    /// A final `Enter` was sent.
    pub enter: Option<bool>,
}

/// Records, now, keys this process sent to a pane (internal; see the
/// package's `recordSendKeys`).
#[napi]
pub fn record_send_keys(sent: SendKeys) {
    let keys: Vec<&str> = sent.keys.iter().map(String::as_str).collect();
    waitfor::tmux::record_send_keys(
        sent.socket_name.as_deref(),
        &sent.pane_id,
        &keys,
        sent.literal.unwrap_or(false),
        sent.enter.unwrap_or(false),
    );
}
