#!/usr/bin/env bash
# The Rust crates that build without Python or Node (core, cli, the C ABI
# when present): format, lints, unit, integration and doc tests (the
# engine, the shared vectors, the tmux pane waits on a private tmux server,
# the typed event waits, the `waitfor` command end to end), a type check
# of the same crates for macOS and Windows, and the Windows host tests run
# under Wine.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

need_apt tmux
# The pane tests start their own tmux servers; an enclosing session's
# variable must not point them at the user's.
unset TMUX
step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy (default members, all targets)"
cargo clippy --all-targets --locked -- -D warnings
step "cargo clippy (benchmarks)"
cargo clippy -p waitfor-bench --all-targets --locked -- -D warnings
# macOS and Windows: type-checked here (no linker, no binaries to run);
# rustup adds a target's standard library when it is missing.
PORTABLE_TARGETS=(x86_64-apple-darwin aarch64-apple-darwin x86_64-pc-windows-msvc)
installed_targets=$(rustup target list --installed)
for target in "${PORTABLE_TARGETS[@]}"; do
  grep -qx "$target" <<<"$installed_targets" || retry rustup target add "$target"
done
for target in "${PORTABLE_TARGETS[@]}"; do
  # Every test and example too: those that need Unix say so (`cfg(unix)`).
  step "cargo check for $target (core, cli, C ABI, their tests and examples), with clippy's lints"
  cargo clippy -p waitfor -p waitfor-cli -p waitfor-ffi --all-targets --target "$target" --locked -- -D warnings
done
step "the Windows host tests, run under Wine (x86_64-pc-windows-gnu)"
# Real Windows processes, job objects and files, as Wine gives them; a
# prefix of its own under target/, made on first use.
need_apt wine wine64 gcc-mingw-w64-x86-64
grep -qx x86_64-pc-windows-gnu <<<"$installed_targets" || retry rustup target add x86_64-pc-windows-gnu
export WINEPREFIX="$PWD/target/wine" WINEDEBUG=-all
mkdir -p "$WINEPREFIX"
[ -d "$WINEPREFIX/drive_c/windows/system32" ] || timeout 300 wineboot -i >/dev/null 2>&1
x86_64-w64-mingw32-gcc -shared -O2 -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
  scripts/wine/bcryptprimitives.c -lbcrypt
# Wine's server outlives its programs for a while: ended with the step.
trap 'wineserver -k 2>/dev/null || true' EXIT
CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine timeout 900 \
  cargo test -p waitfor --test windows_host --target x86_64-pc-windows-gnu --locked
wineserver -k || true
trap - EXIT
step "cargo doc of core: no broken links"
RUSTDOCFLAGS="-D warnings" cargo doc -p waitfor --no-deps --locked
step "cargo test (default members)"
cargo test --locked --no-fail-fast
step "cargo test: the grown pool's timing comparison (release build)"
cargo test --release --locked -p waitfor --test grown_pool
step "cargo fuzz: every target for a few seconds (scripts/fuzz.sh runs them long)"
FUZZ_BUILD_FLAGS="--dev --sanitizer none" bash scripts/fuzz.sh 5
