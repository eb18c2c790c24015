'use strict'
// The Ouro-named exports of `@libwaitfor/ax`, against the seed's descriptions
// (shared/seeds/ouro-ax-wait.md).
const test = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { getEventListeners } = require('node:events')
const ax = require('@libwaitfor/ax')
const { callTool, WaitforError } = require('libwaitfor')
const { tempDir } = require('../../node/test/helpers.js')

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
  assert.throws(() => ax.formatDuration(NaN), (e) => e.code === 'invalid_arguments')
  // A fraction: the nearest duration parseDuration reads back, not an error.
  assert.equal(ax.formatDuration(1.5), '2ms')
  assert.equal(ax.formatDuration(89999.6), '90s')
  assert.equal(ax.parseDuration(ax.formatDuration(0.4)), 0)
})

test('formatDuration follows the one rule of every language (core format_millis)', () => {
  // The answers Python's format_duration and C's waitfor_duration_format_number give.
  for (const [ms, text] of [[1.5, '2ms'], [0.5, '1ms'], [2.5, '3ms'], [-0.4, '0s'], [-0.5, '0s'], [-0, '0s'], [2 ** 53 - 1, '9007199254740991ms']]) {
    assert.equal(ax.formatDuration(ms), text, String(ms))
  }
  const refused = [[-1, 'out_of_range'], [-0.6, 'out_of_range'], [Infinity, 'out_of_range'], [-Infinity, 'out_of_range'], [2 ** 53, 'out_of_range'],
    [NaN, 'wrong_type'], ['90s', 'wrong_type'], [true, 'wrong_type'], [null, 'wrong_type'], [undefined, 'wrong_type'], [10n, 'wrong_type'], [{}, 'wrong_type']]
  for (const [ms, rule] of refused) {
    assert.throws(() => ax.formatDuration(ms), (e) => e instanceof WaitforError && e.code === 'invalid_arguments' && e.field === 'duration' && e.rule === rule, String(ms))
  }
  // Longer than 2^53 - 1 ms: null here, as every language refuses it.
  assert.equal(ax.parseDuration('9007199254740991ms'), 2 ** 53 - 1)
  assert.equal(ax.parseDuration('9007199254740992ms'), null)
})

test('wait builds the envelope; isWait checks the shape; validateWait the rules', () => {
  const gone = ax.wait({ for: 'deploy', state: 'gone', since, reason: 'deleted' })
  assert.equal(gone.ax, 'wait/1')
  assert.deepEqual(Object.keys(gone), ['ax', 'for', 'target', 'state', 'since', 'until', 'cursor', 'events', 'fresh', 'resume', 'reason', 'callback', 'next'])
  assert.ok(ax.isWait(gone))
  assert.deepEqual(ax.validateWait(gone), { ok: true, errors: [] })
  // As the seed's, wait builds what it is given and leaves the rules to validateWait.
  const noResume = ax.wait({ for: 'x', state: 'timed-out', since })
  assert.equal(noResume.resume, null)
  assert.ok(ax.validateWait(noResume).errors[0].startsWith('resume'))
  assert.ok(ax.validateWait(ax.wait({ for: 'x', state: 'satisfied', since })).errors[0].startsWith('events'))
  assert.equal(ax.wait({ for: 'x', state: 'gone', since, ax: 'wait/0' }).ax, 'wait/1')
  const open = { ...gone, state: 'waiting' }
  assert.ok(ax.isWait(open), 'shape only')
  assert.equal(ax.validateWait(open).ok, false)
  assert.equal(ax.isWait({ ax: 'wait/2' }), false)
  assert.equal(ax.isWait(undefined), false)
  assert.deepEqual(ax.validateWait(null).errors, ['wait: must be an object'])
  assert.throws(() => ax.wait(5), (e) => e instanceof WaitforError && e.code === 'invalid_arguments' && e.field === 'fields' && e.rule === 'wrong_type')
})

test('a step with fields of its own is accepted, as the seed accepts it', () => {
  const step = { command: 'ax wait --cursor c1', description: 'again', tool: 'ax', args: ['--cursor', 'c1'] }
  const w = ax.wait({ for: 'build 7', state: 'timed-out', since, resume: step, next: [step] })
  assert.deepEqual(ax.validateWait(w), { ok: true, errors: [] })
  assert.ok(ax.isWait(w))
  assert.deepEqual(w.next, [step])
  assert.equal(ax.waitText(w), 'nothing happened for build 7 in time\nresume: ax wait --cursor c1  # again\nnext: ax wait --cursor c1  # again')
  assert.equal(ax.waitExit(w, { ok: 0, error: 1 }), 1)
  assert.deepEqual(ax.validateWait({ ...w, next: [{ tool: 'ax' }] }).errors, ['next[0].command: must be a non-empty string'])
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
  assert.throws(() => ax.waitExit(done, { ok: 'zero' }), (e) => e.code === 'invalid_arguments' && e.field === 'exits' && e.rule === 'wrong_type')
  assert.throws(() => ax.waitExit(done, { ok: 0 }, { satisfied: 'ok' }), (e) => e.code === 'invalid_arguments' && e.field === 'names')
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
  assert.deepEqual(w.resume, { command: 'ax wait --cursor c2' })
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

test('waitFor: bad options are typed errors; an aborted signal ends it timed-out, as core does', async () => {
  await assert.rejects(ax.waitFor({ for: 'x', timeoutMs: 100, resume: () => ({ command: 'x' }) }), (e) => e.field === 'read')
  await assert.rejects(ax.waitFor({ for: 'x', timeoutMs: -1, read: async () => ({ events: [] }), resume: () => ({ command: 'x' }) }), (e) => e.field === 'timeoutMs')
  // Above 2^53 - 1 ms, as every duration a host gives core, or not a number of milliseconds at all: refused, as core refuses it.
  for (const timeoutMs of [1e300, 2 ** 53, Infinity, -Infinity, NaN, -0.5]) {
    const read = async () => ({ events: [], cursor: null })
    await assert.rejects(ax.waitFor({ for: 'x', target: null, timeoutMs, read, resume: () => ({ command: 'x' }) }), (e) => e.code === 'invalid_arguments' && e.field === 'timeoutMs' && e.rule === 'out_of_range', String(timeoutMs))
    await assert.rejects(ax.waitFor({ for: 'x', target: null, timeoutMs: 1000, intervalMs: timeoutMs, read, resume: () => ({ command: 'x' }) }), (e) => e.field === 'intervalMs' && e.rule === 'out_of_range', String(timeoutMs))
  }
  await assert.rejects(ax.waitFor({ for: 'x', timeoutMs: 19, read: async () => ({ events: [] }), resume: () => ({ command: 'x' }) }), (e) => e.field === 'timeoutMs' && /at least 20 ms/.test(e.message))
  const read = async () => ({ events: [], cursor: 'c1' })
  const before = await ax.waitFor({ for: 'x', target: null, cursor: 'c0', timeoutMs: 60000, read, resume: (c) => ({ command: `again ${c}` }), signal: AbortSignal.abort() })
  assert.deepEqual([before.state, before.reason, before.resume.command], ['timed-out', 'cancelled before a matching event', 'again c0'])
  const c = new AbortController()
  const p = ax.waitFor({ for: 'x', target: null, timeoutMs: 60000, intervalMs: 10, read: async () => (c.abort(), { events: [], cursor: 'c1' }), resume: (cursor) => ({ command: `again ${cursor}` }), signal: c.signal })
  const w = await p
  assert.deepEqual([w.state, w.reason], ['timed-out', 'cancelled before a matching event'])
  assert.ok(ax.validateWait(w).ok)
})

test('waitFor: next only when satisfied, resume unless gone, until when it ended (core\'s rules)', async () => {
  const run = async (reads, extra = {}) => {
    const c = clock()
    const nextCalls = []
    const w = await ax.waitFor({
      for: 'x', target: null, cursor: 'c0', timeoutMs: 2500, intervalMs: 1000, now: c.now, sleep: c.sleep,
      read: async () => reads.shift() ?? { events: [], cursor: null },
      match: (e) => e.type === 'build.done',
      resume: (cursor) => ({ command: `again ${cursor}` }),
      next: (events) => (nextCalls.push(events.length), [{ command: 'show' }]),
      ...extra,
    })
    return { w, nextCalls, c }
  }
  const timedOut = await run([])
  assert.deepEqual(timedOut.nextCalls, [], 'next is not called on a timed-out wait')
  assert.deepEqual(timedOut.w.next, [])
  assert.equal(timedOut.w.reason, 'no matching event before the time limit')
  // Reads at 0, 1000 and 2000 ms; none at the limit.
  assert.deepEqual(timedOut.c.slept, [1000, 1000, 500])
  assert.equal(timedOut.w.until, new Date(2500).toISOString())
  const gone = await run([{ events: [event(1, 'closed')], cursor: 'c1', gone: 'closed' }])
  assert.deepEqual([gone.w.state, gone.w.resume, gone.nextCalls], ['gone', null, []])
  const satisfied = await run([{ events: [], cursor: 'c1' }, { events: [event(2)], cursor: 'c2' }])
  assert.deepEqual([satisfied.w.state, satisfied.w.resume, satisfied.nextCalls, satisfied.w.next], ['satisfied', { command: 'again c2' }, [1], [{ command: 'show' }]])
  assert.equal(satisfied.w.until, new Date(1000).toISOString(), 'until is when it ended, not the limit')
  const both = await run([{ events: [event(3)], cursor: 'c3', gone: 'deleted' }])
  assert.deepEqual([both.w.state, both.w.resume, both.w.reason], ['satisfied', null, null])
})

test('waitFor with the real clock abandons a read still running at the limit', async () => {
  const began = Date.now()
  const w = await ax.waitFor({ for: 'x', target: null, timeoutMs: 200, read: () => new Promise(() => {}), resume: () => ({ command: 'again' }) })
  assert.equal(w.state, 'timed-out')
  assert.equal(w.reason, 'the event source did not answer before the time limit')
  assert.equal(w.fresh, null)
  assert.ok(Date.now() - began < 3000)
})

test('waitFor keeps the fields of the steps resume and next give', async () => {
  const step = { command: 'ax wait --cursor c1', description: 'again', tool: 'ax', args: ['--cursor', 'c1'] }
  const w = await ax.waitFor({ for: 'build 7', target: null, timeoutMs: 5000, read: async () => ({ events: [event(1)], cursor: 'c1' }), resume: () => step, next: () => [step] })
  assert.deepEqual([w.resume, w.next], [step, [step]])
  assert.deepEqual(ax.validateWait(w), { ok: true, errors: [] })
})

test('waitFor: what resume or next throws rejects the wait; a read that rejects rejects it with its own error', async () => {
  const boom = new Error('boom')
  const base = { for: 'x', target: null, timeoutMs: 5000, read: async () => ({ events: [event(1)], cursor: 'c1' }), resume: () => ({ command: 'again' }) }
  await assert.rejects(ax.waitFor({ ...base, resume: () => { throw boom } }), (e) => e === boom)
  await assert.rejects(ax.waitFor({ ...base, next: () => { throw boom } }), (e) => e === boom)
  await assert.rejects(ax.waitFor({ ...base, resume: () => 'not a step' }), (e) => e.code === 'invalid_arguments' && e.field === 'resume')
  await assert.rejects(ax.waitFor({ ...base, next: () => undefined }), (e) => e instanceof ax.WaitforError && e.field === 'next')
  await assert.rejects(ax.waitFor({ ...base, read: async () => { throw boom } }), (e) => e === boom)
})

test('waitFor: a read that resolves to anything but {events, cursor} is refused, not taken as no events', async () => {
  const base = { for: 'x', target: null, timeoutMs: 5000, resume: () => ({ command: 'again' }) }
  for (const answer of [42, null, undefined, 'events', { events: 'e1', cursor: 'c1' }]) {
    await assert.rejects(ax.waitFor({ ...base, read: async () => answer }), (e) => e.code === 'invalid_arguments' && e.field === 'read', String(answer))
  }
})

// Where the seed's loop and core's wait disagreed (until, when next() is
// called, cancel): waitFor is core's wait on the given clock, so both hold.

test('waitFor: since and until are the given clock\'s, the wall clock by default', async () => {
  const c = clock()
  c.t = Date.parse(since)
  const base = { for: 'x', target: null, timeoutMs: 5000, intervalMs: 1000, resume: () => ({ command: 'again' }) }
  const reads = [{ events: [], cursor: 'c1' }, { events: [event(1)], cursor: 'c2' }]
  const w = await ax.waitFor({ ...base, now: c.now, sleep: c.sleep, read: async () => reads.shift() })
  assert.deepEqual([w.since, w.until], [since, '2026-01-01T00:00:01.000Z'])
  const before = Date.now()
  const real = await ax.waitFor({ ...base, read: async () => ({ events: [event(1)], cursor: 'c1' }) })
  const after = Date.now()
  for (const t of [real.since, real.until]) assert.ok(Date.parse(t) >= before && Date.parse(t) <= after, t)
})

test('waitFor: next is not called for a read that answers after the time limit, on either clock', async () => {
  const c = clock()
  const nextCalls = []
  const base = { for: 'x', target: null, timeoutMs: 100, resume: () => ({ command: 'again' }), next: (events) => (nextCalls.push(events.length), []) }
  const late = { events: [event(1)], cursor: 'c1' }
  // On the injected clock the read takes 600 ms.
  const w = await ax.waitFor({ ...base, now: c.now, sleep: c.sleep, read: async () => ((c.t += 600), late) })
  assert.deepEqual([w.state, w.reason, w.until, w.cursor, nextCalls], ['timed-out', 'the event source did not answer before the time limit', new Date(100).toISOString(), null, []])
  const real = await ax.waitFor({ ...base, read: () => new Promise((resolve) => setTimeout(() => resolve(late), 600)) })
  assert.deepEqual([real.state, real.reason, nextCalls], ['timed-out', 'the event source did not answer before the time limit', []])
})

test('waitFor: an abort ends a wait whose read hangs, on either clock', { timeout: 10000 }, async () => {
  for (const c of [clock(), {}]) {
    const w = await ax.waitFor({
      for: 'x', target: null, cursor: 'c0', timeoutMs: 60000, now: c.now, sleep: c.sleep, signal: AbortSignal.timeout(100),
      read: () => new Promise(() => {}),
      resume: (cursor) => ({ command: `again ${cursor}` }),
    })
    assert.deepEqual([w.state, w.reason, w.resume.command], ['timed-out', 'cancelled before a matching event', 'again c0'])
  }
})

test('waitFor reads hold no thread, and waits sharing a signal share one listener: 300 reads in flight leave the thread count as it was', async () => {
  const threads = () => fs.readdirSync('/proc/self/task').length
  // Warm the engine up, then count.
  await ax.waitFor({ for: 'x', target: null, timeoutMs: 1000, read: async () => ({ events: [event(1)], cursor: 'c1' }), resume: () => ({ command: 'again' }) })
  const before = threads()
  const abort = new AbortController()
  let reading = 0
  const waits = Array.from({ length: 300 }, () =>
    ax.waitFor({ for: 'x', target: null, timeoutMs: 60000, signal: abort.signal, read: () => (reading++, new Promise(() => {})), resume: () => ({ command: 'again' }) }),
  )
  while (reading < 300) await new Promise((resolve) => setTimeout(resolve, 10))
  await new Promise((resolve) => setTimeout(resolve, 500))
  const during = threads()
  assert.equal(getEventListeners(abort.signal, 'abort').length, 1, 'the 300 waits share one abort listener')
  abort.abort()
  const ended = await Promise.all(waits)
  assert.ok(during - before < 20, `${before} threads before, ${during} with 300 reads in flight`)
  assert.ok(ended.every((w) => w.reason === 'cancelled before a matching event'))
})

test('readEvents, eventsEndCursor and eventMatcher over a real JSON Lines log', async () => {
  const dir = tempDir()
  const log = path.join(dir, 'events.jsonl')
  const grants = { fileRoots: [dir] }
  const line = (type, summary, data) => JSON.stringify({ type, at: since, by: 'ci', summary, data }) + '\n'
  fs.writeFileSync(log, line('build.started', 'build 7 started'))
  const cursor = await ax.eventsEndCursor(log, { grants })
  assert.equal((await ax.readEvents(log, cursor, { grants })).events.length, 0)
  fs.appendFileSync(log, 'not json\n' + line('build.done', 'build 7 passed', { ok: true }))
  const r = await ax.readEvents(log, cursor, { grants })
  assert.equal(r.events.length, 1)
  assert.equal(r.malformed.length, 1)
  const match = ax.eventMatcher({ type: 'build.done', data: [{ pointer: '/ok', equals: true }] })
  assert.equal(match(r.events[0]), true)
  assert.equal(match({ ...r.events[0], type: 'other' }), false)
  assert.throws(() => ax.eventMatcher({ summry: 'x' }), (e) => e.code === 'invalid_arguments' && /summry/.test(e.message))
  await assert.rejects(ax.readEvents(log, 'garbage', { grants }), (e) => e.code === 'bad_cursor')
  const read = (c) => ax.readEvents(log, c, { grants })
  const w = await ax.waitFor({ for: 'build 7', target: null, cursor, timeoutMs: 5000, intervalMs: 20, read, match, resume: (c) => ({ command: `ax wait --cursor ${c}` }) })
  assert.equal(w.state, 'satisfied')
  assert.equal(w.events[0].summary, 'build 7 passed')
  fs.appendFileSync(log, line('deleted', 'build 7 deleted'))
  const g = await ax.waitFor({ for: 'build 7', target: null, cursor: w.cursor, timeoutMs: 5000, intervalMs: 20, read, match, resume: () => ({ command: 'x' }) })
  assert.equal(g.state, 'gone')
})

test('readEvents returns 1,000 events a read, and waitFor reads a backlog on at once', async () => {
  const dir = tempDir()
  const log = path.join(dir, 'events.jsonl')
  const grants = { fileRoots: [dir] }
  const line = (type, n) => JSON.stringify({ type, at: since, by: 'ci', summary: `event ${n}` }) + '\n'
  fs.writeFileSync(log, Array.from({ length: 2500 }, (_, n) => line('other', n)).join('') + line('build.done', 2500))
  const first = await ax.readEvents(log, null, { grants })
  assert.equal(first.events.length, 1000)
  assert.equal(first.more, true)
  assert.equal(first.cursor, first.events[999].cursor)
  let reads = 0
  const read = (c) => (reads++, ax.readEvents(log, c, { grants }))
  const match = ax.eventMatcher({ type: 'build.done' })
  // An hour between reads: the wait ends only if each full read is followed by the next at once.
  const w = await ax.waitFor({ for: 'the build', target: null, timeoutMs: 20000, intervalMs: 3600000, read, match, resume: () => ({ command: 'again' }) })
  assert.equal(w.state, 'satisfied')
  assert.equal(w.events[0].summary, 'event 2500')
  assert.equal(reads, 3)
})

test('readEvents and eventsEndCursor read only granted regular files, never on the event loop', async () => {
  const dir = tempDir()
  const log = path.join(dir, 'events.jsonl')
  fs.writeFileSync(log, '')
  const fifo = path.join(dir, 'events.fifo')
  execFileSync('mkfifo', [fifo])
  const grants = { fileRoots: [dir] }
  const refusals = [
    [log, {}, /grants no file access/],
    ['/etc/hostname', { grants }, /outside the directories/],
    [fifo, { grants }, /FIFO.*not a regular file/i],
    ['/dev/zero', { grants: { fileRoots: ['/dev'] } }, /not a regular file/],
  ]
  for (const [file, options, message] of refusals) {
    for (const call of [() => ax.eventsEndCursor(file, options), () => ax.readEvents(file, 'end', options), () => ax.readEvents(file, null, options)]) {
      const pending = call()
      // Returned at once: the file is opened on a pool thread, not here.
      assert.ok(pending instanceof Promise, file)
      await assert.rejects(pending, (e) => e.code === 'io' && message.test(e.message), file)
    }
  }
  await assert.rejects(ax.readEvents(log, null, { grants: { fileRoot: dir } }), (e) => e.code === 'invalid_arguments' && e.field === 'options.grants.fileRoot')
})

test('waitFor gives core\'s answer: the same log and arguments through waitFor and the ouro/wait profile', async () => {
  const dir = tempDir()
  const grants = { fileRoots: [dir] }
  const line = (type, summary) => JSON.stringify({ type, at: since, by: 'ci', target: null, summary }) + '\n'
  /** Core's answer (the profile, on the engine) and waitFor's, on the same log, arguments and cancel. */
  async function both(name, content, args, abortAfterMs) {
    const log = path.join(dir, `${name}.jsonl`)
    fs.writeFileSync(log, content)
    const call = { path: log, for: name, ...args }
    const signal = () => (abortAfterMs === undefined ? undefined : AbortSignal.timeout(abortAfterMs))
    const core = await callTool('ouro/wait', call, { grants, signal: signal() })
    const js = await ax.waitFor({
      for: name, target: null, cursor: args.cursor ?? null, timeoutMs: ax.parseDuration(args.timeout), signal: signal(),
      read: (c) => ax.readEvents(log, c, { grants }),
      match: ax.eventMatcher(args.type === undefined ? {} : { type: args.type }),
      // The profile resumes with its own call, the cursor filled in.
      resume: (c) => ({ command: `wait_for_event ${JSON.stringify(c === null ? call : { ...call, cursor: c })}`, description: 'call wait_for_event again with these arguments' }),
    })
    for (const w of [core, js]) {
      assert.ok(Date.parse(w.until) - Date.parse(w.since) <= ax.parseDuration(args.timeout) + 1000, `${name}: until is when it ended`)
    }
    // Each add-on keys its cursors with its own per-process secret: compared by offset and line.
    const unkeyed = (w) => JSON.parse(JSON.stringify(w).replace(/(j2\.\d+\.\d+)\.[0-9a-f]+\.[0-9a-f]+/g, '$1'))
    const timeless = ({ since, until, ...w }) => unkeyed({ ...w, fresh: w.fresh && w.fresh.state })
    assert.deepEqual(timeless(js), timeless(core), name)
    if (core.cursor !== null) await assert.rejects(ax.readEvents(log, core.cursor, { grants }), (e) => e.code === 'source_replaced')
    return core
  }
  const satisfied = await both('satisfied', line('build.started', 'b') + line('build.done', 'passed'), { type: 'build.done', timeout: '5s' })
  assert.equal(satisfied.state, 'satisfied')
  assert.notEqual(satisfied.resume, null)
  const timedOut = await both('timed-out', line('build.started', 'b'), { type: 'never', timeout: '200ms' })
  assert.equal(timedOut.reason, 'no matching event before the time limit')
  assert.equal((await both('gone', line('deleted', 'removed'), { type: 'never', timeout: '5s' })).state, 'gone')
  const satisfiedGone = await both('satisfied-gone', line('build.done', 'passed') + line('deleted', 'removed'), { type: 'build.done', timeout: '5s' })
  assert.deepEqual([satisfiedGone.state, satisfiedGone.resume], ['satisfied', null])
  const cancelled = await both('cancelled', line('build.started', 'b'), { type: 'never', timeout: '30s' }, 300)
  assert.deepEqual([cancelled.state, cancelled.reason], ['timed-out', 'cancelled before a matching event'])
  await both('end', line('build.done', 'old'), { type: 'build.done', cursor: 'end', timeout: '200ms' })
})

test('the engine wait and the envelope wait live in different entry points', () => {
  assert.notEqual(require('libwaitfor').wait, ax.wait)
})
