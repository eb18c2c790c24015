#!/usr/bin/env bash
# The main job, end to end: a build log is being written by a process that
# takes a few seconds to become ready; `waitfor` returns the moment it is,
# with the evidence, instead of a blind sleep.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet --release -p waitfor-cli
log=$(mktemp -t waitfor-demo.XXXXXX.log)
trap 'rm -f "$log"' EXIT

# The "server": starts, warms up, then says it is ready.
( for step in config database cache; do
    echo "starting $step"
    sleep 1
  done
  echo "server ready on port 8080" ) >>"$log" &

echo "waiting for 'ready' in $log (failure markers: FATAL, Traceback)"
./target/release/waitfor file "$log" --pattern ready --stop FATAL --stop Traceback --timeout 30s
echo
echo "the same wait as JSON, on a command this time:"
./target/release/waitfor run --json --match ready --every 200ms --timeout 10s -- tail -n 1 "$log"
