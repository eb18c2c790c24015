//! libwaitfor for C and C++ hosts: the C ABI over the `waitfor` engine.
//!
//! Every export is `waitfor_*`, runs inside one panic guard (`guard.rs`),
//! reads `(const char *ptr, size_t len)` UTF-8 inputs and gives
//! library-allocated strings that only `waitfor_string_free` frees.
//! Status codes come from an append-only table ([`status`]). cbindgen turns
//! this crate into `include/waitfor.h` (see `build.rs`); the header is the
//! API documentation, so every export's comment states ownership and
//! threading.
#![allow(non_camel_case_types)]

pub mod callbacks;
pub mod echo;
mod guard;
pub mod handle;
pub mod host;
pub mod info;
pub mod status;
