//! The native half of the npm package `waitfor`: the libwaitfor engine for
//! Node through napi-rs.
//!
//! This crate exports low-level functions (see the generated `index.d.ts`);
//! the package's public API is the JavaScript layer in `lib/`, which turns
//! them into Promises, `AbortSignal` handling and typed errors. Nothing here
//! blocks the JavaScript thread or holds a libuv pool thread while a wait
//! runs: waits live on the engine's scheduler, JavaScript probes are called
//! through weak, callee-unhandled threadsafe functions, and results come
//! back through a threadsafe function that is released once it has been
//! called.

mod bridge;
mod errors;
mod ouro;
mod profiles;
mod waits;
