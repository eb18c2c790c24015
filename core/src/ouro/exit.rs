//! [`wait_exit`]: the exit code a wait gives, through the tool's exit table.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::envelope::{Wait, WaitState};

/// A tool's exit codes by name, such as `{"ok": 0, "error": 1}`.
///
/// ```
/// let t: waitfor::ouro::ExitTable = [("ok".to_string(), 0)].into();
/// assert_eq!(t["ok"], 0);
/// ```
pub type ExitTable = BTreeMap<String, i32>;

/// The exit code used when a state's name is missing from the table: a
/// generic failure, so a misconfigured table never reports success.
///
/// ```
/// assert_eq!(waitfor::ouro::UNKNOWN_EXIT, 1);
/// ```
pub const UNKNOWN_EXIT: i32 = 1;

/// Exit code names by wait state: which entry of the [`ExitTable`] each
/// state uses. Serializes with the state names as keys.
///
/// ```
/// use waitfor::ouro::DEFAULT_WAIT_EXITS;
/// assert_eq!(serde_json::to_value(&DEFAULT_WAIT_EXITS).unwrap(), serde_json::json!(
///     {"satisfied": "ok", "waiting": "ok", "timed-out": "error", "gone": "error"}));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitExits {
    /// The name for `satisfied`.
    pub satisfied: Cow<'static, str>,
    /// The name for `waiting`.
    pub waiting: Cow<'static, str>,
    /// The name for `timed-out`.
    #[serde(rename = "timed-out")]
    pub timed_out: Cow<'static, str>,
    /// The name for `gone`.
    pub gone: Cow<'static, str>,
}

impl WaitExits {
    /// The name this table gives a state.
    ///
    /// ```
    /// use waitfor::ouro::{WaitState, DEFAULT_WAIT_EXITS};
    /// assert_eq!(DEFAULT_WAIT_EXITS.name(WaitState::Gone), "error");
    /// ```
    pub fn name(&self, state: WaitState) -> &str {
        match state {
            WaitState::Satisfied => &self.satisfied,
            WaitState::Waiting => &self.waiting,
            WaitState::TimedOut => &self.timed_out,
            WaitState::Gone => &self.gone,
        }
    }
}

/// The default: a satisfied or open (`waiting`) wait exits `ok`; a wait that
/// timed out or can no longer happen exits `error`.
///
/// ```
/// assert_eq!(waitfor::ouro::DEFAULT_WAIT_EXITS.satisfied, "ok");
/// ```
pub const DEFAULT_WAIT_EXITS: WaitExits = WaitExits {
    satisfied: Cow::Borrowed("ok"),
    waiting: Cow::Borrowed("ok"),
    timed_out: Cow::Borrowed("error"),
    gone: Cow::Borrowed("error"),
};

/// The smallest exit table the default names need: `ok` is 0, `error` is 1.
///
/// ```
/// assert_eq!(waitfor::ouro::default_exit_table()["error"], 1);
/// ```
pub fn default_exit_table() -> ExitTable {
    [("ok".to_string(), 0), ("error".to_string(), 1)].into()
}

/// The exit code a wait gives: its state's name (from `names`, else
/// [`DEFAULT_WAIT_EXITS`]) looked up in `exits`; [`UNKNOWN_EXIT`] when the
/// table has no such name.
///
/// ```
/// use waitfor::ouro::{default_exit_table, wait, wait_exit, WaitFields, WaitState};
/// let w = wait(WaitFields::new("deploy", WaitState::Gone, "t0")).unwrap();
/// assert_eq!(wait_exit(&w, &default_exit_table(), None), 1);
/// ```
pub fn wait_exit(w: &Wait, exits: &ExitTable, names: Option<&WaitExits>) -> i32 {
    let names = names.unwrap_or(&DEFAULT_WAIT_EXITS);
    exits
        .get(names.name(w.state))
        .copied()
        .unwrap_or(UNKNOWN_EXIT)
}
