//! libwaitfor: one "wait for a condition" engine for agent tool servers.

mod cancel;
pub mod process;
pub mod tmux;

pub use cancel::CancelToken;
