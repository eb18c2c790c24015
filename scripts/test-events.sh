#!/usr/bin/env bash
# Every test of the Ouro typed event waits (issue 4): the wait/1 envelope,
# durations, the JSONL source and matcher, the event wait on virtual time
# and on the real engine, the ouro/wait profile, the `waitfor events`
# command end to end (real binary, real files, a --follow stream read by
# this process, Ctrl-C), and their doc examples. Needs only cargo (Rust 1.85+).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

if ! command -v cargo >/dev/null 2>&1; then
  echo "test-events: cargo is required (Rust 1.85 or later, https://rustup.rs)" >&2
  exit 1
fi
export CARGO_TERM_COLOR=never

step "event waits: integration tests (core)"
cargo test -q --locked -p waitfor \
  --test ouro_wait_for --test ouro_events --test ouro_envelope \
  --test ouro_jsonl --test ouro_matcher --test ouro_duration
step "event waits: unit tests (core)"
cargo test -q --locked -p waitfor --lib -- ouro:: simulate
step "event waits: doc examples"
cargo test -q --locked -p waitfor --doc -- ouro simulate
step "waitfor events: end to end"
cargo test -q --locked -p waitfor-cli --test events
cargo test -q --locked -p waitfor-cli --bin waitfor -- args
