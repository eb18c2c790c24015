#!/usr/bin/env bash
# The soak and fault suite in full: 10,000 waits whose probes answer,
# hang, fail, panic or flood, with random cancels and wakes, beside files
# replaced and tmux servers killed under their waits (core/tests/soak).
# Prints the summary: waits, outcomes by kind, time past the deadline,
# threads, descriptors and memory before and after. The time past the
# deadline is measured on a machine the soak itself oversubscribes (about
# 800 command processes start in its first second; the summary prints
# the most tasks runnable at once), beside how late a thread that only
# sleeps wakes on the same machine at the same time.
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
# Run as README tells a host that wants its memory back after a burst
# (see "Probe calls run on a small worker pool"): glibc otherwise keeps up to twice the
# largest block freed so far at the top of each thread arena, about 20 MiB
# after this burst. The test checks the allocator's blocks in use against
# the baseline whatever the setting; this one makes the resident size
# comparable too. Set GLIBC_TUNABLES yourself to measure another setting.
export GLIBC_TUNABLES="${GLIBC_TUNABLES-glibc.malloc.trim_threshold=131072}"
step "soak: $SOAK_WAITS waits (release build)"
cargo test --release --locked -p waitfor --test soak -- --nocapture --test-threads 1
