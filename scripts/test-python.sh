#!/usr/bin/env bash
# Builds the `libwaitfor` wheel (import name `waitfor`), installs it into a
# fresh virtual environment (as a user gets it) and runs ruff, the Python tests
# and mypy --strict.
# Usage: scripts/test-python.sh [pytest args...]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${WAITFOR_PY_WORK:-$root/target/python}"
venv="$work/venv"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
source "$root/scripts/lib.sh"

# Pinned test tools.
pins=(maturin==1.16.0 pytest==9.2.0 mypy==2.4.1 mcp==2.3.0 fastmcp==4.1.6 jsonschema==4.26.0
      tenacity==9.2.1 polling2==0.5.0 ruff==0.17.5)

if ! command -v tmux >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    need_apt tmux
fi

# A fresh venv for every run: the wheel is tested as a user installs it.
python_wheel_venv "$venv" "${pins[@]}"

cd "$root"
# ruff on every Python file in the repository (rules in ruff.toml).
"$venv/bin/python" -m ruff check --no-cache "$root"
# Tests import the installed wheel, never the source tree.
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/bindings/python/tests" "$@"
# mypy --strict on a consumer of the whole API and on the package itself.
"$venv/bin/python" -m mypy --strict --no-incremental "$root/bindings/python/tests/typing_consumer.py" \
    "$root/examples/python/server.py"
(cd "$work" && "$venv/bin/python" -m mypy --strict --no-incremental -p waitfor)
echo "python: all tests passed"
