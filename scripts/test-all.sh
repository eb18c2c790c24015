#!/usr/bin/env bash
# Every test of the project, in every language. Installs what it needs
# from the package registries (apt, pip, npm, cargo); needs no prior state.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$(date +%s)
failed=()
for area in core ffi python node examples; do
  script="scripts/test-$area.sh"
  [ -f "$script" ] || continue
  printf '\n######## %s ########\n' "$area"
  if ! bash "$script"; then
    failed+=("$area")
  fi
done
printf '\n######## done in %ss ########\n' "$(( $(date +%s) - started ))"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all test suites passed"
