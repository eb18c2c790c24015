#!/usr/bin/env bash
# Every test of the project, in every language. Installs what it needs
# from the package registries (apt, pip, npm, cargo); needs no prior state.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each area's output also goes to a log, so that the last lines of the run
# (often all a CI page keeps) can name what failed.
logs=target/test-logs
mkdir -p "$logs"
started=$(date +%s)
failed=()
for area in core ffi python node examples dist; do
  script="scripts/test-$area.sh"
  [ -f "$script" ] || continue
  printf '\n######## %s ########\n' "$area"
  if ! bash "$script" 2>&1 | tee "$logs/$area.log"; then
    failed+=("$area")
  fi
done
printf '\n######## done in %ss ########\n' "$(( $(date +%s) - started ))"
if [ "${#failed[@]}" -gt 0 ]; then
  for area in "${failed[@]}"; do
    echo "---- why $area failed (from $logs/$area.log) ----"
    # The last step begun, then the lines that name failing tests or errors
    # (a grep that finds none is no failure of this summary).
    { grep -E '^==> ' "$logs/$area.log" || true; } | tail -n 1
    { grep -E 'FAILED|FAIL |^error|^E  |not ok|AssertionError|timed out|Error:' "$logs/$area.log" || true; } |
      cut -c1-200 | tail -n 10
    # A Rust panic's message is on the lines after "panicked at".
    { grep -A 3 'panicked at' "$logs/$area.log" || true; } | cut -c1-200 | tail -n 8
    # And how it ended.
    echo "last lines:"
    tail -n 3 "$logs/$area.log" | cut -c1-200
  done
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all test suites passed"
