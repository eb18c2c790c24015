#!/usr/bin/env bash
# Pane-wait benchmark: libwaitfor (control mode, polling at 50 ms) side by
# side with libtmux-mcp 0.1.0a22 on the same pane, same scenario.
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
python3 - "$OURS" "$PEER" <<'PY'
import json, sys
o, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"control-mode reaction p50 {o['control_p50_ms']:.1f} ms (goal <= 10 ms)")
print(f"polling@50ms reaction mean {o['polling_mean_ms']:.1f} ms; probe {o['probe_ms']:.1f} ms; goal <= probe + 27 = {o['probe_ms']+27:.1f} ms")
print(f"libtmux-mcp 0.1.0a22 reaction p50 {p['peer_p50_ms']:.1f} ms, mean {p['peer_mean_ms']:.1f} ms")
print(f"reaction p50 ratio peer/ours: control {p['peer_p50_ms']/o['control_p50_ms']:.1f}x, polling {p['peer_p50_ms']/o['polling_p50_ms']:.1f}x")
print(f"CPU per waiting second: ours control {o['cpu_per_wait_second_control']*1000:.1f} ms, ours polling {o['cpu_per_wait_second_polling']*1000:.1f} ms, peer {p['peer_cpu_per_wait_second']*1000:.1f} ms")
print(f"CPU ratio peer/ours: control {p['peer_cpu_per_wait_second']/max(o['cpu_per_wait_second_control'],1e-6):.1f}x, polling {p['peer_cpu_per_wait_second']/max(o['cpu_per_wait_second_polling'],1e-6):.1f}x")
PY
