#!/usr/bin/env bash
# The three example MCP servers (examples/python, examples/node,
# examples/cpp) agree: tests/mcp_session/session.py drives one scripted
# session against each with the official MCP Python SDK over stdio and
# compares the answers wherever two of them serve the same profile.
# Reuses what the python, node and ffi suites built (the wheel's venv, the
# npm package built in place, the installed C ABI) and builds what is
# missing the way they do.
# Needs: cargo, node >= 20 with npm, python3, tmux; cmake, g++ and
# nlohmann-json come from apt.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BUILD="$CARGO_TARGET_DIR/ffi-tests"
source "$ROOT/scripts/lib.sh"
need_apt cmake g++ make nlohmann-json3-dev tmux python3-venv

step "Python server: the libwaitfor wheel and the MCP SDK (scripts/test-python.sh's venv)"
venv="${WAITFOR_PY_WORK:-$ROOT/target/python}/venv"
if ! "$venv/bin/python" -c 'import waitfor, mcp' 2>/dev/null; then
  # Pinned as scripts/test-python.sh pins them.
  python_wheel_venv "$venv" maturin==1.16.0 mcp==2.3.0
fi

step "Node server: the npm packages built in place, the example's dependencies"
if ! compgen -G "$ROOT/bindings/node/*.node" >/dev/null; then
  (cd "$ROOT/bindings/node" && retry npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
fi
# @libwaitfor/mcp, linked from the example, finds libwaitfor through its own node_modules.
if [ ! -d "$ROOT/bindings/node-mcp/node_modules" ]; then
  (cd "$ROOT/bindings/node-mcp" && retry npm ci --no-audit --no-fund --loglevel=error)
fi
if [ ! -d "$ROOT/examples/node/node_modules/@libwaitfor/mcp" ]; then
  (cd "$ROOT/examples/node" && retry npm ci --no-audit --no-fund --loglevel=error)
fi

step "C++ server: built against the installed C ABI (scripts/test-ffi.sh's tree)"
make -s -C "$ROOT/ffi" install PREFIX="$BUILD/prefix"
build_cpp_example "$BUILD/prefix" "$BUILD"

step "one scripted MCP session against the three servers"
cd "$ROOT"
"$venv/bin/python" tests/mcp_session/session.py --cpp "$BUILD/example/waitfor_mcp_server"
echo "examples: all tests passed"
