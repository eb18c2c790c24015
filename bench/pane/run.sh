#!/usr/bin/env bash
# Pane-wait benchmark: libwaitfor (control mode, polling at 50 ms) side by
# side with libtmux-mcp 0.1.0a22 on the same pane, same scenario,
# printed as rows of the common results table (bench/python/rows.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${ROUNDS:-30}"
command -v tmux >/dev/null || { apt-get update -qq && apt-get install -y -qq tmux >/dev/null; }
VENV="${VENV:-target/bench-venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q libtmux-mcp==0.1.0a22
SOCK="waitfor-bench-$$"
trap 'tmux -L "$SOCK" kill-server 2>/dev/null || true' EXIT
tmux -L "$SOCK" -f /dev/null new-session -d -s bench -x 100 -y 30 "env PS1='$ ' sh"
PANE=$(tmux -L "$SOCK" display-message -p -t bench '#{pane_id}')
TTY=$(tmux -L "$SOCK" display-message -p -t bench '#{pane_tty}')
cargo build -q --release -p waitfor --example pane_bench
OURS=$(target/release/examples/pane_bench "$SOCK" "$PANE" "$TTY" "$ROUNDS")
PEER=$("$VENV/bin/python" bench/pane/peer.py "$SOCK" "$PANE" "$TTY" "$ROUNDS")
python3 - "$OURS" "$PEER" "$ROUNDS" <<'PY'
import json, sys
sys.path.insert(0, "bench/python")
from rows import HEADER, row
o, p, rounds = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
peer = "libtmux-mcp 0.1.0a22 wait_for_text at 50 ms"
ms = lambda v: f"{v:.1f} ms"
probe = o["probe_ms"]
print(HEADER)
print(row(f"tmux pane, control mode: reaction to a line, p50 ({rounds} rounds)", o["control_p50_ms"], peer, p["peer_p50_ms"], ms,
          goal="<= 10 ms", met=o["control_p50_ms"] <= 10))
print(row(f"tmux pane, polling at 50 ms: reaction to a line, p50 ({rounds} rounds)", o["polling_p50_ms"], peer, p["peer_p50_ms"], ms))
print(row(f"tmux pane, polling at 50 ms: reaction to a line, mean ({rounds} rounds; one probe: {probe:.1f} ms)", o["polling_mean_ms"], peer,
          p["peer_mean_ms"], ms, goal=f"<= the probe + 27 ms = {probe + 27:.1f} ms", met=o["polling_mean_ms"] <= probe + 27))
for mode in ("control", "polling"):
    what = "control mode" if mode == "control" else "polling at 50 ms"
    print(row(f"tmux pane, {what}: CPU per waiting second", 1000 * o[f"cpu_per_wait_second_{mode}"], peer,
              1000 * p["peer_cpu_per_wait_second"], ms))
PY
