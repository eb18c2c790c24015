#!/usr/bin/env bash
# Builds every artefact a user installs into target/packages/ (not
# target/dist/, cargo's own folder for the `dist` profile) and prints
# their sizes:
#   - the PyPI distribution `libwaitfor`: abi3 wheels for manylinux2014
#     (glibc 2.17) x86_64 and aarch64, and an sdist;
#   - the npm package `libwaitfor` and one package per platform with its
#     prebuilt add-on (linux-x64-gnu, linux-arm64-gnu: glibc 2.17;
#     linux-x64-musl), which the main package lists as optionalDependencies
#     (added here, as `napi pre-publish` does: they are not on the registry
#     before a release, so the checkout's package.json cannot name them);
#   - the same for the npm package `@libwaitfor/ax` (Ouro AX names, its own
#     add-on): `@libwaitfor/ax` and `@libwaitfor/ax-<platform>`;
#   - the npm package `@libwaitfor/mcp` (JavaScript only).
# Cross builds link through zig (PyPI's `ziglang`); native code is built
# with the `dist` profile (release, stripped).
# Needs: rustup, cargo, python3 >= 3.10, node >= 20 with npm.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib.sh"
out="${WAITFOR_DIST_OUT:-$root/target/packages}"
work="${WAITFOR_DIST_WORK:-$root/target/dist-work}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"

# Pinned build tools, in a virtual environment kept between runs; its bin
# comes first on PATH so that maturin and cargo-zigbuild find zig.
pins=(maturin==1.16.0 ziglang==0.17.1 cargo-zigbuild==0.24.1)
wheel_targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)
# The `.2.17` suffix is the glibc version zig links against.
npm_targets=(x86_64-unknown-linux-gnu.2.17 aarch64-unknown-linux-gnu.2.17 x86_64-unknown-linux-musl)

step "build tools"
need_apt python3-venv
[ -x "$work/tools/bin/python" ] || "${PYTHON:-python3}" -m venv "$work/tools"
retry "$work/tools/bin/python" -m pip install -q --disable-pip-version-check "${pins[@]}"
export PATH="$work/tools/bin:$PATH"
retry rustup target add aarch64-unknown-linux-gnu x86_64-unknown-linux-musl

rm -rf "$out" "$work/npm"
mkdir -p "$out" "$work/npm"

step "Python: wheels and sdist"
for target in "${wheel_targets[@]}"; do
  maturin build --quiet --profile dist --zig --compatibility manylinux2014 --target "$target" \
    --manifest-path "$root/bindings/python/Cargo.toml" --out "$out"
done
maturin sdist --manifest-path "$root/bindings/python/Cargo.toml" --out "$out"

# npm_addon_packages DIR: the npm package in DIR with a native add-on, as
# a user installs it: one package per platform (`napi create-npm-dirs`
# names them) with its add-on built for that target, and the package
# itself without an add-on built in place and with the platform packages
# as optionalDependencies.
npm_addon_packages() {
  local dir="$1" w="$work/npm/$(basename "$1")" target platform tarball
  step "npm: $(node -p "require('$dir/package.json').name") and its platform packages"
  mkdir -p "$w"
  cd "$dir"
  retry npm ci --no-audit --no-fund --loglevel=error
  # Keeps npm/<platform>/package.json in step with package.json (version, targets).
  npx napi create-npm-dirs
  cp -r npm "$w/platforms"
  for target in "${npm_targets[@]}"; do
    # A target directory of their own, shared by the add-ons: cargo-zigbuild
    # configures host builds unlike maturin, and sharing one with it would
    # rebuild every dependency each run.
    npx napi build --platform --profile dist --target "$target" --cross-compile --no-js \
      --target-dir "$CARGO_TARGET_DIR/npm" --output-dir "$w/artifacts"
  done
  # Each add-on into its package (what `napi artifacts` does, which only
  # writes inside the checkout).
  for platform in "$w"/platforms/*/; do
    cp "$w/artifacts/$(node -p "require('${platform}package.json').main")" "$platform"
    npm pack --silent --pack-destination "$out" "$platform" >/dev/null
  done
  # Packed as the checkout has it, then unpacked, rid of any add-on built in
  # place and given the platform packages as optionalDependencies.
  tarball="$(npm pack --silent --pack-destination "$w")"
  mkdir "$w/main"
  tar -xzf "$w/$tarball" -C "$w/main" --strip-components=1
  rm -f "$w"/main/*.node
  node -e '
    const fs = require("fs"), path = require("path")
    const [main, platforms] = process.argv.slice(1)
    const pkg = JSON.parse(fs.readFileSync(path.join(main, "package.json"), "utf8"))
    pkg.optionalDependencies = {}
    for (const dir of fs.readdirSync(platforms).sort()) {
      const p = JSON.parse(fs.readFileSync(path.join(platforms, dir, "package.json"), "utf8"))
      if (p.version !== pkg.version) throw new Error(`${p.name} is ${p.version}, ${pkg.name} is ${pkg.version}`)
      pkg.optionalDependencies[p.name] = p.version
    }
    fs.writeFileSync(path.join(main, "package.json"), JSON.stringify(pkg, null, 2) + "\n")
  ' "$w/main" "$w/platforms"
  npm pack --silent --pack-destination "$out" "$w/main" >/dev/null
}

npm_addon_packages "$root/bindings/node"
npm_addon_packages "$root/bindings/node-ax"

step "npm: @libwaitfor/mcp"
npm pack --silent --pack-destination "$out" "$root/bindings/node-mcp" >/dev/null

step "artefacts in $out"
# Each artefact's size, and the size of the stripped native library in it.
printf '%-78s %7s %8s\n' artefact size library
for f in "$out"/*; do
  case "$f" in
    *.whl) lib="$(python -c 'import sys, zipfile
print(*(i.file_size for i in zipfile.ZipFile(sys.argv[1]).infolist() if i.filename.endswith(".so")))' "$f")" ;;
    *.tgz) lib="$(tar -tvzf "$f" | awk '/\.node$/ { print $3 }')" ;;
    *) lib="" ;;
  esac
  printf '%-78s %7s %8s\n' "$(basename "$f")" "$(numfmt --to=iec-i --suffix=B "$(stat -c %s "$f")")" \
    "${lib:+$(numfmt --to=iec-i --suffix=B "$lib")}"
done
