'use strict'
// The package as shipped: generated files match the sources, types compile for
// a strict consumer, CommonJS and ESM give the same objects, refusals are
// libwaitfor's WaitforError, and `npm pack` installs beside libwaitfor's and
// works in a fresh folder.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { assertGeneratedCommitted, assertTypesCompile, assertShipsSecurity, packInstalled, tempDir } = require('../../node/test/helpers.js')

const root = path.resolve(__dirname, '..')

test('generated index.js and index.d.ts match the committed ones (run after `npm run build`)', (t) => assertGeneratedCommitted(t, root))

test('a strict TypeScript consumer compiles (tsc --noEmit)', () => assertTypesCompile(root))

test('the package ships SECURITY.md, and every relative link in its README resolves inside it', () => assertShipsSecurity(root))

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

test('installed without its platform package, it fails with an error naming that package', {
  skip: !(process.platform === 'linux' && process.arch === 'x64' && process.report.getReport().header.glibcVersionRuntime) && 'names the linux-x64-gnu package',
}, () => {
  // The package as scripts/dist.sh publishes it (its platform packages as
  // optionalDependencies, no add-on of its own), beside this checkout's libwaitfor.
  const app = tempDir('waitfor-ax-bare-')
  const ax = path.join(app, 'node_modules/@libwaitfor/ax')
  fs.mkdirSync(ax, { recursive: true })
  fs.cpSync(path.join(root, 'lib'), path.join(ax, 'lib'), { recursive: true })
  fs.copyFileSync(path.join(root, 'index.js'), path.join(ax, 'index.js'))
  const pkg = require('../package.json')
  const platforms = fs.readdirSync(path.join(root, 'npm'))
  const optionalDependencies = Object.fromEntries(platforms.map((p) => [`${pkg.name}-${p}`, pkg.version]))
  fs.writeFileSync(path.join(ax, 'package.json'), JSON.stringify({ ...pkg, optionalDependencies }))
  fs.symlinkSync(path.join(root, '../node'), path.join(app, 'node_modules/libwaitfor'))
  const r = spawnSync(process.execPath, ['-e', "require('@libwaitfor/ax')"], { cwd: app, encoding: 'utf8' })
  assert.notEqual(r.status, 0)
  assert.match(r.stderr, /@libwaitfor\/ax: the native add-on for this host \(linux-x64-gnu\) is in the package @libwaitfor\/ax-linux-x64-gnu, which did not load/)
  assert.match(r.stderr, /code: 'ERR_LIBWAITFOR_NO_ADDON'/)
})
