#!/usr/bin/env bash
# The Rust crates that build without Python or Node (core, cli, the C ABI
# when present): format, lints, unit, integration and doc tests, and the
# shared vectors.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

need_apt tmux
step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy (default members, all targets)"
cargo clippy --all-targets --locked -- -D warnings
step "cargo clippy (benchmarks)"
cargo clippy -p waitfor-bench --all-targets --locked -- -D warnings
step "cargo test (default members)"
cargo test --locked
