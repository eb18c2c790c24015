'use strict'
// The package as shipped: generated files match the sources, types compile
// for a strict consumer, and `npm pack` installs and works in a fresh folder.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync, spawnSync } = require('node:child_process')
const { tempDir, root, repo } = require('./helpers.js')

test('generated index.js and index.d.ts match the committed ones (run after `npm run build`)', (t) => {
  const git = spawnSync('git', ['diff', '--exit-code', '--stat', 'HEAD', '--', 'index.js', 'index.d.ts'], { cwd: root, encoding: 'utf8' })
  if (git.error || git.status === 128) return t.skip('not a git checkout')
  assert.equal(git.status, 0, `generated files drifted; commit them:\n${git.stdout}`)
})

test('a strict TypeScript consumer compiles (tsc --noEmit)', () => {
  const tsc = require.resolve('typescript/bin/tsc')
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '-p', path.join(root, 'test/types/tsconfig.json')], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stdout + r.stderr)
})

test('npm pack installs and works in a fresh folder (CommonJS and ESM)', () => {
  const dir = tempDir()
  const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: root, encoding: 'utf8' }).trim().split('\n').pop()
  const app = path.join(dir, 'app')
  fs.mkdirSync(app)
  fs.writeFileSync(path.join(app, 'package.json'), '{"name":"app","private":true}')
  execFileSync('npm', ['install', '--silent', '--no-audit', '--no-fund', '--offline', path.join(dir, out)], { cwd: app })
  fs.writeFileSync(path.join(app, 'cjs.js'), `
    const { wait } = require('libwaitfor'); const { formatDuration } = require('libwaitfor/ax'); const mcp = require('libwaitfor/mcp')
    wait({ until: { matches: 'ok' }, interval_ms: 10 }, () => 'ok').then((r) => console.log(r.outcome, formatDuration(90000), typeof mcp.registerWaitTools))`)
  fs.writeFileSync(path.join(app, 'esm.mjs'), `
    import { wait } from 'libwaitfor'; import { WAIT_VERSION } from 'libwaitfor/ax'; import { registerWaitTools } from 'libwaitfor/mcp'
    console.log((await wait({ until: { matches: 'ok' }, interval_ms: 10 }, async () => 'ok')).outcome, WAIT_VERSION, typeof registerWaitTools)`)
  assert.equal(execFileSync(process.execPath, ['cjs.js'], { cwd: app, encoding: 'utf8' }).trim(), 'matched 90s function')
  assert.equal(execFileSync(process.execPath, ['esm.mjs'], { cwd: app, encoding: 'utf8' }).trim(), 'matched wait/1 function')
})

test('the package ships SECURITY.md, and every relative link in its README resolves inside it', () => {
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--silent'], { cwd: root, encoding: 'utf8' }))
  const files = new Set(packed.files.map((f) => f.path))
  assert.ok(files.has('SECURITY.md'), `SECURITY.md is not in the package: ${[...files].join(', ')}`)
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
  const targets = [...readme.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1]).filter((t) => !/^[a-z]+:/.test(t))
  assert.ok(targets.includes('SECURITY.md'), 'the README links to SECURITY.md')
  for (const target of targets) assert.ok(files.has(path.posix.normalize(target)), `README links to ${target}, which the package lacks`)
})

test('the packaged SECURITY.md is the repository’s (cp SECURITY.md bindings/node/ after editing it)', () => {
  assert.equal(fs.readFileSync(path.join(root, 'SECURITY.md'), 'utf8'), fs.readFileSync(path.join(repo, 'SECURITY.md'), 'utf8'))
})
