'use strict'
// Hostile inputs through every entry point: what a careless host or an AI
// agent's arguments can hand the package. Nothing may crash the process,
// leave a call unsettled past its deadline, or escape as an unhandled
// rejection.
const test = require('node:test')
const assert = require('node:assert/strict')
const { callTool, wait, start, setMaxToolCalls, WaitforError } = require('../lib/waitfor.js')

const unhandled = []
process.on('unhandledRejection', (reason) => unhandled.push(reason))
test.afterEach(() => {
  assert.deepEqual(unhandled.splice(0), [], 'no unhandled rejection')
})

const auraArgs = { probe: { tool: 'status', args: {} }, until: { matches: 'up' }, poll_sec: 1, max_wait_sec: 2 }
const aura = (tools, options = {}) => callTool('aura/wait_for', auraArgs, { tools, ...options })
const runtime = (pattern) => (e) => e instanceof WaitforError && e.code === 'runtime' && (!pattern || pattern.test(e.message))
const throwingProxy = () =>
  new Proxy(
    {},
    new Proxy(
      {},
      {
        get() {
          return () => {
            throw new Error('trap')
          }
        },
      },
    ),
  )

test('lent tools that throw or reject with values that are not Errors end the call as runtime errors', async () => {
  await assert.rejects(
    aura(() => {
      throw new Error('sync boom')
    }),
    runtime(/sync boom/),
  )
  for (const reason of [undefined, null, Symbol('s'), 42n, throwingProxy(), Object.create(null)]) {
    await assert.rejects(
      aura(() => Promise.reject(reason)),
      runtime(),
    )
    await assert.rejects(
      aura(() => {
        throw reason
      }),
      runtime(),
    )
  }
})

test('lent tools that return hostile values end the call as runtime errors or read them', async () => {
  const getter = {
    get text() {
      throw new Error('getter')
    },
  }
  const settlesTwice = { then: (ok, no) => (ok('service up'), no(new Error('late')), ok('again')) }
  const thenGetter = {
    get then() {
      throw new Error('then getter')
    },
  }
  for (const value of [getter, throwingProxy(), thenGetter, Symbol('x'), 10n, () => 1]) {
    const got = await aura(() => value).then(
      (output) => ({ output }),
      (error) => ({ error }),
    )
    assert.ok(got.output !== undefined || got.error instanceof WaitforError, String(value && typeof value))
  }
  assert.equal((await aura(() => settlesTwice)).reason, 'matched')
})

test('a lent tool returning a text beyond the output cap ends the call as a runtime error naming the cap', async () => {
  const huge = 'x'.repeat(64 * 1024 * 1024) + ' up'
  await assert.rejects(aura(() => huge), runtime(/cap/))
})

test('a lent tool that calls callTool itself, nested, settles every call', async () => {
  let depth = 0
  const tools = async () => {
    if (depth++ < 20) await aura(tools).catch(() => {})
    return 'up'
  }
  const began = Date.now()
  const got = await aura(tools).then(
    (o) => o,
    (e) => e,
  )
  assert.ok(got.reason === 'matched' || got instanceof WaitforError)
  assert.ok(Date.now() - began < 2000 + 4000)
})

test('thousands of tool calls started at once all match before their deadline', async (t) => {
  // Over the default cap of calls in flight (1,024): the host raised it.
  const before = setMaxToolCalls(3000)
  t.after(() => setMaxToolCalls(before))
  const args = { ...auraArgs, max_wait_sec: 5 }
  const calls = []
  for (let i = 0; i < 3000; i++) calls.push(callTool('aura/wait_for', args, { tools: () => 'up' }).then((o) => o.reason, (e) => e.message))
  const reasons = new Set(await Promise.all(calls))
  assert.deepEqual([...reasons], ['matched'])
})

test('slow lent tools: many calls whose tool answers late all settle by their deadline', async () => {
  const began = Date.now()
  const calls = []
  for (let i = 0; i < 200; i++) calls.push(aura(() => new Promise((r) => setTimeout(() => r('up'), 500))).then((o) => o.reason, (e) => e.code))
  const got = await Promise.all(calls)
  assert.ok(Date.now() - began < 2000 + 3000, `took ${Date.now() - began} ms`)
  assert.ok(got.every((r) => r === 'matched' || r === 'runtime'), String(got))
})

test('a call whose signal is already aborted, or aborts while its tool call is pending, ends cancelled well before its time limit', async () => {
  const args = { ...auraArgs, max_wait_sec: 60 }
  const began = Date.now()
  const cancelled = runtime(/cancelled/)
  await assert.rejects(callTool('aura/wait_for', args, { tools: () => 'up', signal: AbortSignal.abort() }), cancelled)
  const controller = new AbortController()
  const late = callTool('aura/wait_for', args, {
    signal: controller.signal,
    tools: () => {
      controller.abort()
      return new Promise(() => {})
    },
  })
  await assert.rejects(late, cancelled)
  assert.ok(Date.now() - began < 30000)
})

test('a limit out of range names its option and rule, in a policy and in a tool call', async () => {
  const spec = { until: { matches: 'never' }, interval_ms: 20, max_wait_ms: 60000 }
  for (const [key, value] of [['maxWaitCeilingMs', -1], ['maxWaitCeilingMs', 1e300], ['maxWaitCeilingMs', 0.5], ['outputCapBytes', 0], ['outputCapBytes', 2 ** 64]]) {
    await assert.rejects(
      wait(spec, () => '', { policy: { [key]: value } }),
      (e) => e instanceof WaitforError && e.field === `options.policy.${key}` && e.rule === 'out_of_range',
      `${key} ${value}`,
    )
  }
  const args = { path: '/x', timeout: '1s' }
  await assert.rejects(callTool('ouro/wait', args, { maxWaitCeilingMs: -5 }), (e) => e.field === 'options.maxWaitCeilingMs' && e.rule === 'out_of_range')
  await assert.rejects(callTool('ouro/wait', args, { maxWaitCeilingMs: '5' }), (e) => e.field === 'options.maxWaitCeilingMs' && e.rule === 'wrong_type')
})

test('a policy that is not an object of known limits is refused, never silently ignored (no ceiling would apply)', async () => {
  const spec = { until: { matches: 'never' }, interval_ms: 20, max_wait_ms: 60000 }
  for (const policy of [50, 'x', true, [], () => 1, { maxWaitCeiling: 50 }, { maxWaitCeilingMs: 50, outputCap: 10 }]) {
    assert.throws(
      () => start(spec, () => '', { policy }),
      (e) => e instanceof WaitforError && e.code === 'invalid_arguments' && /^options\.policy/.test(e.field),
      JSON.stringify(policy) ?? String(policy),
    )
    await assert.rejects(wait(spec, () => '', { policy }), (e) => e instanceof WaitforError && e.code === 'invalid_arguments')
  }
  const clamped = await wait({ ...spec, max_wait_ms: 60000 }, () => '', { policy: { maxWaitCeilingMs: 50 } })
  assert.equal(clamped.effective_max_wait_ms, 50)
})

test('JS probes returning or throwing hostile values end each wait with an outcome by its deadline', async () => {
  const spec = { until: { matches: 'up' }, interval_ms: 20, max_wait_ms: 300 }
  const cyclic = {}
  cyclic.self = cyclic
  const probes = [
    () => {
      throw undefined
    },
    () => {
      throw throwingProxy()
    },
    () => Promise.reject(Symbol('s')),
    () => throwingProxy(),
    () => ({
      get text() {
        throw new Error('getter')
      },
    }),
    () => ({
      get then() {
        throw new Error('then')
      },
    }),
    () => new Promise(() => {}),
    () => cyclic,
    () => ({ exitCode: 2 ** 40 }),
    () => ({ text: Symbol('t') }),
    () => 10n,
  ]
  const began = Date.now()
  const results = await Promise.all(probes.map((probe) => wait(spec, probe)))
  for (const r of results) assert.ok(['probe_error', 'timeout', 'error'].includes(r.outcome), r.outcome)
  assert.ok(Date.now() - began < 300 + 5000)
})

test('waits started and cancelled in a tight loop all end cancelled', async () => {
  const results = []
  for (let i = 0; i < 20000; i++) {
    const handle = start({ until: { matches: 'up' }, max_wait_ms: 60000 }, () => 'no')
    handle.cancel()
    handle.cancel()
    handle.wake()
    results.push(handle.result)
  }
  const outcomes = new Set((await Promise.all(results)).map((r) => r.outcome))
  assert.deepEqual([...outcomes], ['cancelled'])
})

test('an option an entry point does not take is refused, so a limit given to the wrong entry point is not silently dropped', async () => {
  const spec = { until: { matches: 'never' }, interval_ms: 20, max_wait_ms: 60000 }
  const unknownOption = (field) => (e) => e instanceof WaitforError && e.code === 'invalid_arguments' && e.rule === 'unknown_field' && e.field === field
  await assert.rejects(aura(() => 'up', { policy: { maxWaitCeilingMs: 50 } }), unknownOption('options.policy'))
  await assert.rejects(callTool('aura/wait_for', auraArgs, { tool: () => 'up' }), unknownOption('options.tool'))
  await assert.rejects(wait(spec, () => '', { maxWaitCeilingMs: 50 }), unknownOption('options.maxWaitCeilingMs'))
  assert.throws(() => start(spec, () => '', { onLog: () => {} }), unknownOption('options.onLog'))
})
