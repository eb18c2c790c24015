//! [`WAIT_FLAGS`]: the flags a wait command takes, shaped as ax-command flags.

use std::sync::LazyLock;

use serde_json::{json, Value};

/// The flags a wait command takes: how long to wait (`timeout`) and where to
/// resume from (`cursor`), each `{type, placeholder, description}`. Spread
/// them into a command's flags. The `timeout` description is the seed's; the
/// seed's `cursor` description is cut off, so its wording is this library's.
///
/// ```
/// let flags = &*waitfor::ouro::WAIT_FLAGS;
/// assert_eq!(flags["timeout"]["placeholder"], "<duration>");
/// assert_eq!(flags["cursor"]["type"], "string");
/// ```
pub static WAIT_FLAGS: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "timeout": {
            "type": "string",
            "placeholder": "<duration>",
            "description": "How long to wait, such as \"90s\" or \"5m\"; then it exits with a resume command."
        },
        "cursor": {
            "type": "string",
            "placeholder": "<cursor>",
            "description": "Where to resume from: the cursor a previous wait returned; only events after it count."
        }
    })
});
