'use strict'
// Many waits with JavaScript probes at once: each answer reaches its own
// wait, a bad probe only fails its own wait, a hung one only holds its own,
// and a late answer or an ended wait's handle never reaches another wait.
const test = require('node:test')
const assert = require('node:assert/strict')
const { monitorEventLoopDelay } = require('node:perf_hooks')
const { start } = require('..')
const { eventually } = require('./helpers.js')

test('2,000 waits, sync and async probes: every answer reaches its own wait', async () => {
  const N = 2000
  const calls = new Array(N).fill(0)
  const handles = Array.from({ length: N }, (_, i) => {
    const answer = ({ sample }) => {
      calls[i]++
      return sample < 3 ? `wait ${i} pending` : `wait ${i} n=${sample}`
    }
    const probe = i % 2 === 0 ? answer : async (ctx) => answer(ctx)
    return start({ until: { matches: 'n=\\d' }, regex: true, interval_ms: 10, max_wait_ms: 120000 }, probe)
  })
  const results = await Promise.all(handles.map((h) => h.result))
  results.forEach((r, i) => {
    assert.equal(r.outcome, 'matched', `wait ${i}: ${JSON.stringify(r)}`)
    assert.deepEqual(r.matched_lines, [`wait ${i} n=3`], `wait ${i} got another wait's answer`)
    assert.equal(r.samples, 3)
    assert.equal(calls[i], 3, `wait ${i}'s probe ran ${calls[i]} times`)
  })
})

test('results of 2,000 waits ending together each reach their own wait', async () => {
  const N = 2000
  const results = await Promise.all(
    Array.from({ length: N }, (_, i) => start({ until: { matches: 'done' }, interval_ms: 10, max_wait_ms: 60000 }, () => `wait ${i} done`).result),
  )
  results.forEach((r, i) => assert.deepEqual(r.matched_lines, [`wait ${i} done`]))
})

test('a probe that throws, rejects or answers garbage fails only its own wait, among 200 good ones', async () => {
  const spec = { until: { matches: 'ok' }, interval_ms: 10, max_wait_ms: 60000 }
  const cyclic = {}
  const bad = {
    throws: () => {
      throw new Error('sync boom')
    },
    rejects: () => Promise.reject(new Error('async boom')),
    bigint: () => ({ big: 10n }),
    fractionalExit: () => ({ text: 'ok', exitCode: 1.5 }),
    functionJson: () => ({ json: () => 1 }),
    cyclic: () => (cyclic.self = cyclic),
    throwingToJSON: () => ({
      toJSON() {
        throw new Error('toJSON')
      },
    }),
    proxy: () => ({
      json: new Proxy([], {
        get() {
          throw new Error('trap')
        },
      }),
    }),
    resolvesGarbage: async () => ({ big: 1n }),
    badThen: () => ({
      get then() {
        throw new Error('then getter')
      },
    }),
  }
  // The good waits answer "not yet" at first, so their calls and the bad ones' interleave.
  const good = Array.from({ length: 200 }, (_, i) =>
    start(spec, ({ sample }) => (sample >= 3 ? { text: `ok ${i}`, json: { i }, exitCode: 0 } : 'not yet')),
  )
  const badHandles = Object.entries(bad).map(([name, fn]) => [name, start(spec, ({ sample }) => (sample >= 2 ? fn() : 'not yet'))])
  for (const [name, handle] of badHandles) {
    const r = await handle.result
    assert.equal(r.outcome, 'probe_error', `${name}: ${JSON.stringify(r)}`)
    assert.equal(r.samples, 1, `${name}: a failed call is not a sample`)
  }
  const messages = Object.fromEntries(await Promise.all(badHandles.map(async ([name, h]) => [name, (await h.result).probe.last_error])))
  assert.match(messages.throws, /sync boom/)
  assert.match(messages.rejects, /async boom/)
  assert.match(messages.bigint, /BigInt/)
  assert.match(messages.fractionalExit, /exitCode/)
  assert.match(messages.functionJson, /json: not a JSON value/)
  assert.match(messages.badThen, /then getter/)
  const results = await Promise.all(good.map((h) => h.result))
  results.forEach((r, i) => {
    assert.equal(r.outcome, 'matched')
    assert.deepEqual(r.matched_lines, [`ok ${i}`])
    assert.equal(r.exit_code, 0)
  })
})

test('a probe that never settles is abandoned at its deadline while the other waits go on', async () => {
  let flag = false
  let othersCalls = 0
  const others = Array.from({ length: 300 }, () =>
    start({ until: { matches: 'go' }, interval_ms: 10, max_wait_ms: 120000 }, () => {
      othersCalls++
      return flag ? 'go' : 'wait'
    }),
  )
  let hungAt = null
  let hungCalls = 0
  const began = Date.now()
  const hung = start({ until: { matches: 'never' }, interval_ms: 10, max_wait_ms: 600 }, () => {
    hungCalls++
    if (hungCalls === 1) return 'first'
    hungAt ??= othersCalls
    return new Promise(() => {})
  })
  const r = await hung.result
  assert.equal(r.outcome, 'timeout')
  assert.equal(r.probe.abandoned, 1)
  assert.equal(hungCalls, 2, 'no call began after the hung one')
  assert.ok(Date.now() - began < 10000, `resolved ${Date.now() - began} ms after its start`)
  assert.ok(othersCalls > hungAt, 'the other waits kept sampling while it hung')
  flag = true
  const results = await Promise.all(others.map((h) => h.result))
  assert.ok(results.every((x) => x.outcome === 'matched'))
})

test('timers keep firing on time while 2,000 waits poll every 10 ms', async () => {
  const N = 2000
  let calls = 0
  const handles = Array.from({ length: N }, () =>
    start({ until: { matches: 'never' }, interval_ms: 10, max_wait_ms: 120000 }, () => {
      calls++
      return 'still waiting'
    }),
  )
  try {
    await eventually(() => calls >= 2 * N, { timeoutMs: 30000 })
    const lag = monitorEventLoopDelay({ resolution: 10 })
    lag.enable()
    let ticks = 0
    const timer = setInterval(() => ticks++, 10)
    const before = calls
    await eventually(() => ticks >= 50, { timeoutMs: 30000 })
    clearInterval(timer)
    lag.disable()
    // Generous: the machine is shared; a blocked loop shows seconds.
    assert.ok(lag.percentile(99) / 1e6 < 250, `event loop delay p99 ${lag.percentile(99) / 1e6} ms`)
    assert.ok(calls - before >= N, `only ${calls - before} probe calls while the timer ticked`)
  } finally {
    for (const h of handles) h.cancel()
  }
  const results = await Promise.all(handles.map((h) => h.result))
  assert.ok(results.every((r) => r.outcome === 'cancelled'))
})

test('a wait cancelled with calls due never runs its probe again, others do', async () => {
  const counts = [0, 0]
  const handles = counts.map((_, i) =>
    start({ until: { matches: 'never' }, interval_ms: 10, max_wait_ms: 60000 }, () => {
      counts[i]++
      return ''
    }),
  )
  await eventually(() => counts[0] > 2 && counts[1] > 2)
  handles[0].cancel()
  const stopped = counts[0]
  const seen = counts[1]
  await eventually(() => counts[1] > seen + 5)
  assert.equal(counts[0], stopped)
  handles[1].cancel()
  assert.equal((await handles[0].result).outcome, 'cancelled')
  assert.equal((await handles[1].result).outcome, 'cancelled')
})

test('answer texts reach the engine as UTF-8: non-ASCII, lone surrogates, invalid bytes, JSON text', async () => {
  const spec = { until: { matches: 'end' }, interval_ms: 10, max_wait_ms: 60000 }
  const cases = {
    accents: ['héllo wörld ✓ 🎉 end', 'héllo wörld ✓ 🎉 end'],
    loneSurrogate: ['a \uD800 b \uDFFF end', 'a \uFFFD b \uFFFD end'],
    longLoneSurrogate: [`${'x'.repeat(100)} \uD83D end`, `${'x'.repeat(100)} \uFFFD end`],
    invalidBytes: [Buffer.from([0x61, 0xff, 0xfe, 0x20, 0x65, 0x6e, 0x64]), 'a\uFFFD\uFFFD end'],
  }
  const results = await Promise.all(Object.values(cases).map(([value]) => start(spec, () => value).result))
  Object.keys(cases).forEach((name, i) => {
    assert.equal(results[i].outcome, 'matched', `${name}: ${JSON.stringify(results[i])}`)
    assert.deepEqual(results[i].matched_lines, [cases[name][1]], name)
  })
  const json = await start({ until: { json: { pointer: '/name', equals: 'ünï ✓' } }, interval_ms: 10, max_wait_ms: 60000 }, () => ({
    text: 'ça end',
    json: { name: 'ünï ✓' },
  })).result
  assert.equal(json.outcome, 'matched', JSON.stringify(json))
})

test('long answers from many waits at once: each wait gets its own', async () => {
  const N = 40
  // 40 answers of ~300 KB (UTF-8) each: far beyond the buffer's starting 64 KiB.
  const body = 'é'.repeat(100_000)
  const handles = Array.from({ length: N }, (_, i) =>
    start(
      { until: { matches: `^end ${i}$` }, regex: true, interval_ms: 10, max_wait_ms: 60000 },
      () => (i % 2 === 0 ? `${body}\nend ${i}` : { text: `${body}\nend ${i}`, json: { i, body } }),
      { policy: { outputCapBytes: 1 << 20 } },
    ),
  )
  const results = await Promise.all(handles.map((h) => h.result))
  results.forEach((r, i) => {
    assert.equal(r.outcome, 'matched', `wait ${i}: ${r.outcome} ${r.probe.last_error}`)
    assert.deepEqual(r.matched_lines, [`end ${i}`])
    assert.equal(r.tail.lines.at(-1), `end ${i}`)
  })
  assert.equal((await start({ until: { matches: 'ok' }, interval_ms: 10, max_wait_ms: 60000 }, () => 'ok').result).outcome, 'matched')
})

test("an answer longer than its wait's output cap reaches the engine cut one unit past it: the same over-the-cap error", async () => {
  const huge = 'x'.repeat(1 << 20)
  const run = (probe, cap = { output_cap_bytes: 8 }, options) =>
    start({ until: { matches: 'ready' }, interval_ms: 10, max_wait_ms: 5000, ...cap }, probe, options).result
  const cases = [
    // Within the cap by its length: encoded whole and measured.
    ['10 bytes in 5 units', () => 'é'.repeat(5), 10],
    // Longer: only its first 9 units are encoded, whatever its size.
    ['a string', () => huge, 9],
    ['a Promise', async () => huge, 9],
    ['an observation', () => ({ text: huge, exitCode: 1 }), 9],
    ['a Buffer', () => Buffer.from(huge), 9],
    ['a cut surrogate pair', () => '😀'.repeat(1000), 4 * 4 + 3],
    // Structured values: serialized only until they are sure to be over it.
    ['an object', () => ({ a: huge }), 9],
    ['a Promise of an object', async () => [huge], 9],
    ['a JSON value', () => ({ json: Array.from({ length: 1000 }, (_, i) => i) }), 9],
    ['a JSON value beside a text', () => ({ text: 'ready', json: { huge } }), 9],
  ]
  for (const [what, probe, read] of cases) {
    const r = await run(probe)
    assert.equal(r.outcome, 'error', what)
    assert.equal(r.error, `output of sample 1 exceeds the cap of 8 bytes (${read} bytes read)`, what)
  }
  // The policy's cap, when the spec sets none; an answer as long as the cap is whole.
  assert.match((await run(() => huge, {}, { policy: { outputCapBytes: 8 } })).error, /cap of 8 bytes \(9 bytes read\)/)
  assert.equal((await run(() => 'ready!!!')).outcome, 'matched')
  assert.equal((await run(() => ({ json: 'ready' }))).outcome, 'matched')
  // An error is no observation: its message is cut to the cap, and an ellipsis.
  const throws = () => {
    throw new Error(huge)
  }
  for (const probe of [throws, () => Promise.reject(huge), async () => ({ exitCode: huge })]) {
    const { error } = await run(probe)
    assert.ok(/^probe failed: \S{0,8}…$/.test(error), error.slice(0, 80))
  }
})

test('a late answer of an ended wait never reaches a wait started after it', async () => {
  let answerLate
  const first = start({ until: { matches: 'yes' }, interval_ms: 10, max_wait_ms: 300 }, () => new Promise((resolve) => (answerLate = resolve)))
  assert.equal((await first.result).probe.abandoned, 1)
  let calls = 0
  let done = false
  const second = start({ until: { matches: 'yes|finally' }, regex: true, interval_ms: 10, max_wait_ms: 60000 }, () => {
    calls++
    return done ? 'finally' : 'no'
  })
  await eventually(() => calls >= 2)
  answerLate('yes')
  const seen = calls
  await eventually(() => calls >= seen + 5)
  done = true
  const r = await second.result
  assert.deepEqual(r.matched_lines, ['finally'])
})

test("an ended wait's handle never cancels or wakes a wait started after it", async () => {
  const first = start({ until: { matches: 'x' }, interval_ms: 10, max_wait_ms: 60000 }, () => 'x')
  await first.result
  let calls = 0
  let ready = false
  const second = start({ until: { matches: 'ready' }, interval_ms: 60000, max_wait_ms: 120000 }, () => {
    calls++
    return ready ? 'ready' : 'no'
  })
  await eventually(() => calls === 1)
  first.cancel()
  first.wake()
  ready = true
  second.wake()
  const r = await second.result
  // A cancel that reached the second wait would have ended it first.
  assert.equal(r.outcome, 'matched')
  assert.equal(r.samples, 2)
})

test('a probe declared without parameters is called without a context; with parameters it gets one', async () => {
  const spec = { until: { matches: 'go' }, interval_ms: 10, max_wait_ms: 60000 }
  const seen = []
  await start(spec, function () {
    seen.push(arguments.length)
    return 'go'
  }).result
  await start(spec, (ctx) => {
    seen.push(ctx)
    return ctx.sample === 3 ? 'go' : 'not yet'
  }).result
  assert.equal(seen[0], 0)
  // Each field is its own: samples count up, sample k comes no earlier than k - 1 intervals
  // after the start (samples keep to their plan and are never early), and each call's
  // budget is within the wait's limit.
  const contexts = seen.slice(1)
  assert.deepEqual(contexts.map((ctx) => ctx.sample), [1, 2, 3])
  const elapsed = contexts.map((ctx) => ctx.elapsedMs)
  assert.ok(elapsed[0] >= 0 && elapsed[1] >= spec.interval_ms && elapsed[2] >= 2 * spec.interval_ms, JSON.stringify(contexts))
  for (const ctx of contexts) assert.ok(ctx.budgetMs > 0 && ctx.budgetMs <= 60000, JSON.stringify(ctx))
  // Whole milliseconds: V8 keeps them without allocating.
  assert.ok(contexts.every((ctx) => Number.isInteger(ctx.elapsedMs) && Number.isInteger(ctx.budgetMs)), JSON.stringify(contexts))
})
