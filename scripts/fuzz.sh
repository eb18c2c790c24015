#!/usr/bin/env bash
# Runs every cargo fuzz target in fuzz/ for SECONDS each (default 600), one
# after another, starting from its committed corpus (fuzz/corpus/<target>);
# fails at the first crash, leaving the input in fuzz/artifacts/<target>/.
# New inputs go to a scratch corpus, so the committed one changes only when
# someone minimises into it (`cargo +nightly fuzz cmin <target>`).
#
#   bash scripts/fuzz.sh [SECONDS]
#
# FUZZ_TARGETS (space-separated) runs only those targets; FUZZ_BUILD_FLAGS
# are cargo fuzz's build options (default: optimised, with AddressSanitizer;
# "--dev --sanitizer none" builds in a third of the time, for a short run);
# the build goes to $CARGO_TARGET_DIR/fuzz (fuzz/target when unset).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

seconds="${1:-600}"
cargo_fuzz_version=0.13.2
# cargo fuzz needs a nightly compiler; a dated one, so that a new nightly
# cannot change what a run builds.
nightly=nightly-2026-10-29
target_dir="${CARGO_TARGET_DIR:+$CARGO_TARGET_DIR/fuzz}"
target_dir="${target_dir:-fuzz/target}"

if ! rustup run "$nightly" rustc --version >/dev/null 2>&1; then
  step "installing the $nightly toolchain"
  retry rustup toolchain install "$nightly" --profile minimal
fi
if ! cargo fuzz --version 2>/dev/null | grep -qF " $cargo_fuzz_version"; then
  step "installing cargo-fuzz $cargo_fuzz_version"
  retry cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked
fi

targets="${FUZZ_TARGETS:-$(cargo fuzz list)}"
fuzz=(cargo "+$nightly" fuzz)
read -r -a build_flags <<<"${FUZZ_BUILD_FLAGS:---sanitizer address}"
build_flags+=(--target-dir "$target_dir")

step "cargo fuzz build (${build_flags[*]})"
"${fuzz[@]}" build "${build_flags[@]}"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for target in $targets; do
  step "fuzzing $target for ${seconds}s"
  mkdir -p "$scratch/$target" "fuzz/corpus/$target"
  log="$scratch/$target.log"
  # TMPDIR: the targets' scratch directory (fuzz/src/lib.rs) goes with $scratch.
  if ! TMPDIR="$scratch" "${fuzz[@]}" run "${build_flags[@]}" "$target" "$scratch/$target" "fuzz/corpus/$target" \
      -- -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz target $target failed; its input is in fuzz/artifacts/$target/" >&2
    exit 1
  fi
  grep -E '^Done [0-9]+ runs' "$log" || tail -n 3 "$log"
done
