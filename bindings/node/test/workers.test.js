'use strict'
// The package in worker_threads: a Worker that loads it may end (terminated,
// with waits and tool calls pending) and others load it again, with no crash
// of the process. Each scenario runs in a child process, so a crash is a
// failed test, not a dead runner.
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

/** A main that starts `count` Workers one after the other, each running `body` and terminated once it says so. */
function workers(body, count, mainFirst = false) {
  return `
const { Worker } = require('node:worker_threads')
${mainFirst ? `require(${JSON.stringify(lib)})` : ''}
const code = ${JSON.stringify(`const { callTool, wait } = require(${JSON.stringify(lib)}); ${body}; require('node:worker_threads').parentPort.postMessage('busy')`)}
;(async () => {
  for (let i = 0; i < ${count}; i++) {
    const w = new Worker(code, { eval: true })
    await new Promise((resolve, reject) => (w.once('message', resolve), w.once('error', reject)))
    await w.terminate()
  }
  const { wait } = require(${JSON.stringify(lib)})
  const r = await wait({ until: { matches: 'up' }, max_wait_ms: 5000 }, () => 'up')
  console.log('main:', r.outcome)
})()
`
}

test('Workers that load the package one after another, the main thread never having loaded it, do not crash the process', () => {
  const got = run(workers('', 5))
  assert.deepEqual([got.status, got.signal, got.out.trim()], [0, null, 'main: matched'], got.err)
})

test('Workers terminated with waits, tool calls and hung probes pending do not crash the process', () => {
  const body = `
const args = { probe: { tool: 'status', args: {} }, until: { matches: 'up' }, poll_sec: 1, max_wait_sec: 5 }
for (let i = 0; i < 50; i++) {
  callTool('aura/wait_for', args, { tools: () => new Promise(() => {}) }).catch(() => {})
  callTool('aura/wait_for', args, { tools: () => 'no' }).catch(() => {})
  wait({ until: { matches: 'up' }, interval_ms: 10, max_wait_ms: 5000 }, () => 'no')
  wait({ until: { matches: 'up' }, interval_ms: 10, max_wait_ms: 5000 }, () => new Promise(() => {}))
}`
  for (const mainFirst of [true, false]) {
    const got = run(workers(body, 10, mainFirst))
    assert.deepEqual([got.status, got.signal, got.out.trim()], [0, null, 'main: matched'], got.err)
  }
})

test("a terminated Worker's waits end with it: their commands do not run to the deadline", () => {
  const pidFile = path.join(require('node:os').tmpdir(), `waitfor-worker-${process.pid}`)
  const got = run(`
const fs = require('node:fs')
const { Worker } = require('node:worker_threads')
const code = ${JSON.stringify(`
const fs = require('node:fs')
const { wait } = require(${JSON.stringify(lib)})
const argv = ['sh', '-c', 'echo $$ > ${pidFile}.tmp && mv ${pidFile}.tmp ${pidFile} && exec sleep 300']
wait({ probe: { command: { argv } }, until: { matches: 'never' }, max_wait_ms: 120000 }, undefined, { grants: { commands: 'any' } })
const started = setInterval(() => fs.existsSync(${JSON.stringify(pidFile)}) && (clearInterval(started), require('node:worker_threads').parentPort.postMessage('busy')), 10)`)}
;(async () => {
  const w = new Worker(code, { eval: true })
  await new Promise((resolve, reject) => (w.once('message', resolve), w.once('error', reject)))
  const pid = Number(fs.readFileSync(${JSON.stringify(pidFile)}, 'utf8'))
  fs.rmSync(${JSON.stringify(pidFile)})
  await w.terminate()
  const alive = () => { try { process.kill(pid, 0); return !/^\\S+ \\(.*\\) Z/.test(fs.readFileSync('/proc/' + pid + '/stat', 'utf8')) } catch { return false } }
  const until = Date.now() + 20000
  while (alive() && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
  console.log(alive() ? 'still running' : 'ended')
  process.exit(0)
})()
`)
  assert.deepEqual([got.status, got.out.trim()], [0, 'ended'], got.err)
})

test('the process exits with the code it asked for while waits and tool calls are pending', () => {
  const got = run(`
const { callTool, wait } = require(${JSON.stringify(lib)})
const args = { probe: { tool: 'status', args: {} }, until: { matches: 'up' }, poll_sec: 1, max_wait_sec: 5 }
for (let i = 0; i < 200; i++) {
  callTool('aura/wait_for', args, { tools: () => new Promise(() => {}) }).catch(() => {})
  wait({ until: { matches: 'up' }, interval_ms: 10, max_wait_ms: 5000 }, () => 'no')
}
setTimeout(() => process.exit(3), 50)
`)
  assert.deepEqual([got.status, got.signal], [3, null], got.err)
})
