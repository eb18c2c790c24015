#!/usr/bin/env bash
# Builds the npm package `waitfor` (bindings/node) in place and runs all of
# its tests with `node --test`: the API, every profile, the Ouro-named
# exports, the event loop, the shared vectors, `tsc --noEmit` on a strict
# consumer, and `npm pack` installed into a fresh folder.
# Needs: cargo, node >= 20 with npm, git. Everything else comes from npm.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here/bindings/node"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
npm ci --no-audit --no-fund --loglevel=error
npm run --silent build
npm test
