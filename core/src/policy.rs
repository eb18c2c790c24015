//! Server policy: limits the host sets, not the agent.

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// A requested `max_wait` above this is lowered to it, and the result
    /// says so (`clamped`).
    pub max_wait_ceiling: Duration,
    /// The output cap for specs that set none.
    pub output_cap: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            max_wait_ceiling: Duration::from_secs(300),
            output_cap: DEFAULT_OUTPUT_CAP,
        }
    }
}

impl Policy {
    /// Sets the ceiling.
    pub fn max_wait_ceiling(mut self, ceiling: Duration) -> Self {
        self.max_wait_ceiling = ceiling;
        self
    }

    /// Sets the default output cap.
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = bytes;
        self
    }
}
