//! The native half of the npm package `libwaitfor` (napi-rs); the public API
//! is the JavaScript layer in `lib/`. What the engine has for JavaScript
//! goes through one weak threadsafe function per environment (`bridge`).

// The exports are only reached through Node's module registration, which
// a Rust test build does not have; the tests are the JavaScript ones.
#![cfg_attr(test, allow(dead_code))]

// jemalloc: a probe call through the engine costs less CPU than on the system
// allocator (bench/node). Not mimalloc: 2.3 and 3.3 crash the process when the
// Worker that first loaded the add-on has ended and another loads it
// (test/workers.test.js). Initial-exec TLS is off, as dlopen needs.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod bridge;
mod errors;
mod surface;
mod waits;
