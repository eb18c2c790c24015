//! The native half of the npm package `libwaitfor` (napi-rs). The public API
//! is the JavaScript layer in `lib/`; waits live on the engine's scheduler,
//! and what the engine has for JavaScript goes through one weak threadsafe
//! function per environment (`bridge`).

// The exports are only reached through Node's module registration, which
// a Rust test build does not have; the tests are the JavaScript ones.
#![cfg_attr(test, allow(dead_code))]

// jemalloc: on the system allocator a probe call through the engine cost
// 90-104 µs and 10,000 waits 0.26-0.28x p-wait-for's CPU, on jemalloc 61 µs
// and 0.19x (bench/node). Not mimalloc: 2.3 (crate 0.1.52) and 3.3 crash the
// process when the Worker that first loaded the add-on has ended and another
// Worker loads it (test/workers.test.js). Initial-exec TLS is off, as a
// library loaded with dlopen needs.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod bridge;
mod errors;
mod ouro;
mod profiles;
mod stepper;
mod surface;
mod waits;
