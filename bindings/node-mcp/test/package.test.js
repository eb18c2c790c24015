'use strict'
// The package as shipped: its types compile for a strict consumer, and `npm pack`
// installs beside libwaitfor's and works in a fresh folder.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { assertTypesCompile, assertShipsSecurity, packInstalled } = require('../../node/test/helpers.js')

const root = path.resolve(__dirname, '..')

test('a strict TypeScript consumer compiles (tsc --noEmit)', () => assertTypesCompile(root))

test('the package ships SECURITY.md, and every relative link in its README resolves inside it', () => assertShipsSecurity(root))

test('npm pack installs beside libwaitfor and works in a fresh folder (CommonJS and ESM)', () => {
  // The SDK, a peer dependency, is the app's to install: loading the package does not need it.
  const { run } = packInstalled([path.join(root, '../node'), root], ['--legacy-peer-deps'])
  const cjs = `const { registerWaitTools } = require('@libwaitfor/mcp')
    try { registerWaitTools({}, {}) } catch (e) { console.log(e instanceof require('libwaitfor').WaitforError, e.field) }`
  assert.equal(run('cjs.js', cjs), 'true server')
  assert.equal(run('esm.mjs', "import { registerWaitTools } from '@libwaitfor/mcp'; console.log(typeof registerWaitTools)"), 'function')
})
