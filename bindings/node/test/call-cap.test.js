'use strict'
// The cap on profile calls in flight: a call over it rejects at once with
// `too_many_calls`, the calls running go on, and a call's place comes back
// however it ends. Each test file runs in its own process, so the cap set
// here is this file's alone.
const test = require('node:test')
const assert = require('node:assert/strict')
const { callTool, setMaxToolCalls, maxToolCalls, WaitforError } = require('..')

const ARGS = { probe: { tool: 'status', args: {} }, until: { matches: 'ready' }, poll_sec: 1, max_wait_sec: 60 }

/** A host tool answering "starting" until `ready()`, and a promise of its first call. */
function status() {
  let ready = false
  let asked
  const first = new Promise((resolve) => { asked = resolve })
  const tools = async () => {
    asked()
    return ready ? 'ready' : 'starting'
  }
  return { tools, first, ready: () => { ready = true } }
}

test('the cap is set and read, and a bad cap is refused', () => {
  assert.equal(maxToolCalls(), 1024)
  assert.equal(setMaxToolCalls(7), 1024)
  assert.equal(maxToolCalls(), 7)
  assert.equal(setMaxToolCalls(1024), 7)
  assert.throws(() => setMaxToolCalls(-1), (e) => e instanceof WaitforError && e.code === 'invalid_arguments' && e.field === 'cap' && e.rule === 'out_of_range')
  assert.throws(() => setMaxToolCalls(1.5), (e) => e.code === 'invalid_arguments' && e.field === 'cap')
  assert.throws(() => setMaxToolCalls('8'), (e) => e.code === 'invalid_arguments' && e.field === 'cap')
  assert.equal(maxToolCalls(), 1024)
})

test('a call over the cap is refused at once and the running one goes on', async (t) => {
  setMaxToolCalls(1)
  t.after(() => setMaxToolCalls(1024))
  const first = status()
  const running = callTool('aura/wait_for', ARGS, { tools: first.tools })
  await first.first
  await assert.rejects(callTool('aura/wait_for', ARGS, { tools: first.tools }), (e) => {
    assert.ok(e instanceof WaitforError)
    assert.equal(e.code, 'too_many_calls')
    assert.equal(e.field, null)
    assert.match(e.message, /at most 1\b/)
    return true
  })
  first.ready()
  assert.equal((await running).reason, 'matched')
  // Its place came back.
  assert.equal((await callTool('aura/wait_for', ARGS, { tools: first.tools })).reason, 'matched')
})

test('an aborted call gives its place back', async (t) => {
  setMaxToolCalls(1)
  t.after(() => setMaxToolCalls(1024))
  const first = status()
  const ac = new AbortController()
  const running = callTool('aura/wait_for', ARGS, { tools: first.tools, signal: ac.signal })
  await first.first
  await assert.rejects(callTool('aura/wait_for', ARGS, { tools: first.tools }), (e) => e.code === 'too_many_calls')
  ac.abort()
  await assert.rejects(running, (e) => e.code === 'runtime' && /cancelled/.test(e.message))
  const next = status()
  next.ready()
  assert.equal((await callTool('aura/wait_for', ARGS, { tools: next.tools })).reason, 'matched')
})
