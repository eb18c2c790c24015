'use strict'
// The package as shipped: generated files match the sources, types compile
// for a strict consumer, and `npm pack` installs and works in a fresh folder.
const test = require('node:test')
const assert = require('node:assert/strict')
const { root, assertGeneratedCommitted, assertTypesCompile, assertShipsSecurity, packInstalled } = require('./helpers.js')

test('generated index.js and index.d.ts match the committed ones (run after `npm run build`)', (t) => assertGeneratedCommitted(t, root))

test('a strict TypeScript consumer compiles (tsc --noEmit)', () => assertTypesCompile(root))

test('npm pack installs and works in a fresh folder (CommonJS and ESM)', () => {
  const { run } = packInstalled([root])
  assert.equal(run('cjs.js', "require('libwaitfor').wait({ until: { matches: 'ok' }, interval_ms: 10 }, () => 'ok').then((r) => console.log(r.outcome))"), 'matched')
  assert.equal(run('esm.mjs', "import { wait } from 'libwaitfor'; console.log((await wait({ until: { matches: 'ok' }, interval_ms: 10 }, async () => 'ok')).outcome)"), 'matched')
})

test('the package ships SECURITY.md, and every relative link in its README resolves inside it', () => assertShipsSecurity(root))
