'use strict'
// How the installed package finds its native add-on (lib/native.js over the
// generated index.js): the platform package that fits the host, and a clear
// error when none does. Each case runs the package as `npm install` lays it
// out (the main package with its platform packages as optionalDependencies,
// as scripts/dist.sh publishes it) in a child process whose host is
// simulated: `process.platform` / `process.arch`, and for Linux the two
// things the loader reads to tell musl from glibc (/usr/bin/ldd and the
// process report). The add-on that loads is the real one built here.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { tempDir, root } = require('./helpers.js')

const pkg = require('../package.json')
const platforms = fs.readdirSync(path.join(root, 'npm')).sort()
const builtAddon = path.join(root, 'libwaitfor.linux-x64-gnu.node')
const onGlibcX64 = process.platform === 'linux' && process.arch === 'x64' && !!process.report.getReport().header.glibcVersionRuntime

// Loaded with `node --require` before the package: makes this process look
// like the host in WAITFOR_FAKE_HOST ({platform, arch, libc}).
const PRELOAD = `
const host = JSON.parse(process.env.WAITFOR_FAKE_HOST)
Object.defineProperty(process, 'platform', { value: host.platform })
Object.defineProperty(process, 'arch', { value: host.arch })
if (host.libc) {
  const fs = require('fs')
  const readFileSync = fs.readFileSync
  fs.readFileSync = function (file, ...rest) {
    if (file === '/usr/bin/ldd') return host.libc === 'musl' ? 'exec /lib/ld-musl-x86_64.so.1 --list' : 'GNU C Library (GNU libc)'
    return readFileSync.call(this, file, ...rest)
  }
  const getReport = process.report.getReport.bind(process.report)
  process.report.getReport = (...args) => {
    const report = getReport(...args)
    if (host.libc === 'musl') delete report.header.glibcVersionRuntime
    else report.header.glibcVersionRuntime = report.header.glibcVersionRuntime || '2.17'
    return report
  }
}
`

// What the child prints: the add-on file that loaded and a real wait's
// outcome, or the loader's error with the messages of its cause chain.
const PROGRAM = `
try {
  const { wait } = require('libwaitfor')
  const addon = Object.keys(require.cache).find((file) => file.endsWith('.node'))
  wait({ until: { matches: 'ok' }, interval_ms: 10 }, () => 'ok')
    .then((r) => console.log(JSON.stringify({ addon, outcome: r.outcome })))
} catch (e) {
  const causes = []
  for (let c = e.cause; c; c = c.cause) causes.push(c.message)
  console.log(JSON.stringify({ code: e.code, message: e.message, causes }))
}
`

/**
 * An app folder with `libwaitfor` installed as a user gets it, with the
 * platform packages in `installed` (each holding the add-on built here under
 * that package's file name). `source: true` lays out a source checkout
 * instead: no optionalDependencies.
 */
function install({ installed = [], source = false } = {}) {
  const app = tempDir('waitfor-loader-')
  const main = path.join(app, 'node_modules', pkg.name)
  fs.mkdirSync(main, { recursive: true })
  fs.cpSync(path.join(root, 'lib'), path.join(main, 'lib'), { recursive: true })
  fs.copyFileSync(path.join(root, 'index.js'), path.join(main, 'index.js'))
  const manifest = { ...pkg }
  if (!source) manifest.optionalDependencies = Object.fromEntries(platforms.map((p) => [`${pkg.name}-${p}`, pkg.version]))
  fs.writeFileSync(path.join(main, 'package.json'), JSON.stringify(manifest, null, 2))
  for (const platform of installed) {
    const dir = path.join(app, 'node_modules', `${pkg.name}-${platform}`)
    fs.mkdirSync(dir)
    const platformPkg = path.join(root, 'npm', platform, 'package.json')
    fs.copyFileSync(platformPkg, path.join(dir, 'package.json'))
    fs.copyFileSync(builtAddon, path.join(dir, require(platformPkg).main))
  }
  fs.writeFileSync(path.join(app, 'preload.js'), PRELOAD)
  return app
}

/** Runs PROGRAM in `app` as if on `host`; its parsed report. */
function run(app, host) {
  const env = { ...process.env, WAITFOR_FAKE_HOST: JSON.stringify(host) }
  delete env.NAPI_RS_NATIVE_LIBRARY_PATH
  delete env.NAPI_RS_FORCE_WASI
  const r = spawnSync(process.execPath, ['--require', path.join(app, 'preload.js'), '-e', PROGRAM], { cwd: app, env, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout.trim().split('\n').pop())
}

const needsAddon = onGlibcX64 && fs.existsSync(builtAddon) ? false : 'needs the add-on built on a linux-x64 glibc host (npm run build)'

test('the platform packages are the ones napi builds for', () => {
  assert.deepEqual(platforms, ['linux-arm64-gnu', 'linux-x64-gnu', 'linux-x64-musl'])
})

test('on x64 musl the musl platform package loads, not the glibc one', { skip: needsAddon }, () => {
  const app = install({ installed: ['linux-x64-gnu', 'linux-x64-musl'] })
  const r = run(app, { platform: 'linux', arch: 'x64', libc: 'musl' })
  assert.equal(r.addon, path.join(fs.realpathSync(app), 'node_modules/libwaitfor-linux-x64-musl/libwaitfor.linux-x64-musl.node'))
  assert.equal(r.outcome, 'matched')
  // And on x64 glibc, the glibc one.
  const gnu = run(app, { platform: 'linux', arch: 'x64', libc: 'gnu' })
  assert.equal(gnu.addon, path.join(fs.realpathSync(app), 'node_modules/libwaitfor-linux-x64-gnu/libwaitfor.linux-x64-gnu.node'))
})

for (const [host, name] of [
  [{ platform: 'darwin', arch: 'arm64' }, 'darwin-arm64'],
  [{ platform: 'win32', arch: 'x64' }, 'win32-x64'],
  [{ platform: 'freebsd', arch: 'x64' }, 'freebsd-x64'],
  [{ platform: 'linux', arch: 'arm64', libc: 'musl' }, 'linux-arm64-musl'],
  [{ platform: 'linux', arch: 'ppc64', libc: 'gnu' }, 'linux-ppc64-gnu'],
]) {
  test(`on ${name}, which has no platform package, the error names the host, the platforms that have one and what to do`, () => {
    // The installed platform packages are for other hosts: none may load.
    const r = run(install({ installed: needsAddon ? [] : ['linux-x64-gnu', 'linux-x64-musl'] }), host)
    assert.equal(r.code, 'ERR_LIBWAITFOR_NO_ADDON')
    assert.equal(
      r.message,
      `libwaitfor: no prebuilt native add-on for this host (${name}); there are prebuilt add-ons for ` +
        'linux-arm64-gnu, linux-x64-gnu, linux-x64-musl. Elsewhere, build it from the libwaitfor sources ' +
        'with a Rust toolchain: in bindings/node, `npm ci && npm run build`, then install that folder ' +
        '(`npm install path/to/bindings/node`)',
    )
    assert.ok(r.causes.length > 0, 'napi-rs’s own error is the cause')
  })
}

test('on a host with a platform package that is not installed, the error says to install it', () => {
  const r = run(install(), { platform: 'linux', arch: 'x64', libc: 'musl' })
  assert.equal(r.code, 'ERR_LIBWAITFOR_NO_ADDON')
  assert.equal(
    r.message,
    'libwaitfor: the native add-on for this host (linux-x64-musl) is in the package libwaitfor-linux-x64-musl, ' +
      'which did not load. npm installs it as an optional dependency: reinstall libwaitfor without ' +
      '--omit=optional (or --no-optional), on the platform that runs it, and see the cause below',
  )
  assert.ok(r.causes.some((m) => m.includes("Cannot find module 'libwaitfor-linux-x64-musl'")), r.causes.join('\n'))
})

test('in a source checkout without a built add-on, the error says to build it', () => {
  const r = run(install({ source: true }), { platform: 'linux', arch: 'x64', libc: 'gnu' })
  assert.equal(r.code, 'ERR_LIBWAITFOR_NO_ADDON')
  assert.equal(
    r.message,
    'libwaitfor: no native add-on for this host (linux-x64-gnu) in this source checkout: ' +
      'build it with a Rust toolchain (`npm ci && npm run build` in bindings/node)',
  )
})
