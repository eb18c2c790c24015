'use strict'
// The event loop while waits run: no blocking, no libuv pool thread held,
// and the process exits on its own when no wait is pending.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { monitorEventLoopDelay } = require('node:perf_hooks')
const { start, callTool, WaitforError } = require('..')
const { tempDir, eventually, root } = require('./helpers.js')

const N = 1000

/**
 * This (the main) thread's scheduler statistics in milliseconds: time on a
 * core, and time runnable but waiting for one; null where there are none.
 */
function mainThreadMs() {
  try {
    const [ran, queued] = fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ').map(Number)
    return { ran: ran / 1e6, queued: queued / 1e6 }
  } catch {
    return null
  }
}

function thousandWaits(probe) {
  return Array.from({ length: N }, () => start({ until: { matches: 'never' }, interval_ms: 50, max_wait_ms: 120000 }, probe))
}

test('1,000 pending waits: timers keep firing and fs.readFile completes while they run', async () => {
  let calls = 0
  const handles = thousandWaits(() => {
    calls++
    return 'still waiting'
  })
  try {
    await eventually(() => calls >= N, { timeoutMs: 30000 })
    const lag = monitorEventLoopDelay({ resolution: 10 })
    lag.enable()
    // The default libuv pool has 4 threads: if each wait held one, these
    // reads would never complete.
    const self = fs.promises.readFile(__filename)
    const reads = await Promise.all(Array.from({ length: 8 }, () => fs.promises.readFile(__filename)))
    assert.equal((await self).length, reads[0].length)
    await new Promise((r) => setTimeout(r, 500))
    lag.disable()
    // Generous: the machine is shared; a blocked loop would show seconds.
    assert.ok(lag.max / 1e6 < 1000, `event loop delay max ${lag.max / 1e6} ms`)
  } finally {
    for (const h of handles) h.cancel()
  }
  const results = await Promise.all(handles.map((h) => h.result))
  assert.ok(results.every((r) => r.outcome === 'cancelled'))
})

test('64 MiB answers and errors from probes and a lent tool cost the output cap without holding the event loop', async () => {
  const big = 'x'.repeat(64 << 20)
  big.charCodeAt(0) // flattened now, not while the loop is watched
  const numbers = Array.from({ length: 1 << 22 }, (_, i) => i)
  const spec = { until: { matches: 'ready' }, interval_ms: 10, max_wait_ms: 10000 }
  const aura = { probe: { tool: 'status', args: {} }, until: { matches: 'up' }, poll_sec: 1, max_wait_sec: 5 }
  const throws = () => {
    throw new Error(big)
  }
  const lag = monitorEventLoopDelay({ resolution: 5 })
  const before = mainThreadMs()
  lag.enable()
  const answers = [() => big, async () => big, () => ({ a: big }), () => ({ json: numbers }), throws, () => Promise.reject(big)]
  const [results, tools] = await Promise.all([
    Promise.all(answers.map((probe) => start(spec, probe).result)),
    Promise.all(answers.map((tool) => callTool('aura/wait_for', aura, { tools: tool }).catch((e) => e))),
  ])
  lag.disable()
  // Time the loop waited for a core on a loaded machine is no work of the
  // add-on's: taken off the delay, so the bound holds however busy the
  // machine is and still fails for work (or a block) on the loop. The
  // loop's own CPU time, which no load adds to, is bounded too.
  const after = before && mainThreadMs()
  const [ran, queued] = after ? [after.ran - before.ran, after.queued - before.queued] : [0, 0]
  const overCap = ['error', 'output of sample 1 exceeds the cap of 262144 bytes (262145 bytes read)']
  for (const r of results.slice(0, 4)) assert.deepEqual([r.outcome, r.error], overCap)
  for (const e of tools.slice(0, 4)) assert.ok(e instanceof WaitforError && /returned 262145 bytes on sample 1, over the 262144-byte cap/.test(e.message), String(e))
  // An error is cut to the engine's 4 KiB, with its mark.
  const cut = ' ... [cut: the message is longer than 4096 bytes]'
  for (const r of results.slice(4)) assert.deepEqual([r.outcome, r.error.length, r.error.endsWith(cut)], ['probe_error', 14 + 4096, true])
  for (const e of tools.slice(4)) assert.ok(e instanceof WaitforError && e.message.includes(cut) && e.message.length < 4096 + 200, `${e.message.length} characters`)
  // Encoding or serializing any of them whole would take ~150 ms.
  assert.ok(lag.max / 1e6 - queued < 50, `event loop delay max ${lag.max / 1e6} ms, ${queued} ms of it waiting for a core`)
  // All twelve calls cost the loop ~15 ms of CPU here.
  assert.ok(ran < 100, `the loop ran ${ran} ms`)
})

function runScript(dir, source) {
  const file = path.join(dir, `script-${Math.random().toString(36).slice(2)}.js`)
  fs.writeFileSync(file, source)
  return spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60000 })
}

test('the process exits on its own once no wait is pending', () => {
  const dir = tempDir()
  const r = runScript(dir, `
    const { wait, start } = require(${JSON.stringify(root)})
    let n = 0
    wait({ until: { matches: 'done' }, interval_ms: 10, max_wait_ms: 5000 }, () => (++n < 3 ? 'no' : 'done'))
      .then((r) => console.log('outcome', r.outcome))
    const h = start({ until: { matches: 'x' }, interval_ms: 10, max_wait_ms: 60000 }, () => { throw new Error('boom') })
    h.result.then((r) => console.log('second', r.outcome))
  `)
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /outcome matched/)
  assert.match(r.stdout, /second probe_error/)
})

test('a pending wait keeps the process alive until it settles, like a timer', () => {
  const dir = tempDir()
  const r = runScript(dir, `
    const { wait } = require(${JSON.stringify(root)})
    wait({ probe: { command: { argv: ['sh', '-c', 'echo tick'] } }, until: { matches: 'never' }, interval_ms: 20, max_wait_ms: 300 }, null, { grants: { commands: ['sh'] } })
      .then((r) => console.log('outcome', r.outcome))
  `)
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /outcome timeout/)
})

test('a probe that throws or rejects in many waits never crashes the process', () => {
  const dir = tempDir()
  const r = runScript(dir, `
    const { wait } = require(${JSON.stringify(root)})
    const spec = { until: { matches: 'x' }, interval_ms: 10, max_wait_ms: 2000 }
    Promise.all([
      ...Array.from({ length: 50 }, () => wait(spec, () => { throw new Error('boom') })),
      ...Array.from({ length: 50 }, () => wait(spec, async () => { throw new Error('async boom') })),
      ...Array.from({ length: 50 }, () => wait(spec, () => Promise.reject('a string'))),
    ]).then((rs) => console.log('all', rs.every((r) => r.outcome === 'probe_error')))
  `)
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /all true/)
})
