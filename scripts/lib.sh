# Shared helpers for the test scripts: source it, don't run it.

# Runs a download-and-install command up to three times: a registry's
# passing hiccup should not fail a whole test run.
retry() {
  local try
  for try in 1 2; do
    "$@" && return 0
    echo "failed (try $try of 3), again in 10 s: $*" >&2
    sleep 10
  done
  "$@"
}

# Installs the Debian packages that are missing, quietly; `apt-get update`
# runs only when something must be installed.
need_apt() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing from apt: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    retry apt-get update -qq
    retry apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# Prints a section title.
step() {
  printf '\n==> %s\n' "$*"
}

# Makes a fresh virtual environment at $1 with the pinned packages $2...
# (maturin among them) and the `libwaitfor` wheel built from
# bindings/python (release), installed as a user installs it.
python_wheel_venv() {
  local venv="$1" work root
  shift
  work="$(dirname "$venv")"
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  rm -rf "$venv" "$work/wheels"
  mkdir -p "$work"
  "${PYTHON:-python3}" -m venv "$venv"
  retry "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@"
  (cd "$root/bindings/python" &&
    "$venv/bin/maturin" build --release --quiet --out "$work/wheels" --interpreter "$venv/bin/python")
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$work"/wheels/libwaitfor-*.whl
}

# Builds the C++ example MCP server (examples/cpp) into $2/example against
# the libwaitfor installed at prefix $1 (make -C ffi install).
build_cpp_example() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cmake --no-warn-unused-cli -S "$root/examples/cpp" -B "$2/example" -DCMAKE_PREFIX_PATH="$1" -Dwaitfor_DIR="$1/lib/cmake/waitfor" >/dev/null
  cmake --build "$2/example" -j "${JOBS:-2}" >/dev/null
}
