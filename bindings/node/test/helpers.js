'use strict'
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync, spawnSync } = require('node:child_process')

/** A fresh temporary folder, removed when the process exits. */
function tempDir(prefix = 'waitfor-node-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Polls `check` until it is truthy or a generous deadline passes. */
async function eventually(check, { timeoutMs = 10000, everyMs = 10 } = {}) {
  const end = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > end) throw new Error('condition not reached in time')
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

/** No whitespace, sorted keys (JavaScript numbers print whole values as integers already). */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort()
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/** Skips `t` outside a git checkout, else fails when `napi build` changed the committed index.js or index.d.ts in `folder`. */
function assertGeneratedCommitted(t, folder) {
  const git = spawnSync('git', ['diff', '--exit-code', '--stat', 'HEAD', '--', 'index.js', 'index.d.ts'], { cwd: folder, encoding: 'utf8' })
  if (git.error || git.status === 128) return t.skip('not a git checkout')
  assert.equal(git.status, 0, `generated files drifted; commit them:\n${git.stdout}`)
}

/** Compiles `folder`'s strict consumer (test/types/tsconfig.json) with `tsc --noEmit`. */
function assertTypesCompile(folder) {
  const tsc = require.resolve('typescript/bin/tsc', { paths: [folder] })
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '-p', path.join(folder, 'test/types/tsconfig.json')], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stdout + r.stderr)
}

/**
 * `folder`'s package ships the repository's SECURITY.md (copy it there after editing
 * it), and every relative link of its README resolves inside the package.
 */
function assertShipsSecurity(folder) {
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--silent'], { cwd: folder, encoding: 'utf8' }))
  const files = new Set(packed.files.map((f) => f.path))
  assert.ok(files.has('SECURITY.md'), `SECURITY.md is not in the package: ${[...files].join(', ')}`)
  const security = (dir) => fs.readFileSync(path.join(dir, 'SECURITY.md'), 'utf8')
  assert.equal(security(folder), security(path.resolve(__dirname, '../../..')), `cp SECURITY.md ${folder}`)
  const readme = fs.readFileSync(path.join(folder, 'README.md'), 'utf8')
  const targets = [...readme.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1]).filter((t) => !/^[a-z]+:/.test(t))
  assert.ok(targets.includes('SECURITY.md'), 'the README links to SECURITY.md')
  for (const target of targets) assert.ok(files.has(path.posix.normalize(target)), `README links to ${target}, which the package lacks`)
}

/** A fresh app folder with the `npm pack` of each of `folders` installed (offline); `run(file)` runs a script in it. */
function packInstalled(folders, flags = []) {
  const dir = tempDir()
  const tarballs = folders.map((folder) => {
    const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: folder, encoding: 'utf8' })
    return path.join(dir, out.trim().split('\n').pop())
  })
  const app = path.join(dir, 'app')
  fs.mkdirSync(app)
  fs.writeFileSync(path.join(app, 'package.json'), '{"name":"app","private":true}')
  execFileSync('npm', ['install', '--silent', '--no-audit', '--no-fund', '--offline', ...flags, ...tarballs], { cwd: app })
  const run = (file, text) => {
    fs.writeFileSync(path.join(app, file), text)
    return execFileSync(process.execPath, [file], { cwd: app, encoding: 'utf8' }).trim()
  }
  return { app, run }
}

module.exports = { tempDir, eventually, canonical, assertGeneratedCommitted, assertTypesCompile, assertShipsSecurity, packInstalled, root: path.resolve(__dirname, '..'), repo: path.resolve(__dirname, '../../..') }
