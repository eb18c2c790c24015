#!/usr/bin/env bash
# The soak and fault suite in full: 10,000 waits whose probes answer,
# hang, fail, panic or flood, with random cancels and wakes, beside files
# replaced and tmux servers killed under their waits (core/tests/soak).
# Prints the summary: waits, outcomes by kind, time past the deadline,
# threads, descriptors and memory before and after.
#
#   scripts/soak.sh              # 10,000 waits, a fresh seed
#   SOAK_WAITS=2000 SOAK_SEED=42 scripts/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

need_apt tmux
# The pane waits start their own tmux servers; an enclosing session's
# variable must not point them at the user's.
unset TMUX
export SOAK_WAITS="${SOAK_WAITS:-10000}"
step "soak: $SOAK_WAITS waits (release build)"
cargo test --release --locked -p waitfor --test soak -- --nocapture --test-threads 1
