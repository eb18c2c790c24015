//! The native half of the npm package `waitfor`: the libwaitfor engine for
//! Node through napi-rs.
//!
//! This crate exports low-level functions (see the generated `index.d.ts`);
//! the package's public API is the JavaScript layer in `lib/`, which turns
//! them into Promises, `AbortSignal` handling and typed errors. Nothing here
//! blocks the JavaScript thread or holds a libuv pool thread while a wait
//! runs: waits live on the engine's scheduler, and everything the engine
//! has for JavaScript (due probe calls, finished waits, progress reports)
//! comes in batches through one weak, callee-unhandled threadsafe
//! function per JavaScript environment (see `channel` and `batch`).

// The exports are only reached through Node's module registration, which
// a Rust test build does not have; the tests are the JavaScript ones.
#![cfg_attr(test, allow(dead_code))]

mod answer;
mod batch;
mod bridge;
mod channel;
mod echo;
mod errors;
mod events;
mod ouro;
mod profiles;
mod replies;
mod surface;
mod waits;

/// The add-on's own allocator. 10,000 waits polling and ending together
/// allocate on the engine's threads and free on others; glibc's allocator
/// spent a good part of that time consolidating its free lists under its
/// arena locks. Built without asking for transparent huge pages (each
/// thread's first use would take a 2 MiB page: +25 MiB of RSS at 10,000
/// waits) and with the TLS model a `dlopen`ed library needs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
