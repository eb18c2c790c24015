'use strict'
// The Ouro-named exports of `libwaitfor/ax`, against the seed's descriptions
// (shared/seeds/ouro-ax-wait.md).
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const ax = require('libwaitfor/ax')
const { tempDir } = require('./helpers.js')

const since = '2026-01-01T00:00:00.000Z'
const event = (n, type = 'build.done') => ({ cursor: `c${n}`, type, at: since, by: 'ci', target: null, summary: `event ${n}` })

/** A virtual clock: `now` and `sleep` as the seed injects them. */
function clock() {
  const c = { t: 0, slept: [] }
  c.now = () => c.t
  c.sleep = async (ms) => {
    c.slept.push(ms)
    c.t += ms
  }
  return c
}

test('constants: WAIT_VERSION, WAIT_STATES, DEFAULT_WAIT_EXITS, WAIT_FLAGS', () => {
  assert.equal(ax.WAIT_VERSION, 'wait/1')
  assert.deepEqual(ax.WAIT_STATES, ['satisfied', 'waiting', 'timed-out', 'gone'])
  assert.deepEqual(ax.DEFAULT_WAIT_EXITS, { satisfied: 'ok', waiting: 'ok', 'timed-out': 'error', gone: 'error' })
  assert.equal(ax.WAIT_FLAGS.timeout.type, 'string')
  assert.equal(ax.WAIT_FLAGS.timeout.placeholder, '<duration>')
  assert.equal(ax.WAIT_FLAGS.cursor.placeholder, '<cursor>')
  assert.ok(Object.isFrozen(ax.WAIT_FLAGS.timeout) && Object.isFrozen(ax.WAIT_STATES))
})

test('parseDuration and formatDuration', () => {
  assert.equal(ax.parseDuration('90s'), 90000)
  assert.equal(ax.parseDuration('2m'), 120000)
  assert.equal(ax.parseDuration('1h'), 3600000)
  assert.equal(ax.parseDuration('500ms'), 500)
  assert.equal(ax.parseDuration('30'), 30000)
  for (const bad of ['', 'soon', '1.5s', '-1s', '1d']) assert.equal(ax.parseDuration(bad), null, bad)
  assert.equal(ax.parseDuration(5), null)
  assert.equal(ax.formatDuration(120000), '2m')
  assert.equal(ax.formatDuration(90000), '90s')
  assert.equal(ax.formatDuration(500), '500ms')
  for (const ms of [0, 1, 999, 1000, 61000, 3600000]) assert.equal(ax.parseDuration(ax.formatDuration(ms)), ms)
  assert.throws(() => ax.formatDuration(-1), (e) => e.code === 'invalid_arguments')
  assert.throws(() => ax.formatDuration(1.5), (e) => e.code === 'invalid_arguments')
})

test('wait builds the envelope; isWait checks the shape; validateWait the rules', () => {
  const gone = ax.wait({ for: 'deploy', state: 'gone', since, reason: 'deleted' })
  assert.equal(gone.ax, 'wait/1')
  assert.deepEqual(Object.keys(gone), ['ax', 'for', 'target', 'state', 'since', 'until', 'cursor', 'events', 'fresh', 'resume', 'reason', 'callback', 'next'])
  assert.ok(ax.isWait(gone))
  assert.deepEqual(ax.validateWait(gone), { ok: true, errors: [] })
  assert.throws(() => ax.wait({ for: 'x', state: 'timed-out', since }), (e) => e.code === 'invalid_wait' && e.errors[0].startsWith('resume'))
  assert.throws(() => ax.wait({ for: 'x', state: 'satisfied', since }), (e) => e.errors[0].startsWith('events'))
  const open = { ...gone, state: 'waiting' }
  assert.ok(ax.isWait(open), 'shape only')
  assert.equal(ax.validateWait(open).ok, false)
  assert.equal(ax.isWait({ ax: 'wait/2' }), false)
  assert.equal(ax.isWait(undefined), false)
  assert.deepEqual(ax.validateWait(null).errors, ['wait: must be an object'])
})

test('waitText and waitExit', () => {
  const timedOut = ax.wait({ for: 'build 7', state: 'timed-out', since, until: '2026-01-01T00:01:30Z', resume: { command: 'ax wait --cursor c1' } })
  assert.equal(ax.waitText(timedOut), 'nothing happened for build 7 before 2026-01-01T00:01:30Z\nresume: ax wait --cursor c1')
  const done = ax.wait({ for: 'build 7', state: 'satisfied', since, events: [event(1)] })
  assert.equal(ax.waitText(done), `${since} build.done by ci: event 1`)
  assert.equal(ax.waitExit(timedOut, { ok: 0, error: 1 }), 1)
  assert.equal(ax.waitExit(done, { ok: 0, error: 1 }), 0)
  assert.equal(ax.waitExit(done, { ok: 0, error: 1, yes: 7 }, { ...ax.DEFAULT_WAIT_EXITS, satisfied: 'yes' }), 7)
  assert.throws(() => ax.waitText({}), (e) => e.code === 'invalid_wait')
})

test('waitFor: satisfied by a matching event, cursor and next from it', async () => {
  const c = clock()
  const reads = [
    { events: [event(1, 'build.started')], cursor: 'c1' },
    { events: [event(2)], cursor: 'c2', fresh: { state: 'current', asOf: since } },
  ]
  const seen = []
  const w = await ax.waitFor({
    for: 'build 7', target: { kind: 'build', id: '7' }, timeoutMs: 10000, intervalMs: 1000, now: c.now, sleep: c.sleep,
    read: async (cursor) => (seen.push(cursor), reads.shift()),
    match: (e) => e.type === 'build.done',
    resume: (cursor) => ({ command: `ax wait --cursor ${cursor}` }),
    next: (events) => [{ command: `ax show ${events[0].cursor}` }],
    callback: 'https://example.invalid/hook',
  })
  assert.equal(w.state, 'satisfied')
  assert.deepEqual(w.events.map((e) => e.cursor), ['c2'])
  assert.equal(w.cursor, 'c2')
  assert.deepEqual(w.fresh, { state: 'current', asOf: since })
  assert.deepEqual(w.next, [{ command: 'ax show c2' }])
  assert.equal(w.callback, 'https://example.invalid/hook')
  assert.deepEqual(w.target, { kind: 'build', id: '7' })
  assert.deepEqual(seen, [null, 'c1'])
  assert.deepEqual(c.slept, [1000])
  assert.ok(ax.validateWait(w).ok)
})

test('waitFor: timed-out resumes from the same cursor; gone when the target is', async () => {
  const c = clock()
  const w = await ax.waitFor({
    for: 'build 7', target: null, cursor: 'c0', timeoutMs: 2500, intervalMs: 1000, now: c.now, sleep: c.sleep,
    read: async (cursor) => ({ events: [], cursor }),
    resume: (cursor) => ({ command: `ax wait --cursor ${cursor}` }),
  })
  assert.equal(w.state, 'timed-out')
  assert.deepEqual(w.resume, { command: 'ax wait --cursor c0' })
  assert.deepEqual(c.slept, [1000, 1000, 500])
  assert.equal(w.until, new Date(2500).toISOString())
  const g = await ax.waitFor({
    for: 'pr 9', target: null, timeoutMs: 5000, now: c.now, sleep: c.sleep,
    read: async () => ({ events: [event(3, 'closed')], cursor: 'c3', gone: 'closed event' }),
    match: (e) => e.type === 'merged',
    resume: () => ({ command: 'x' }),
  })
  assert.equal(g.state, 'gone')
  assert.equal(g.reason, 'closed event')
})

test('waitFor: bad options are typed errors; an aborted signal rejects', async () => {
  await assert.rejects(ax.waitFor({ for: 'x', timeoutMs: 10, resume: () => ({ command: 'x' }) }), (e) => e.field === 'read')
  await assert.rejects(ax.waitFor({ for: 'x', timeoutMs: -1, read: async () => ({ events: [] }), resume: () => ({ command: 'x' }) }), (e) => e.field === 'timeoutMs')
  await assert.rejects(
    ax.waitFor({ for: 'x', target: null, timeoutMs: 60000, read: async () => ({ events: [], cursor: null }), resume: () => ({ command: 'x' }), signal: AbortSignal.abort() }),
    (e) => e.name === 'AbortError',
  )
  const c = new AbortController()
  const p = ax.waitFor({ for: 'x', target: null, timeoutMs: 60000, intervalMs: 10, read: async () => ({ events: [], cursor: null }), resume: () => ({ command: 'x' }), signal: c.signal })
  setTimeout(() => c.abort(), 50)
  await assert.rejects(p, (e) => e.name === 'AbortError')
})

test('waitFor with the real clock abandons a read still running at the limit', async () => {
  const began = Date.now()
  const w = await ax.waitFor({ for: 'x', target: null, timeoutMs: 200, read: () => new Promise(() => {}), resume: () => ({ command: 'again' }) })
  assert.equal(w.state, 'timed-out')
  assert.ok(Date.now() - began < 3000)
})

test('readEvents, eventsEndCursor and eventMatcher over a real JSON Lines log', async () => {
  const dir = tempDir()
  const log = path.join(dir, 'events.jsonl')
  const line = (type, summary, data) => JSON.stringify({ type, at: since, by: 'ci', summary, data }) + '\n'
  fs.writeFileSync(log, line('build.started', 'build 7 started'))
  const cursor = ax.eventsEndCursor(log)
  assert.equal(ax.readEvents(log, cursor).events.length, 0)
  fs.appendFileSync(log, 'not json\n' + line('build.done', 'build 7 passed', { ok: true }))
  const r = ax.readEvents(log, cursor)
  assert.equal(r.events.length, 1)
  assert.equal(r.malformed.length, 1)
  const match = ax.eventMatcher({ type: 'build.done', data: [{ pointer: '/ok', equals: true }] })
  assert.equal(match(r.events[0]), true)
  assert.equal(match({ ...r.events[0], type: 'other' }), false)
  assert.throws(() => ax.eventMatcher({ summry: 'x' }), (e) => e.code === 'invalid_arguments' && /summry/.test(e.message))
  assert.throws(() => ax.readEvents(log, 'garbage'), (e) => e.code === 'bad_cursor')
  const w = await ax.waitFor({
    for: 'build 7', target: null, cursor, timeoutMs: 5000, intervalMs: 20,
    read: async (c) => ax.readEvents(log, c), match, resume: (c) => ({ command: `ax wait --cursor ${c}` }),
  })
  assert.equal(w.state, 'satisfied')
  assert.equal(w.events[0].summary, 'build 7 passed')
  fs.appendFileSync(log, line('deleted', 'build 7 deleted'))
  const g = await ax.waitFor({ for: 'build 7', target: null, cursor: w.cursor, timeoutMs: 5000, intervalMs: 20, read: async (c) => ax.readEvents(log, c), match, resume: () => ({ command: 'x' }) })
  assert.equal(g.state, 'gone')
})

test('the engine wait and the envelope wait live in different entry points', () => {
  assert.notEqual(require('libwaitfor').wait, ax.wait)
})
