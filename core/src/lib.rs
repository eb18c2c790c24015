//! libwaitfor: one "wait for a condition" engine for agent tool servers.

mod cancel;
pub mod process;

pub use cancel::CancelToken;
