#!/usr/bin/env bash
# `make bench`: runs every benchmark, each figure beside its peer or the
# machine's floor measured in the same run, and writes bench/RESULTS.md.
#
# The Rust benchmarks always run. The Python, Node and tmux-pane ones need
# their packages built: they run when `make test` (or the per-language test
# script) has built them, and are listed as skipped otherwise;
# `BENCH_RUST_ONLY=1` skips them on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
out=bench/RESULTS.md
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT

section() { # title, command shown to the reader
  printf '\n## %s\n\n`%s`\n' "$1" "$2" >>"$tmp"
  echo "==> $1" >&2
}

verbatim() { # runs a command whose output is plain text
  { echo; echo '```'; "$@"; echo '```'; } >>"$tmp"
}

{
  echo "# Benchmark results"
  echo
  echo "Written by \`make bench\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Every figure stands beside"
  echo "its peer or the machine's floor, measured in the same run on the same machine:"
  echo
  echo "- CPU: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "- memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); kernel $(uname -r)"
  echo "- rustc: $(rustc --version)"
} >"$tmp"

cargo build -q --release -p waitfor-bench -p waitfor-ffi-bench

section "Engine" "cargo run --release -p waitfor-bench --bin engine"
"$CARGO_TARGET_DIR/release/engine" >>"$tmp"

section "C ABI" "cargo run --release -p waitfor-ffi-bench"
verbatim "$CARGO_TARGET_DIR/release/waitfor-ffi-bench"

skip_others() { [ "${BENCH_RUST_ONLY:-0}" = 1 ] && echo "skipped: BENCH_RUST_ONLY=1" >>"$tmp"; }
venv="$CARGO_TARGET_DIR/python/venv"
section "Python" "python bench/python/bench.py (in the venv of scripts/test-python.sh)"
if skip_others; then :
elif [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import waitfor' 2>/dev/null; then
  verbatim "$venv/bin/python" bench/python/bench.py
else
  echo "skipped: run scripts/test-python.sh first" >>"$tmp"
fi

section "Node" "cd bench/node && npm install && node probe-cost.mjs && node concurrent.mjs"
if skip_others; then :
elif ls bindings/node/*.node >/dev/null 2>&1; then
  (cd bench/node && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  verbatim bash -c 'cd bench/node && node probe-cost.mjs && node --expose-gc concurrent.mjs'
else
  echo "skipped: run scripts/test-node.sh first" >>"$tmp"
fi

section "tmux panes" "ROUNDS=20 bash bench/pane/run.sh"
skip_others || verbatim env ROUNDS=20 bash bench/pane/run.sh

mv "$tmp" "$out"
trap - EXIT

# The hostile-input table writes its own section (between markers) of the
# file; the `waitfor` command is built for its FIFO row.
echo "==> Hostile input" >&2
cargo build -q --release -p waitfor-cli
"$CARGO_TARGET_DIR/release/hostile" >/dev/null
echo "wrote $out" >&2
