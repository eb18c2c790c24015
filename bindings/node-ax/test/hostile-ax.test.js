'use strict'
// `@libwaitfor/ax` waitFor and the envelope helpers given hostile clocks,
// sleeps, reads and values: each ends settled (a wait or a typed error),
// never a crash, a hang past the limit, or an unhandled rejection.
const test = require('node:test')
const assert = require('node:assert/strict')
const ax = require('../lib/ax.js')
const { WaitforError } = require('libwaitfor')
const { spawnSync } = require('node:child_process')

const unhandled = []
process.on('unhandledRejection', (reason) => unhandled.push(reason))
test.afterEach(async () => {
  await new Promise((r) => setImmediate(r))
  assert.deepEqual(unhandled.splice(0), [], 'no unhandled rejection')
})

const base = (over) => ({
  for: 'x',
  target: null,
  timeoutMs: 1000,
  read: async () => ({ events: [], cursor: 'c1' }),
  resume: (c) => ({ command: `again ${c}` }),
  ...over,
})
const settled = (p) => p.then((w) => ({ w }), (e) => ({ e, rejected: true }))
const typedOrWait = (got) => (got.rejected ? got.e instanceof WaitforError : ax.isWait(got.w))

test('waitFor with a hostile now: throws, NaN, Infinity, negative, backwards, beyond year 9999, not a number', async () => {
  let t = 100000
  const virtual = (start) => {
    let at = start
    return { now: () => at, sleep: async (ms) => void (at += ms) }
  }
  const clocks = {
    throws: {
      now: () => {
        throw new Error('clock')
      },
    },
    nan: { now: () => NaN },
    infinity: { now: () => Infinity },
    negative: { now: () => -5 },
    backwards: { now: () => (t -= 100), sleep: async () => {} },
    maxSafe: virtual(Number.MAX_SAFE_INTEGER - 1e6),
    beyond9999: virtual(253402300799000 + 5000),
    string: { now: () => '1000' },
  }
  for (const [name, clock] of Object.entries(clocks)) {
    const got = await settled(ax.waitFor(base(clock)))
    assert.ok(typedOrWait(got), `${name}: ${got.e}`)
  }
})

test('waitFor refuses now, sleep, match and next that are not functions, naming the option', async () => {
  for (const name of ['now', 'sleep', 'match', 'next']) {
    await assert.rejects(ax.waitFor(base({ [name]: 5 })), (e) => e instanceof WaitforError && e.code === 'invalid_arguments' && e.field === name)
  }
})

test('waitFor with a hostile sleep: throws, rejects, not a function, never resolves under a signal', async () => {
  let t = 0
  const now = () => t
  for (const sleep of [
    () => {
      throw new Error('sleep')
    },
    () => Promise.reject(Symbol('no')),
    5,
  ]) {
    const got = await settled(ax.waitFor(base({ now, sleep, read: async () => ({ events: [], cursor: 'c1' }) })))
    assert.ok(got.rejected || ax.isWait(got.w))
  }
  const c = new AbortController()
  const p = settled(ax.waitFor(base({ now, sleep: () => new Promise(() => {}), signal: c.signal })))
  setTimeout(() => c.abort(), 50)
  const got = await p
  assert.equal(got.w.state, 'timed-out')
})

test('hostile reads, resumes and nexts: throws, non-Errors, cycles, deep nesting', async () => {
  const cyclic = { events: [], cursor: 'c' }
  cyclic.self = cyclic
  let deep = {}
  for (let i = 0; i < 100000; i++) deep = { d: deep }
  const reads = [
    () => {
      throw undefined
    },
    () => Promise.reject(Symbol('r')),
    async () => cyclic,
    async () => ({ events: [{ cursor: 'c', type: 't', at: 'x', by: 'y', target: null, summary: 's', data: deep }], cursor: 'c' }),
    async () => ({ events: 'nope', cursor: 5 }),
    async () => ({
      get events() {
        throw new Error('getter')
      },
    }),
  ]
  for (const [i, read] of reads.entries()) {
    const got = await settled(ax.waitFor(base({ read, timeoutMs: 200 })))
    assert.ok(got.rejected || ax.isWait(got.w), `read ${i}`)
  }
  const event = { cursor: 'c1', type: 't', at: '2026-01-01T00:00:00.000Z', by: 'ci', target: null, summary: 's' }
  const hit = async () => ({ events: [event], cursor: 'c1' })
  const cyc = { command: 'x' }
  cyc.self = cyc
  for (const resume of [() => cyc, () => deep, () => Symbol('x'), () => { throw null }]) {
    const got = await settled(ax.waitFor(base({ read: hit, resume })))
    assert.ok(got.rejected || ax.isWait(got.w))
  }
})

test('envelope helpers take cyclic, deep and non-JSON values without crashing', () => {
  const cyc = { ax: 'wait/1' }
  cyc.self = cyc
  let deep = {}
  for (let i = 0; i < 100000; i++) deep = { d: deep }
  for (const v of [cyc, deep, Symbol('s'), 10n, () => 1, new Proxy({}, { ownKeys() { throw new Error('keys') } })]) {
    for (const f of [ax.isWait, ax.validateWait, ax.wait, ax.waitText, (w) => ax.waitExit(w, {}), ax.eventMatcher, ax.formatDuration]) {
      try {
        f(v)
      } catch (e) {
        assert.ok(e instanceof Error, `${f.name}: ${String(e)}`)
      }
    }
  }
})

test('isWait and validateWait answer for values JSON cannot hold instead of throwing', () => {
  const good = ax.wait({ for: 'deploy', state: 'gone', since: '2026-01-01T00:00:00.000Z', reason: 'deleted' })
  const cyclic = { ...good }
  cyclic.self = cyclic
  const unreadable = new Proxy(good, {
    ownKeys() {
      throw new Error('keys')
    },
  })
  for (const v of [NaN, Symbol('s'), () => 1, cyclic, unreadable, { ...good, until: NaN }, { ...good, target: () => 1 }]) {
    assert.equal(ax.isWait(v), false)
    const checked = ax.validateWait(v)
    assert.equal(checked.ok, false)
    assert.ok(checked.errors.length > 0 && checked.errors.every((e) => typeof e === 'string'))
  }
})

test('an eventMatcher does not match an event JSON cannot hold, instead of throwing (waitFor would end on it)', async () => {
  const match = ax.eventMatcher({ type: 'build.done' })
  const event = { cursor: 'c1', type: 'build.done', at: '2026-01-01T00:00:00.000Z', by: 'ci', target: null, summary: 's' }
  assert.equal(match(event), true)
  for (const v of [undefined, Symbol('e'), { ...event, data: { ratio: NaN } }, { ...event, target: () => 1 }]) assert.equal(match(v), false)
  const w = await ax.waitFor(base({ read: async () => ({ events: [{ ...event, data: { ratio: NaN } }, event], cursor: 'c1' }), match }))
  assert.equal(w.state, 'satisfied')
})

test('waitFor on a clock that stands still, with a sleep that resolves at once, leaves the event loop running', () => {
  // In a child: before, the loop never left microtasks and the process hung.
  const script = `
    const ax = require(${JSON.stringify(require.resolve('../lib/ax.js'))})
    const signal = AbortSignal.timeout(200)
    ax.waitFor({ for: 'x', target: null, timeoutMs: 1000, now: () => 0, sleep: () => undefined, signal,
      read: async (c) => ({ events: [], cursor: c }), resume: () => ({ command: 'again' }) })
      .then((w) => console.log(w.reason))
  `
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30000 })
  assert.equal(r.signal, null, 'the child hung')
  assert.equal(r.stdout.trim(), 'cancelled before a matching event', r.stderr)
})
