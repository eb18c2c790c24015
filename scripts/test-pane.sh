#!/usr/bin/env bash
# Pane waits: the tmux probe, echo registry and both wait_for_text
# profiles, against real tmux servers on private sockets.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
if ! command -v tmux >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq tmux >/dev/null
fi
unset TMUX
cargo test -q -p waitfor --test tmux_pane --test tmux_cxx_profile --test tmux_client --test vectors
cargo test -q -p waitfor --lib tmux::
cargo test -q -p waitfor --doc tmux
cargo test -q -p waitfor --doc profiles
