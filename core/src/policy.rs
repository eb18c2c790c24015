//! Server policy: limits the host sets, not the agent.

use crate::grants::Grants;
use std::time::Duration;

/// The output cap when the host sets none: 256 KiB.
pub const DEFAULT_OUTPUT_CAP: usize = 256 * 1024;

/// Limits a host (a tool server) imposes on every wait it runs.
///
/// ```
/// use std::time::Duration;
/// let policy = waitfor::Policy::default().max_wait_ceiling(Duration::from_secs(60));
/// assert_eq!(policy.output_cap, 256 * 1024);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// A requested `max_wait` above this is lowered to it, and the result
    /// says so (`clamped`).
    pub max_wait_ceiling: Duration,
    /// The largest observation a wait takes: a spec's `output_cap_bytes`
    /// may lower it, never raise it (an agent's spec must not lift the
    /// memory a host allows one wait).
    pub output_cap: usize,
    /// What the spec's built-in probes may reach (nothing by default).
    pub grants: Grants,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            max_wait_ceiling: Duration::from_secs(300),
            output_cap: DEFAULT_OUTPUT_CAP,
            grants: Grants::none(),
        }
    }
}

impl Policy {
    /// Sets the ceiling.
    pub fn max_wait_ceiling(mut self, ceiling: Duration) -> Self {
        self.max_wait_ceiling = ceiling;
        self
    }

    /// Sets the output cap (see [`Policy::output_cap`]).
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = bytes;
        self
    }

    /// Sets what the spec's built-in probes may reach.
    ///
    /// ```
    /// use waitfor::grants::{Commands, Grants};
    /// let policy = waitfor::Policy::default()
    ///     .grants(Grants::none().commands(Commands::Only(vec!["kubectl".into()])));
    /// assert!(policy.grants.file_roots.is_empty());
    /// ```
    pub fn grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }
}
