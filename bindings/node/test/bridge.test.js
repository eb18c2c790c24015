'use strict'
// What crosses the bridge (src/bridge.rs, lib/channel.js) from an agent's
// arguments: nothing may crash the process. Scenarios that could crash run
// in a child process, so a crash is a failed test, not a dead runner.
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
