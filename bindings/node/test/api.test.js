'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { getEventListeners } = require('node:events')
const { wait, start, checkSpec, checkArguments, callTool, toolDefinitions, profiles, WaitforError, RESULT_SCHEMA, SPEC_SCHEMA } = require('..')
const { tempDir, eventually, repo } = require('./helpers.js')
const Ajv = require('ajv/dist/2020')

const fast = { interval_ms: 10, max_wait_ms: 5000 }
const validResult = new Ajv({ strict: false }).compile(RESULT_SCHEMA)

test('a sync JavaScript probe is polled until the condition holds', async () => {
  let n = 0
  const r = await wait({ until: { matches: 'ready' }, ...fast }, () => (++n < 3 ? 'starting' : 'ready'))
  assert.equal(r.outcome, 'matched')
  assert.equal(r.samples, 3)
  assert.ok(validResult(r), JSON.stringify(validResult.errors))
})

test('a probe returning a Promise, a Buffer, an object or an observation', async () => {
  const asyncR = await wait({ until: { matches: 'ok' }, ...fast }, async () => 'ok')
  assert.equal(asyncR.outcome, 'matched')
  const buf = await wait({ until: { matches: 'bytes' }, ...fast }, () => Buffer.from('some bytes'))
  assert.equal(buf.outcome, 'matched')
  const obj = await wait({ until: { json: { pointer: '/status', equals: 'up' } }, ...fast }, () => ({ status: 'up' }))
  assert.equal(obj.outcome, 'matched')
  const exit = await wait({ until: { exit_code: 3 }, ...fast }, () => ({ text: 'done', exitCode: 3 }))
  assert.equal(exit.outcome, 'matched')
  assert.equal(exit.exit_code, 3)
  const gone = await wait({ until: { matches: 'never' }, ...fast }, () => ({ text: '', gone: true }))
  assert.equal(gone.outcome, 'gone')
})

test('a probe that throws or rejects is a probe error, never a crash', async () => {
  const thrown = await wait({ until: { matches: 'x' }, ...fast }, () => {
    throw new Error('boom')
  })
  assert.equal(thrown.outcome, 'probe_error')
  assert.match(thrown.probe.last_error, /boom/)
  const rejected = await wait({ until: { matches: 'x' }, ...fast }, () => Promise.reject(new TypeError('nope')))
  assert.equal(rejected.outcome, 'probe_error')
  assert.match(rejected.probe.last_error, /nope/)
  const odd = await wait({ until: { matches: 'x' }, ...fast }, () => {
    throw Symbol('not an error')
  })
  assert.equal(odd.outcome, 'probe_error')
  let n = 0
  const tolerated = await wait({ until: { matches: 'ok' }, on_probe_error: { tolerate: 5 }, ...fast }, () => {
    if (++n < 3) throw new Error('flaky')
    return 'ok'
  })
  assert.equal(tolerated.outcome, 'matched')
  assert.equal(tolerated.probe.errors, 2)
  const unreadable = await wait({ until: { matches: 'x' }, ...fast }, () => ({ big: 10n }))
  assert.equal(unreadable.outcome, 'probe_error')
})

test('a probe still running at the deadline is abandoned and the Promise resolves on time', async () => {
  const began = Date.now()
  let n = 0
  const r = await wait({ until: { matches: 'x' }, interval_ms: 10, max_wait_ms: 300 }, () => (++n === 1 ? 'first' : new Promise(() => {})))
  assert.equal(r.outcome, 'timeout')
  assert.equal(r.probe.abandoned, 1)
  assert.equal(n, 2, 'no call starts after the abandoned one')
  assert.ok(Date.now() - began < 3000, 'resolved near its deadline')
  // No sample ever completed: the engine calls that a probe error.
  const never = await wait({ until: { matches: 'x' }, interval_ms: 10, max_wait_ms: 200 }, () => new Promise(() => {}))
  assert.equal(never.outcome, 'probe_error')
  assert.equal(never.probe.abandoned, 1)
})

test('built-in probes: command and file', async () => {
  const cmd = await wait({ probe: { command: { argv: ['sh', '-c', 'echo build ok'] } }, until: { matches: 'ok' }, ...fast }, null, {
    grants: { commands: ['sh'] },
  })
  assert.equal(cmd.outcome, 'matched')
  const dir = tempDir()
  const log = path.join(dir, 'app.log')
  fs.writeFileSync(log, 'old line\n')
  let sampled = false
  const handle = start({ probe: { file: { path: log } }, until: { matches: 'listening' }, progress_every_ms: 10, ...fast }, null, {
    onProgress: () => (sampled = true),
    grants: { fileRoots: [dir] },
  })
  await eventually(() => sampled)
  fs.appendFileSync(log, 'server listening on 8080\n')
  const r = await handle.result
  assert.equal(r.outcome, 'matched')
  assert.deepEqual(r.matched_lines, ['server listening on 8080'])
})

test('start: wake samples now, cancel ends with cancelled, result settles once', async () => {
  let samples = 0
  let state = 'waiting'
  const h = start({ until: { matches: 'go' }, interval_ms: 60000, max_wait_ms: 120000 }, () => {
    samples++
    return state
  })
  await eventually(() => samples === 1)
  state = 'go'
  h.wake()
  const r = await h.result
  assert.equal(r.outcome, 'matched')
  assert.equal(r.woken, true)
  const h2 = start({ until: { matches: 'never' }, interval_ms: 60000, max_wait_ms: 120000 }, () => '')
  h2.cancel()
  assert.equal((await h2.result).outcome, 'cancelled')
  h2.cancel() // harmless after the end
  h2.wake()
})

test('probes and onProgress that start, await, cancel or abort waits, their own included: every wait ends, none late', async () => {
  const never = { until: { matches: 'never' }, interval_ms: 10, max_wait_ms: 20000 }
  // A probe awaiting a wait of its own, 200 at once.
  const nested = await Promise.all(Array.from({ length: 200 }, () =>
    wait({ until: { matches: 'matched' }, ...fast }, async () => (await wait({ until: { matches: 'ready' }, ...fast }, () => 'ready')).outcome)))
  assert.deepEqual(new Set(nested.map((r) => r.outcome)), new Set(['matched']))
  // A probe cancelling its own wait, or aborting its signal, or awaiting its own result.
  let own
  own = start(never, () => { own.cancel(); return 'no' })
  assert.equal((await own.result).outcome, 'cancelled')
  const ac = new AbortController()
  assert.equal((await wait(never, () => { ac.abort(); return 'no' }, { signal: ac.signal })).outcome, 'cancelled')
  let self
  self = start({ ...never, max_wait_ms: 300 }, async () => (await self.result).outcome)
  assert.equal((await self.result).outcome, 'probe_error')
  // onProgress starting waits and then cancelling its own.
  const started = []
  let reporting
  reporting = start({ ...never, progress_every_ms: 10 }, () => 'no', {
    onProgress: () => {
      started.push(wait({ until: { matches: 'ready' }, ...fast }, () => 'ready'))
      if (started.length === 5) reporting.cancel()
    },
  })
  assert.equal((await reporting.result).outcome, 'cancelled')
  assert.ok((await Promise.all(started)).every((r) => r.outcome === 'matched'))
})

test('AbortSignal cancels: aborted later, and already aborted (the probe is never called)', async () => {
  const c = new AbortController()
  let calls = 0
  const p = wait({ until: { matches: 'never' }, interval_ms: 10, max_wait_ms: 60000 }, () => {
    calls++
    return ''
  }, { signal: c.signal })
  await eventually(() => calls > 0)
  c.abort()
  assert.equal((await p).outcome, 'cancelled')
  let called = 0
  const r = await wait({ until: { matches: 'x' }, ...fast }, () => {
    called++
    return 'x'
  }, { signal: AbortSignal.abort() })
  assert.equal(r.outcome, 'cancelled')
  assert.equal(called, 0)
})

test('one AbortSignal shared by 30 waits: one listener, no leak warning, every wait cancelled, nothing left on the signal', async () => {
  const warnings = []
  const onWarning = (w) => warnings.push(w.name)
  process.on('warning', onWarning)
  try {
    const c = new AbortController()
    const spec = { until: { matches: 'never' }, interval_ms: 10, max_wait_ms: 60000 }
    const quick = wait({ until: { matches: 'x' }, ...fast }, () => 'x', { signal: c.signal })
    let calls = 0
    const waits = Array.from({ length: 30 }, () => wait(spec, () => (calls++, ''), { signal: c.signal }))
    assert.equal((await quick).outcome, 'matched')
    await eventually(() => calls >= 30)
    assert.equal(getEventListeners(c.signal, 'abort').length, 1)
    c.abort()
    const outcomes = (await Promise.all(waits)).map((r) => r.outcome)
    assert.deepEqual(outcomes, Array(30).fill('cancelled'))
    assert.equal(getEventListeners(c.signal, 'abort').length, 0)
    const ended = new AbortController()
    await wait({ until: { matches: 'x' }, ...fast }, () => 'x', { signal: ended.signal })
    assert.equal(getEventListeners(ended.signal, 'abort').length, 0, 'a wait that ends forgets its listener')
    await new Promise(setImmediate) // warnings are emitted on a later tick
    assert.deepEqual(warnings, [])
  } finally {
    process.off('warning', onWarning)
  }
})

test('a signal that cannot be listened to is refused as invalid input before anything starts: wait, start, callTool', async () => {
  const refused = (e) => e instanceof WaitforError && e.code === 'invalid_arguments' && e.field === 'options.signal' && e.rule === 'wrong_type'
  const spec = { until: { matches: 'never' }, interval_ms: 10, max_wait_ms: 5000 }
  const aura = { probe: { tool: 'status', args: {} }, until: { matches: 'up' }, poll_sec: 1, max_wait_sec: 5 }
  let calls = 0
  const probe = () => (calls++, '')
  // Passes `instanceof AbortSignal`; its `aborted` throws.
  const fake = Object.create(AbortSignal.prototype)
  // A real signal whose addEventListener throws.
  const deaf = new AbortController()
  deaf.signal.addEventListener = () => {
    throw new Error('no listeners here')
  }
  for (const signal of [fake, deaf.signal]) {
    await assert.rejects(wait(spec, probe, { signal }), refused)
    await assert.rejects(callTool('aura/wait_for', aura, { tools: probe, signal }), refused)
  }
  assert.throws(() => start(spec, probe, { signal: fake }), refused)
  await assert.rejects(start(spec, probe, { signal: deaf.signal }).result, refused)
  // A wait of its own, sampled five times at the same pace: a wait left running would have been called meanwhile.
  let samples = 0
  assert.equal((await wait({ ...spec, until: { matches: 'x' } }, () => (++samples < 5 ? '' : 'x'))).outcome, 'matched')
  assert.equal(calls, 0)
  // Nothing was left on the signal: listened to again, it still cancels.
  delete deaf.signal.addEventListener
  const p = wait(spec, () => '', { signal: deaf.signal })
  deaf.abort()
  assert.equal((await p).outcome, 'cancelled')
})

test('a callback on a shared AbortSignal that throws keeps none of the others from running', () => {
  const { onAbort } = require('../lib/abort.js')
  // A signal whose listener the test calls itself: an error thrown from a
  // real signal's listener surfaces as an uncaught exception.
  const signal = { aborted: false, listener: null, addEventListener(_type, fn) { this.listener = fn }, removeEventListener() {} }
  const heard = []
  onAbort(signal, () => heard.push('first'))
  onAbort(signal, () => {
    throw new Error('broken')
  })
  onAbort(signal, () => heard.push('last'))
  assert.throws(() => signal.listener(), /broken/)
  assert.deepEqual(heard, ['first', 'last'])
})

test('onProgress reports samples; a throwing onProgress does not break the wait', async () => {
  const reports = []
  let n = 0
  const r = await wait({ until: { matches: 'done' }, interval_ms: 10, progress_every_ms: 10, max_wait_ms: 5000 }, () => (++n < 6 ? `step ${n}` : 'done'), {
    onProgress: (p) => reports.push(p),
  })
  assert.equal(r.outcome, 'matched')
  await eventually(() => reports.length > 0)
  assert.equal(typeof reports[0].samples, 'number')
  assert.match(reports[0].last_line, /step/)
})

test('a throwing onProgress is a process warning: its wait goes on, and so do the others', async () => {
  const warnings = []
  const heard = (w) => warnings.push(w)
  process.on('warning', heard)
  try {
    const spec = { until: { matches: 'done' }, interval_ms: 10, progress_every_ms: 10, max_wait_ms: 5000 }
    const probe = () => {
      let n = 0
      return () => (++n < 6 ? `step ${n}` : 'done')
    }
    const boom = new Error('a host bug')
    const throwing = wait(spec, probe(), { onProgress: () => { throw boom } })
    const other = wait(spec, probe(), { onProgress: () => {} })
    const thrown = wait(spec, probe(), { onProgress: () => { throw 'not an Error' } })
    // Values Node could not print as a warning themselves: printing one
    // after the callback returned would be an uncaught exception.
    class Unprintable extends Error {
      toString() {
        throw new Error('no text')
      }
    }
    const unprintable = new Unprintable('x')
    const named = new Error('y')
    Object.defineProperty(named, 'name', { get: () => { throw new Error('no name') } })
    const proxy = new Proxy({}, { get: () => { throw new Error('no property') }, getPrototypeOf: () => { throw new Error('no prototype') } })
    const odd = [unprintable, named, proxy, Symbol('s')].map((value) => wait(spec, probe(), { onProgress: () => { throw value } }))
    for (const r of await Promise.all([throwing, other, thrown, ...odd])) assert.equal(r.outcome, 'matched')
    await eventually(() => warnings.some((w) => w.cause === boom) && warnings.some((w) => /not an Error/.test(w.message)))
    await eventually(() => [unprintable, named, proxy].every((value) => warnings.some((w) => w.cause === value)) && warnings.some((w) => /Symbol\(s\)/.test(w.message)))
  } finally {
    process.off('warning', heard)
  }
})

test('an async onProgress that rejects is a process warning, not an unhandled rejection ending the process', async () => {
  const warnings = []
  const heard = (w) => warnings.push(w)
  process.on('warning', heard)
  try {
    const spec = { until: { matches: 'never' }, interval_ms: 10, progress_every_ms: 10, max_wait_ms: 300 }
    const rejected = new Error('an async host bug')
    const thenThrows = new Error('a thenable whose then throws')
    const waits = [
      wait(spec, () => '', { onProgress: async () => { throw rejected } }),
      wait(spec, () => '', { onProgress: () => ({ then: () => { throw thenThrows } }) }),
      wait(spec, () => ''),
    ]
    for (const r of await Promise.all(waits)) assert.equal(r.outcome, 'timeout')
    const toolRejected = new Error('an async notice handler bug')
    const out = await callTool('aura/wait_for', { probe: { tool: 'status', args: {} }, until: { matches: 'never' }, max_wait_sec: 2, poll_sec: 1 }, {
      tools: () => 'starting',
      onProgress: async () => { throw toolRejected },
    })
    assert.equal(out.reason, 'timeout')
    await eventually(() => [rejected, thenThrows, toolRejected].every((cause) => warnings.some((w) => w.cause === cause)))
  } finally {
    process.off('warning', heard)
  }
})

test('policy: the host ceiling clamps max_wait_ms and is reported', async () => {
  const r = await wait({ until: { matches: 'never' }, interval_ms: 10, max_wait_ms: 100000 }, () => '', { policy: { maxWaitCeilingMs: 50 } })
  assert.equal(r.outcome, 'timeout')
  assert.equal(r.clamped, true)
  assert.equal(r.effective_max_wait_ms, 50)
})

test('bad input is a typed WaitforError naming the field and rule', async () => {
  await assert.rejects(wait({ until: { matches: '(' }, regex: true }, () => ''), (e) => e instanceof WaitforError && e.code === 'invalid_spec' && e.field === 'until.matches' && e.rule === 'invalid_regex')
  await assert.rejects(wait({ until: { matches: 'x' }, nope: 1 }, () => ''), (e) => e.code === 'invalid_spec' && e.rule === 'unknown_field')
  await assert.rejects(wait('{not json', () => ''), (e) => e.code === 'invalid_spec' && e.rule === 'invalid_json')
  // A lone surrogate (JSON.stringify escapes it; serde_json refuses the escape) is named by its string.
  for (const spec of ['{"until": {"matches": "\\ud800"}}', { until: { matches: 'a\udc00' } }]) {
    await assert.rejects(wait(spec, () => ''), (e) => e.code === 'invalid_spec' && e.rule === 'invalid_json' && e.field === 'until.matches' && /^until\.matches: not JSON: /.test(e.message))
  }
  // An unknown key of a megabyte is named cut, not repeated whole.
  const key = 'x'.repeat(1 << 20)
  await assert.rejects(wait({ until: { matches: 'x' }, [key]: 1 }, () => ''), (e) => e.rule === 'unknown_field' && e.field.startsWith('xxxx') && e.field.endsWith('... (cut; 1048576 bytes in all)') && e.field.length < 300 && e.message.length < 600)
  // So is one in the options this package checks before the engine sees them.
  const cutOption = (at) => (e) => e.code === 'invalid_arguments' && e.rule === 'unknown_field' && e.field.startsWith(`${at}.xxxx`) && e.field.endsWith(`... (cut; ${at.length + 1 + key.length} bytes in all)`) && e.field.length < 300 && e.message.length < 600
  await assert.rejects(wait({ until: { matches: 'x' } }, () => '', { grants: { [key]: true } }), cutOption('options.grants'))
  await assert.rejects(wait({ until: { matches: 'x' } }, () => '', { policy: { [key]: 1 } }), cutOption('options.policy'))
  await assert.rejects(wait({ until: { matches: 'x' } }, () => '', { [key]: 1 }), cutOption('options'))
  assert.throws(() => checkArguments('wait_for', { probe: { tool: 't', args: {} }, until: { matches: '\ud800' } }), (e) => e.code === 'invalid_arguments' && e.rule === 'invalid_json' && e.field === 'until.matches' && /^arguments: until\.matches: not JSON: /.test(e.message))
  await assert.rejects(wait({ until: { matches: 'x' } }), (e) => e.field === 'probe' && e.rule === 'missing_field')
  await assert.rejects(wait({ until: { matches: 'x' } }, 'not a function'), (e) => e.field === 'probe')
  await assert.rejects(wait({ until: { matches: 'x' } }, () => '', { signal: {} }), (e) => e.field === 'options.signal')
  await assert.rejects(wait({ until: { matches: 'x' }, big: 1n }, () => ''), (e) => e.rule === 'invalid_json')
  // NaN is not "the default": JSON.stringify would have written null.
  await assert.rejects(wait({ until: { matches: 'x' }, max_wait_ms: NaN }, () => ''), (e) => e.rule === 'invalid_json' && /max_wait_ms is NaN/.test(e.message))
  // Past 4 MiB of JSON an input is refused before it is read.
  const huge = { until: { matches: 'x'.repeat(4 << 20) } }
  await assert.rejects(wait(huge, () => ''), (e) => e.code === 'invalid_spec' && e.field === '' && e.rule === 'too_large')
  assert.throws(() => checkArguments('wait_for', { probe: { tool: 't', args: { pad: 'x'.repeat(4 << 20) } }, until: { matches: 'x' } }), (e) => e.code === 'invalid_arguments' && e.rule === 'too_large')
  await assert.rejects(wait({ until: { matches: 'x' } }, () => '', { policy: { maxWaitCeilingMs: -1 } }), (e) => e.code === 'invalid_arguments')
  assert.throws(() => checkSpec({ until: { matches: 'x' }, interval_ms: 1 }), (e) => e.field === 'interval_ms')
  checkSpec({ until: { matches: 'x' } })
  // A NUL cannot reach the system: refused by the spec's rules, field named.
  assert.throws(() => checkSpec({ probe: { file: { path: '/tmp/a\0b' } }, until: { matches: 'x' } }), (e) => e.field === 'probe.file.path' && e.rule === 'contains_nul')
  assert.equal(SPEC_SCHEMA.type, 'object')
})

test('toolDefinitions: MCP tool objects for every profile', () => {
  const tools = toolDefinitions()
  assert.equal(tools.length, profiles().length)
  for (const tool of tools) {
    for (const key of ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations']) assert.ok(key in tool, key)
    assert.equal(tool.inputSchema.type, 'object')
  }
})

test('callTool runs every profile; output valid against its outputSchema', async () => {
  const ajv = new Ajv({ strict: false })
  for (const { profile, tool } of profiles()) {
    assert.ok(typeof profile === 'string' && profile.includes('/'))
    const validate = ajv.compile(tool.outputSchema)
    if (profile === 'aura/wait_for') {
      const args = { probe: { tool: 'run_command', args: { argv: ['echo', 'Running'] } }, until: { matches: 'Running' }, poll_sec: 1, max_wait_sec: 5 }
      const out = await callTool(profile, args, { grants: { commands: ['echo'] } })
      assert.equal(out.reason, 'matched')
      assert.ok(validate(out), JSON.stringify(validate.errors))
    }
  }
})

test('AURA sends no progress of its own: onProgress hears seconds elapsed of the bound, no message', async () => {
  const progress = []
  const logs = []
  let polls = 0
  const out = await callTool('aura/wait_for', { probe: { tool: 'status', args: {} }, until: { matches: 'up' }, poll_sec: 1, max_wait_sec: 10 }, {
    tools: () => (++polls < 2 ? 'starting' : 'up'),
    onProgress: (p) => progress.push(p),
    onLog: (l) => logs.push(l),
  })
  assert.equal(out.reason, 'matched')
  assert.equal(progress.length, 1)
  assert.deepEqual(Object.keys(progress[0]).sort(), ['message', 'progress', 'total'])
  assert.equal(progress[0].total, 10)
  assert.equal(progress[0].message, null)
  assert.deepEqual(logs, [])
})

test("AURA's UnknownProbeTool: a tool that throws UNKNOWN_TOOL is not exposed by any connected MCP server", async () => {
  const { UNKNOWN_TOOL } = require('..')
  await assert.rejects(
    callTool('aura/wait_for', { probe: { tool: 'kubectl_get', args: {} }, until: { matches: 'x' } }, {
      tools: () => {
        throw new Error(UNKNOWN_TOOL)
      },
    }),
    (e) => e.code === 'runtime' && e.message === "probe tool 'kubectl_get' is not exposed by any connected MCP server",
  )
})

test('callTool lends the server its own JavaScript tools; resolves by tool name', async () => {
  let polls = 0
  const seen = []
  const out = await callTool('wait_for', { probe: { tool: 'deploy_status', args: { id: 7 } }, until: { matches: 'Running' }, poll_sec: 1, max_wait_sec: 10 }, {
    tools: async (name, args) => {
      seen.push([name, args])
      return ++polls < 2 ? 'Pending' : 'Running'
    },
  })
  assert.equal(out.reason, 'matched')
  assert.deepEqual(seen[0], ['deploy_status', { id: 7 }])
  await assert.rejects(callTool('wait_for', {}, { onLog: 'no' }), (e) => e.field === 'options.onLog')
  await assert.rejects(callTool('aura/wait_for', { probe: { tool: '', args: {} }, until: { matches: 'x' } }), (e) => e.code === 'invalid_arguments' && e.field === 'probe.tool' && e.rule === 'empty')
  await assert.rejects(callTool('nope/none', {}), (e) => e.code === 'unknown_profile')
  // A tool name two profiles offer: the refusal names both.
  await assert.rejects(callTool('wait_for_text', { pane_id: '%1', patterns: ['x'] }), {
    code: 'unknown_profile',
    message: 'tool name `wait_for_text` is offered by libtmux-mcp/wait_for_text, libtmux-cxx/wait_for_text: name the profile',
  })
})

test('require from the repository root and import as ESM give the same API', async () => {
  const fromRoot = require(path.join(repo, 'bindings/node'))
  assert.equal(typeof fromRoot.wait, 'function')
  const esm = await import('libwaitfor')
  assert.equal(esm.wait, fromRoot.wait)
  // Every CommonJS export is an ESM one, the same object.
  for (const name of Object.keys(fromRoot)) assert.equal(esm[name], fromRoot[name], name)
})

test('arguments as JSON text keep 5.0 apart from 5; an object cannot', () => {
  const text = '{"probe": {"tool": "t", "args": {}}, "until": {"matches": "x"}, "max_wait_sec": 5.0}'
  // AURA refuses a fractional-looking number of seconds, as its decoder does.
  assert.throws(() => checkArguments('wait_for', text), (e) => e.field === 'max_wait_sec' && e.rule === 'wrong_type')
  // JSON.parse turns 5.0 into 5: the same call as an object is accepted.
  assert.equal(checkArguments('wait_for', JSON.parse(text)), 'aura/wait_for')
})

test('a lent tool that rejects, returns an unreadable value or never answers is a runtime error; one that never answers is abandoned at the time limit', async () => {
  const call = (tools) => callTool('aura/wait_for', { probe: { tool: 'status', args: {} }, until: { matches: 'up' }, poll_sec: 1, max_wait_sec: 2 }, { tools })
  await assert.rejects(call(async () => Promise.reject(new Error('boom'))), (e) => e.code === 'runtime' && /boom/.test(e.message))
  await assert.rejects(call(() => ({ text: 'x', exitCode: 1.5 })), (e) => e.code === 'runtime' && /exitCode/.test(e.message))
  const began = Date.now()
  await assert.rejects(call(() => new Promise(() => {})), (e) => e.code === 'runtime' && /hanging/.test(e.message))
  assert.ok(Date.now() - began < 2000 + 2000, 'abandoned at the time limit')
  assert.equal((await call(() => ({ text: 'service up' }))).reason, 'matched')
})
