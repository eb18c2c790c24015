'use strict'
// The package as shipped: generated files match the sources, types compile
// for a strict consumer, and `npm pack` installs and works in a fresh folder.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { root, repo, assertGeneratedCommitted, assertTypesCompile, packInstalled } = require('./helpers.js')

test('generated index.js and index.d.ts match the committed ones (run after `npm run build`)', (t) => assertGeneratedCommitted(t, root))

test('a strict TypeScript consumer compiles (tsc --noEmit)', () => assertTypesCompile(root))

test('npm pack installs and works in a fresh folder (CommonJS and ESM)', () => {
  const { run } = packInstalled([root])
  assert.equal(run('cjs.js', "require('libwaitfor').wait({ until: { matches: 'ok' }, interval_ms: 10 }, () => 'ok').then((r) => console.log(r.outcome))"), 'matched')
  assert.equal(run('esm.mjs', "import { wait } from 'libwaitfor'; console.log((await wait({ until: { matches: 'ok' }, interval_ms: 10 }, async () => 'ok')).outcome)"), 'matched')
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
