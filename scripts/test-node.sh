#!/usr/bin/env bash
# Builds the npm package `libwaitfor` (bindings/node) in place and runs all of
# its tests with `node --test` after ESLint: the API, every profile, the event
# loop, the shared vectors, `tsc --noEmit` on a strict consumer, `npm pack`
# installed into a fresh folder; then the same for the packages built on it,
# `@libwaitfor/ax` (bindings/node-ax, the Ouro-named exports, with an add-on of
# its own) and `@libwaitfor/mcp` (bindings/node-mcp, against the official SDK's
# client); then the example MCP server (examples/node) driven by that client
# over stdio.
# Needs: cargo, node >= 20 with npm, git, tmux. Everything else comes from npm.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/lib.sh"
if ! command -v tmux >/dev/null; then
  need_apt tmux
fi
cd "$here/bindings/node"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
retry npm ci --no-audit --no-fund --loglevel=error
npm run --silent lint
npm run --silent build
npm test

for package in node-ax node-mcp; do
  cd "$here/bindings/$package"
  retry npm ci --no-audit --no-fund --loglevel=error
  npm run --silent lint
  npm run --silent --if-present build
  npm test
done

# The example MCP server, driven by the SDK's client over stdio.
cd "$here/examples/node"
retry npm ci --no-audit --no-fund --loglevel=error
npm test
