'use strict'
// What crosses the bridge (src/bridge.rs, lib/channel.js) from an agent's
// arguments or a busy host: nothing may crash the process, and no probe or
// lent tool runs for a wait that has already ended. Scenarios that could
// crash run in a child process, so a crash is a failed test, not a dead
// runner.
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

const lib = path.resolve(__dirname, '../lib/waitfor.js')

/** Runs `main` (JavaScript text) in a fresh node; its exit status, signal and output. */
function run(main) {
  const child = spawnSync(process.execPath, ['-e', main], { encoding: 'utf8', timeout: 120000 })
  return { status: child.status, signal: child.signal, out: child.stdout, err: child.stderr }
}

test("an AURA call whose tool args hold more JSON values than napi converts (within core's 4 MiB) reaches the lent tool; the process lives", () => {
  const got = run(`
const { callTool } = require(${JSON.stringify(lib)})
const many = '[' + Array(1200000).fill('0').join(',') + ']'
const args = '{"probe": {"tool": "status", "args": {"a": ' + many + '}}, "until": {"matches": "up"}, "poll_sec": 1, "max_wait_sec": 5}'
callTool('aura/wait_for', args, { tools: (name, a) => (a.a.length === 1200000 ? 'up' : 'short') })
  .then((r) => console.log(r.reason), (e) => console.log('refused', e.code))
`)
  assert.deepEqual([got.status, got.signal, got.out.trim()], [0, null, 'matched'], got.err)
})

/** Blocks the event loop for `ms` (a host busy with other work). */
function block(ms) {
  const end = Date.now() + ms
  while (Date.now() < end);
}

test('a probe call queued while the event loop was busy past the deadline is not made once the wait has ended', async () => {
  const { start } = require(lib)
  let calls = 0
  let unblocked = false
  let lateCalls = 0
  const handle = start({ until: { matches: 'never' }, interval_ms: 10, max_wait_ms: 200 }, () => {
    calls++
    if (unblocked) lateCalls++
    // After the first answer, the loop is held well past the deadline; the
    // engine begins the next sample (and ends the wait) meanwhile.
    if (calls === 1) setImmediate(() => (block(1500), (unblocked = true)))
    return 'no'
  })
  const r = await handle.result
  assert.equal(r.outcome, 'timeout')
  assert.ok(unblocked)
  assert.equal(lateCalls, 0, 'the probe ran after its wait had ended')
})

test('a lent tool call queued while the event loop was busy past the deadline is not made once the call has ended', async () => {
  const { callTool } = require(lib)
  let calls = 0
  let unblocked = false
  let lateCalls = 0
  const args = { probe: { tool: 'status', args: {} }, until: { matches: 'up' }, poll_sec: 1, max_wait_sec: 2 }
  const out = await callTool('aura/wait_for', args, {
    tools: () => {
      calls++
      if (unblocked) lateCalls++
      if (calls === 1) setImmediate(() => (block(4000), (unblocked = true)))
      return 'down'
    },
  }).catch((e) => e)
  assert.ok(unblocked)
  assert.equal(out.reason ?? out.code, 'timeout', String(out.message))
  assert.equal(lateCalls, 0, 'the host tool ran after its call had ended')
})

test('progress reports made while the event loop is busy do not pile up: each wait hands over its newest', async () => {
  const fs = require('node:fs')
  const { tempDir } = require('./helpers.js')
  const { start } = require(lib)
  const dir = tempDir()
  const file = path.join(dir, 'log')
  fs.writeFileSync(file, 'starting\n')
  const waits = 20
  let reports = 0
  const spec = { probe: { file: { path: file } }, until: { matches: 'never' }, interval_ms: 10, progress_every_ms: 10, max_wait_ms: 60000 }
  const handles = Array.from({ length: waits }, () => start(spec, null, { grants: { fileRoots: [dir] }, onProgress: () => reports++ }))
  await new Promise((resolve) => setTimeout(resolve, 200))
  // Some 300 samples a wait while the loop is held; then every wait ends.
  block(3000)
  const before = reports
  for (const h of handles) h.cancel()
  const results = await Promise.all(handles.map((h) => h.result))
  assert.ok(results.every((r) => r.outcome === 'cancelled'))
  assert.ok(results.every((r) => r.samples > 20), 'the waits sampled while the loop was held')
  assert.ok(reports - before <= 3 * waits, `${reports - before} reports handed over after the loop was held`)
})

// Started cancelled, not cancelled right after its start: in between, the
// engine could begin a first sample (a cached spec's wait samples at once).
test('a wait whose signal aborted before it started never runs its command', async () => {
  const fs = require('node:fs')
  const { tempDir } = require('./helpers.js')
  const { wait } = require(lib)
  const dir = tempDir()
  for (let i = 0; i < 200; i++) {
    const spec = { probe: { command: { argv: ['touch', path.join(dir, String(i))] } }, until: { matches: 'x' }, max_wait_ms: 5000 }
    const r = await wait(spec, null, { grants: { commands: ['touch'] }, signal: AbortSignal.abort() })
    assert.equal(r.outcome, 'cancelled')
  }
  await new Promise((resolve) => setTimeout(resolve, 200))
  assert.deepEqual(fs.readdirSync(dir), [])
})
