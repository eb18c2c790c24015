#!/usr/bin/env bash
# `make bench`: runs every benchmark and writes bench/RESULTS.md: one table,
# each row a measure with libwaitfor's figure beside its peer's or the
# machine's floor, measured in the same run, then the commands that printed
# the rows, then the hostile-input table (it has no peers).
#
# Each benchmark prints rows of the common table (the columns of
# TABLE_HEADER in bench/src/lib.rs) with its own header and notes; this
# script keeps the rows and adds the command's key to each.
#
# The Rust benchmarks always run. The Python, Node and tmux-pane ones need
# their packages built: they run when `make test` (or the per-language test
# script) has built them, and are listed as skipped otherwise;
# `BENCH_RUST_ONLY=1` skips them on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
out=bench/RESULTS.md
rows="$(mktemp)"
tmp="$(mktemp)"
trap 'rm -f "$rows" "$tmp"' EXIT
commands=()

# [note=TEXT] run KEY SHOWN COMMAND...: runs COMMAND, its whole output on
# stderr, and keeps the rows it prints (lines "| ...", not the header) with
# KEY added; SHOWN is the command as the reader would type it, the note
# what it needs first.
run() {
  local key=$1 shown=$2
  shift 2
  echo "==> $key: $shown" >&2
  commands+=("- \`$key\`: \`$shown\`${note:+ ($note)}")
  "$@" | tee /dev/stderr | awk -v key="$key" '/^\| / && !/^\| measure \|/ { print $0 " " key " |" }' >>"$rows"
}

# skip KEY SHOWN REASON: lists the command as not run, and why.
skip() {
  commands+=("- \`$1\`: \`$2\`: skipped, $3")
}

others() { # whether the Python, Node and pane benchmarks run
  [ "${BENCH_RUST_ONLY:-0}" != 1 ]
}

cargo build -q --release -p waitfor-bench -p waitfor-ffi-bench

run engine "cargo run --release -p waitfor-bench --bin engine" "$CARGO_TARGET_DIR/release/engine"
run c-abi "cargo run --release -p waitfor-ffi-bench" "$CARGO_TARGET_DIR/release/waitfor-ffi-bench"

venv="$CARGO_TARGET_DIR/python/venv"
shown="python bench/python/bench.py"
if ! others; then
  skip python "$shown" "BENCH_RUST_ONLY=1"
elif [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import waitfor' 2>/dev/null; then
  note="in the venv of scripts/test-python.sh" run python "$shown" "$venv/bin/python" bench/python/bench.py
else
  skip python "$shown" "run scripts/test-python.sh first"
fi

probe_cost="cd bench/node && node probe-cost.mjs"
concurrent="cd bench/node && node --expose-gc concurrent.mjs"
if ! others; then
  skip node-probe "$probe_cost" "BENCH_RUST_ONLY=1"
  skip node-10k "$concurrent" "BENCH_RUST_ONLY=1"
elif ls bindings/node/*.node >/dev/null 2>&1; then
  (cd bench/node && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  note="after npm install there" run node-probe "$probe_cost" bash -c "$probe_cost"
  run node-10k "$concurrent" bash -c "$concurrent"
else
  skip node-probe "$probe_cost" "run scripts/test-node.sh first"
  skip node-10k "$concurrent" "run scripts/test-node.sh first"
fi

shown="ROUNDS=20 bash bench/pane/run.sh"
if others; then
  run pane "$shown" env ROUNDS=20 bash bench/pane/run.sh
else
  skip pane "$shown" "BENCH_RUST_ONLY=1"
fi

met=$(grep -c ' ✓ |[^|]*|$' "$rows" || true)
missed=$(grep -c ' ✗ |[^|]*|$' "$rows" || true)
{
  echo "# Benchmark results"
  echo
  echo "Written by \`make bench\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Every row was measured in"
  echo "that one run, on this machine:"
  echo
  echo "- CPU: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "- memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); kernel $(uname -r)"
  echo "- rustc: $(rustc --version)"
  [ -x "$venv/bin/python" ] && echo "- Python: $("$venv/bin/python" --version 2>&1 | cut -d' ' -f2)"
  command -v node >/dev/null && echo "- Node: $(node --version)"
  echo
  echo "How to read a row: libwaitfor's figure, then its peer's or the machine's floor's (a bare"
  echo "thread-and-sleep loop, one hand-off to a sleeping thread, a Rust closure) for the same work in the same"
  echo "run. \`libwaitfor ÷ peer\` is always libwaitfor's figure divided by the peer's; \`better\`"
  echo "says which way the measure improves: where it says \`lower\` (time, CPU, memory, threads),"
  echo "a ratio below 1 means libwaitfor does better; where it says \`higher\`, above 1 does."
  echo "\`met\`: ✓ the goal is met, ✗ it is not, empty where the measure has no goal. \`cmd\` is the"
  echo "command that printed the row, listed under the table. Goals: $met met, $missed not met."
  echo
  echo "| measure | libwaitfor | peer or floor, same run | libwaitfor ÷ peer | better | goal | met | cmd |"
  echo "|---|---|---|---|---|---|---|---|"
  cat "$rows"
  echo
  echo "Commands (from the repository's root; the Rust ones built with \`--release\`):"
  echo
  printf '%s\n' "${commands[@]}"
} >"$tmp"
mv "$tmp" "$out"
trap 'rm -f "$rows"' EXIT

# The hostile-input table writes its own section (between markers) of the
# file; the `waitfor` command is built for its FIFO row.
echo "==> Hostile input" >&2
cargo build -q --release -p waitfor-cli
"$CARGO_TARGET_DIR/release/hostile" >/dev/null
echo "wrote $out" >&2
