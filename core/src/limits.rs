//! The engine's fixed limits on what a host or an agent may ask for, in
//! one place: a request over one is refused with an error naming it.
//!
//! ```
//! use waitfor::limits::{MAX_PATTERNS, MAX_PATTERN_BYTES, MIN_INTERVAL};
//! assert!(MAX_PATTERNS > 0 && MAX_PATTERN_BYTES > 0);
//! assert!(MIN_INTERVAL.as_millis() > 0);
//! ```

pub use crate::error::MAX_SOCKET_NAME_BYTES;
pub use crate::fold_cost::MAX_FOLDED_CHARS;
pub use crate::input::MAX_INPUT_BYTES;
pub use crate::pattern::{
    MAX_COMPILED_PATTERN_BYTES, MAX_COMPILED_WAIT_BYTES, MAX_PATTERNS, MAX_PATTERN_BYTES,
    MAX_WAIT_SCRATCH_BYTES,
};
pub use crate::policy::DEFAULT_OUTPUT_CAP;
pub use crate::spec::MIN_INTERVAL;
