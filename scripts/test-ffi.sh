#!/usr/bin/env bash
# Tests libwaitfor for C and C++ hosts: the Rust side of the C ABI (unit
# tests, header drift), the install tree (make -C ffi install), the C99 and
# GoogleTest suites (plain, ASan+UBSan, valgrind), consumers built against
# the installed tree through CMake and pkg-config, and the C++ MCP server
# example driven by the official Python MCP SDK.
#
# Usage: scripts/test-ffi.sh            (CI=true, root, no stdin is fine)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BUILD="$CARGO_TARGET_DIR/ffi-tests"
PREFIX="$BUILD/prefix"
JOBS="${JOBS:-2}"

source "$ROOT/scripts/lib.sh"
need_apt cmake g++ make pkg-config libgtest-dev nlohmann-json3-dev valgrind tmux python3-venv file

step "cargo test -p waitfor-ffi (unit tests, header drift); clippy of its benchmark"
cargo test -q --locked -p waitfor-ffi --manifest-path "$ROOT/Cargo.toml"
cargo clippy -q --locked -p waitfor-ffi-bench --all-targets --manifest-path "$ROOT/Cargo.toml" -- -D warnings

step "make -C ffi install PREFIX=$PREFIX"
rm -rf "$PREFIX"
make -s -C "$ROOT/ffi" install PREFIX="$PREFIX"
# The same, stripped (the tests below need the symbols).
make -s -C "$ROOT/ffi" install-strip PREFIX="$BUILD/stripped"
file -b "$BUILD/stripped/lib/libwaitfor.so" | grep -q ", stripped" ||
  { echo "make install-strip left libwaitfor.so with its symbols" >&2; exit 1; }

build_suite() { # name, extra cmake args...
  local dir="$BUILD/$1"
  shift
  cmake --no-warn-unused-cli -S "$ROOT/tests/cpp" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_PREFIX_PATH="$PREFIX" -Dwaitfor_DIR="$PREFIX/lib/cmake/waitfor" "$@" >/dev/null
  cmake --build "$dir" -j "$JOBS" >/dev/null
}

step "C and C++ suites"
build_suite plain
(cd "$BUILD/plain" && ctest --output-on-failure)

step "C and C++ suites with AddressSanitizer + UndefinedBehaviorSanitizer"
build_suite sanitize -DWAITFOR_SANITIZE=ON
(cd "$BUILD/sanitize" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure)

step "C and C++ suites under valgrind"
VALGRIND=(valgrind -q --error-exitcode=99 --leak-check=full --child-silent-after-fork=yes --num-callers=40
  --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible
  --suppressions="$ROOT/tests/c/valgrind.supp")
"${VALGRIND[@]}" "$BUILD/plain/test_waitfor_c"
"${VALGRIND[@]}" "$BUILD/plain/test_vectors_c" "$ROOT/tests/vectors"
"${VALGRIND[@]}" "$BUILD/plain/test_waitfor_cpp" --gtest_brief=1

step "consumers of the installed tree: CMake package and pkg-config"
cmake --no-warn-unused-cli -S "$ROOT/tests/cpp/consumer" -B "$BUILD/consumer" -DCMAKE_PREFIX_PATH="$PREFIX" -Dwaitfor_DIR="$PREFIX/lib/cmake/waitfor" >/dev/null
cmake --build "$BUILD/consumer" -j "$JOBS" >/dev/null
"$BUILD/consumer/consumer_shared"
"$BUILD/consumer/consumer_static"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
libdir="$(pkg-config --variable=libdir waitfor)"
# shellcheck disable=SC2046
g++ -std=c++17 "$ROOT/tests/cpp/consumer/consumer.cpp" -o "$BUILD/consumer/pc_shared" \
  $(pkg-config --cflags --libs waitfor) -Wl,-rpath,"$libdir"
# shellcheck disable=SC2046
g++ -std=c++17 "$ROOT/tests/cpp/consumer/consumer.cpp" -o "$BUILD/consumer/pc_static" \
  $(pkg-config --cflags waitfor) "$libdir/libwaitfor.a" $(pkg-config --static --libs-only-l waitfor | sed 's/-lwaitfor//')
"$BUILD/consumer/pc_shared"
"$BUILD/consumer/pc_static"
if ldd "$BUILD/consumer/pc_static" | grep -q libwaitfor; then
  echo "pc_static links libwaitfor.so: expected the static library" >&2
  exit 1
fi

step "C++ MCP server example, driven by the official Python MCP SDK"
build_cpp_example "$PREFIX" "$BUILD"
[ -x "$BUILD/venv/bin/python" ] || python3 -m venv "$BUILD/venv"
"$BUILD/venv/bin/pip" install -q --disable-pip-version-check "mcp==1.27.2" "pytest==8.3.5"
WAITFOR_MCP_SERVER="$BUILD/example/waitfor_mcp_server" \
  "$BUILD/venv/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/examples/cpp/test_mcp_server.py"

echo "ffi: all tests passed"
