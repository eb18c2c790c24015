//! libwaitfor: one "wait for a condition" engine for agent tool servers.

mod cancel;
pub mod duration;
pub mod ouro;

pub use cancel::CancelToken;
