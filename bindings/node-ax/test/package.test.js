'use strict'
// The package as shipped: generated files match the sources, types compile for
// a strict consumer, CommonJS and ESM give the same objects, refusals are
// libwaitfor's WaitforError, and `npm pack` installs beside libwaitfor's and
// works in a fresh folder.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { assertGeneratedCommitted, assertTypesCompile, packInstalled } = require('../../node/test/helpers.js')

const root = path.resolve(__dirname, '..')

test('generated index.js and index.d.ts match the committed ones (run after `npm run build`)', (t) => assertGeneratedCommitted(t, root))

test('a strict TypeScript consumer compiles (tsc --noEmit)', () => assertTypesCompile(root))

test('CommonJS and ESM give the same objects; a refusal is libwaitfor’s WaitforError', async () => {
  const [cjs, esm] = [require('@libwaitfor/ax'), await import('@libwaitfor/ax')]
  for (const name of Object.keys(cjs)) assert.equal(esm[name], cjs[name], name)
  const { WaitforError } = require('libwaitfor')
  assert.equal(cjs.WaitforError, WaitforError)
  assert.throws(() => cjs.formatDuration(-1), (e) => e instanceof WaitforError && e.field === 'duration')
})

test('npm pack installs beside libwaitfor and works in a fresh folder (CommonJS and ESM)', () => {
  const { run } = packInstalled([path.join(root, '../node'), root])
  const cjs = `const { formatDuration } = require('@libwaitfor/ax')
    try { formatDuration(-1) } catch (e) { console.log(formatDuration(90000), e instanceof require('libwaitfor').WaitforError) }`
  assert.equal(run('cjs.js', cjs), '90s true')
  assert.equal(run('esm.mjs', "import { WAIT_VERSION } from '@libwaitfor/ax'; console.log(WAIT_VERSION)"), 'wait/1')
})
