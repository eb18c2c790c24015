'use strict'
/**
 * `libwaitfor/ax`: the Ouro AX typed wait (`wait/1`) under the seed's own
 * names, so a user of `lib/ouro/ax/wait.ts` switches by changing an import:
 *
 * ```js
 * // import { waitFor, waitText } from './lib/ouro/ax/wait.ts'
 * import { waitFor, waitText } from 'libwaitfor/ax'
 * ```
 *
 * The envelope, its checks, text, exit codes and durations are the native
 * core's (`waitfor::ouro`, `waitfor::duration`). `waitFor` runs its loop
 * on the JavaScript thread, as the seed does, because its `read`, `match`,
 * `resume` and `next` are JavaScript callbacks and `now`/`sleep` are
 * injectable; `readEvents` and `eventMatcher` give it the core's JSON
 * Lines event source and matcher.
 *
 * Here `wait` is the envelope builder (the seed's name); the engine's
 * `wait` is in the main entry point (`libwaitfor`).
 * @module
 */

const binding = require('./native.js')
const { WaitforError, fromNative, native } = require('./errors.js')
const { grantsJson } = require('./grants.js')

const constants = binding.ouroConstants()

function deepFreeze(v) {
  if (v && typeof v === 'object') {
    for (const k of Object.keys(v)) deepFreeze(v[k])
    Object.freeze(v)
  }
  return v
}

/** `"wait/1"`. */
const WAIT_VERSION = constants.version
/** `["satisfied", "waiting", "timed-out", "gone"]`: how a wait ended. */
const WAIT_STATES = deepFreeze(constants.states)
/** The flags a wait command takes (`timeout`, `cursor`), as ax-command flags. */
const WAIT_FLAGS = deepFreeze(constants.flags)
/** Satisfied or waiting exits `ok`; timed-out or gone exits `error`. */
const DEFAULT_WAIT_EXITS = deepFreeze(constants.defaultExits)

/**
 * Builds a wait, filling in `ax` and the optional fields. As the seed's, it
 * does not check the rules (a timed-out or waiting wait needs `resume`, a
 * satisfied one an event): `validateWait` does.
 *
 * @example
 * wait({ for: 'deploy 7', state: 'gone', since: new Date().toISOString(), reason: 'deleted' })
 */
function wait(fields) {
  return native(() => binding.ouroWait(fields))
}

/** Whether a value is a wait of this version (its shape only). */
function isWait(v) {
  return binding.ouroIsWait(v === undefined ? null : v)
}

/**
 * Checks a wait: one that can go on names how to resume it, and a
 * satisfied one carries what happened. `{ok, errors}`.
 */
function validateWait(v) {
  return binding.ouroValidateWait(v === undefined ? null : v)
}

/** The wait as text: what happened (one line per event), or that nothing did, then how to resume. */
function waitText(w) {
  return native(() => binding.ouroWaitText(w))
}

/**
 * The exit code a wait gives, by its state's name in the tool's table.
 *
 * @example
 * waitExit(w, { ok: 0, error: 1 }) // 1 for a timed-out wait
 */
function waitExit(w, exits, names) {
  return native(() => binding.ouroWaitExit(w, exits, names))
}

/** `"90s"`, `"2m"`, `"1h"`, `"500ms"` or a bare number of seconds, as milliseconds; null when it is none of these. */
function parseDuration(text) {
  return typeof text === 'string' ? binding.parseDuration(text) : null
}

/**
 * Milliseconds as the shortest exact duration parseDuration reads back: "2m",
 * "90s", "500ms". A fraction is rounded to the nearest millisecond.
 *
 * @example
 * formatDuration(90000) // '90s'
 */
function formatDuration(ms) {
  return native(() => binding.formatDuration(ms))
}

/**
 * Reads a JSON Lines event log after `cursor` with the core's source: a
 * Promise of a `WaitRead` (`events`, `cursor`, `fresh`, `gone`) plus
 * `malformed` lines. The file is read on a libuv pool thread, never on
 * the event loop, and only as a regular file inside `options.grants`'
 * `fileRoots` (nothing by default): a path outside them, a FIFO, a device
 * or a directory rejects with code `io` saying why. One read takes at most
 * 8 MiB of the file.
 *
 * @example
 * const grants = { fileRoots: ['/var/log/ci'] }
 * waitFor({ ..., read: (cursor) => readEvents('/var/log/ci/events.jsonl', cursor, { grants }) })
 */
function readEvents(path, cursor, options = {}) {
  return settle(() => binding.readEvents(path, cursor ?? null, options.terminalTypes ?? null, grantsJson(options.grants))).then(JSON.parse)
}

/**
 * A Promise of the cursor at the end of a JSON Lines event log (only later
 * events count from it), read as `readEvents` reads: off the event loop,
 * inside `options.grants` only.
 *
 * @example
 * const cursor = await eventsEndCursor('/var/log/ci/events.jsonl', { grants: { fileRoots: ['/var/log/ci'] } })
 */
function eventsEndCursor(path, options = {}) {
  return settle(() => binding.eventsEndCursor(path, grantsJson(options.grants)))
}

/** The native Promise `start` gives, its refusals (thrown or rejected) as `WaitforError`s. */
async function settle(start) {
  try {
    return await start()
  } catch (err) {
    throw fromNative(err)
  }
}

/**
 * A `match` function from a declarative spec (the core's event matcher):
 * `{type, by, target, summary, summaryRegex, ignoreCase, data: [{pointer, equals|exists}]}`.
 *
 * @example
 * waitFor({ ..., match: eventMatcher({ type: 'build.done', data: [{ pointer: '/ok', equals: true }] }) })
 */
function eventMatcher(spec) {
  const m = native(() => new binding.NativeEventMatcher(spec))
  return (event) => m.matches(event)
}

function required(options, name, type) {
  if (typeof options[name] !== type) {
    throw new WaitforError({ code: 'invalid_arguments', message: `${name}: must be a ${type}`, field: name, rule: 'wrong_type' })
  }
}

/** Time between reads when `intervalMs` is not given (core's `DEFAULT_INTERVAL`). */
const DEFAULT_INTERVAL_MS = 250
/** The shortest time between reads (core's `MIN_INTERVAL`). */
const MIN_INTERVAL_MS = 10
/** The shortest time limit (core's `MIN_TIMEOUT`): room for one read. */
const MIN_TIMEOUT_MS = 20

/** Why a wait ended without a matching event, in core's words. */
const REASONS = {
  timedOut: 'no matching event before the time limit',
  cancelled: 'cancelled before a matching event',
  unanswered: 'the event source did not answer before the time limit',
}

/**
 * Waits on a reference until a matching event, a time limit or the target
 * is gone, and returns the typed wait, exactly as core's `ouro::wait_for`
 * does on the engine:
 *
 * - reads start at once and then every `intervalMs` (default 250, at least
 *   10), never at or after the limit (`timeoutMs`, at least 20);
 * - a read that returns matching events ends the wait `satisfied` (even
 *   with `gone`), one that returns `gone` ends it `gone`; at the limit it
 *   is `timed-out`;
 * - an aborted `signal` ends it `timed-out` with reason `cancelled before
 *   a matching event` (it does not reject);
 * - `resume(cursor)` is set unless the target is gone; `next(events)` is
 *   called only for a satisfied wait;
 * - `until` is when the wait ended; a read still running then is abandoned
 *   and its result dropped; a read that rejects rejects the wait.
 *
 * `now` and `sleep` replace the clock (for tests).
 *
 * @example
 * const grants = { fileRoots: ['/srv/ci'] }
 * const w = await waitFor({
 *   for: 'build 7', target: { kind: 'build', id: '7' }, cursor, timeoutMs: 90_000,
 *   read: (c) => readEvents('/srv/ci/events.jsonl', c, { grants }),
 *   match: eventMatcher({ type: 'build.done' }),
 *   resume: (c) => ({ command: `ax wait build 7 --cursor ${c}` }),
 * })
 * console.log(waitText(w))
 */
async function waitFor(options) {
  if (!options || typeof options !== 'object') {
    throw new WaitforError({ code: 'invalid_arguments', message: 'options: must be an object', field: 'options', rule: 'wrong_type' })
  }
  required(options, 'for', 'string')
  required(options, 'read', 'function')
  required(options, 'resume', 'function')
  const { timeoutMs, signal } = options
  if (!Number.isFinite(timeoutMs) || timeoutMs < MIN_TIMEOUT_MS) {
    throw new WaitforError({ code: 'invalid_arguments', message: `timeoutMs: must be at least ${MIN_TIMEOUT_MS} ms (got ${timeoutMs})`, field: 'timeoutMs', rule: 'out_of_range' })
  }
  const givenInterval = options.intervalMs ?? DEFAULT_INTERVAL_MS
  if (!Number.isFinite(givenInterval) || givenInterval < 0) {
    throw new WaitforError({ code: 'invalid_arguments', message: 'intervalMs: must be a number of milliseconds, 0 or more', field: 'intervalMs', rule: 'out_of_range' })
  }
  const intervalMs = Math.min(Math.max(givenInterval, MIN_INTERVAL_MS), timeoutMs - MIN_INTERVAL_MS)
  const now = options.now ?? Date.now
  const match = options.match ?? (() => true)
  const started = now()
  const deadline = started + timeoutMs
  // Ends the wait early: `cancelled` on abort.
  const ended = new AbortController()
  const onAbort = () => ended.abort(REASONS.cancelled)
  if (signal?.aborted) onAbort()
  else signal?.addEventListener('abort', onAbort, { once: true })
  const sleep = options.sleep ? (ms) => settleOrEnd(options.sleep(ms), ended.signal) : (ms) => realSleep(ms, ended.signal)
  let cursor = options.cursor ?? null
  let fresh = null
  let reads = 0
  let events = []
  let gone = null
  try {
    let nextRead = started
    while (!ended.signal.aborted) {
      const wake = Math.min(nextRead, deadline) - now()
      if (wake > 0) await sleep(wake)
      if (ended.signal.aborted) break
      if (now() >= deadline) {
        ended.abort(reads === 0 ? REASONS.unanswered : REASONS.timedOut)
        break
      }
      nextRead = now() + intervalMs
      const r = await readWithin(options.read(cursor), deadline - now(), options.sleep ? null : ended, reads)
      if (ended.signal.aborted || r === undefined) break
      reads += 1
      if (r.cursor != null) cursor = r.cursor
      if (r.fresh != null) fresh = r.fresh
      events = (r.events ?? []).filter((e) => match(e))
      gone = r.gone ?? null
      if (events.length > 0 || gone !== null) break
    }
  } finally {
    signal?.removeEventListener('abort', onAbort)
  }
  const state = events.length > 0 ? 'satisfied' : gone !== null ? 'gone' : 'timed-out'
  return wait({
    for: options.for,
    target: options.target ?? null,
    state,
    since: new Date(started).toISOString(),
    until: new Date(Math.min(now(), deadline)).toISOString(),
    cursor,
    events,
    fresh,
    resume: gone === null ? options.resume(cursor) : null,
    reason: state === 'satisfied' ? null : state === 'gone' ? gone : ended.signal.reason,
    callback: options.callback ?? null,
    next: state === 'satisfied' && options.next ? options.next(events) : [],
  })
}

/** Sleeps `ms` on the real clock, or less when `ended` (a signal) aborts. */
function realSleep(ms, ended) {
  let timer
  return settleOrEnd(new Promise((resolve) => (timer = setTimeout(resolve, ms))), ended).finally(() => clearTimeout(timer))
}

/** `promise` settled, or `undefined` as soon as `ended` (a signal) aborts. */
function settleOrEnd(promise, ended) {
  if (ended.aborted) return Promise.resolve(undefined)
  let onEnd
  const end = new Promise((resolve) => {
    onEnd = () => resolve(undefined)
    ended.addEventListener('abort', onEnd, { once: true })
  })
  return Promise.race([promise, end]).finally(() => ended.removeEventListener('abort', onEnd))
}

/**
 * The read's result, or `undefined` when the wait ends first: on the real
 * clock at the limit (`ended`, a controller, gets the reason) or on abort;
 * the read is then abandoned and its result dropped. With an injected clock
 * (`ended` null) the read is awaited.
 */
async function readWithin(read, ms, ended, reads) {
  if (ended === null) return read
  const timer = setTimeout(() => ended.abort(reads === 0 ? REASONS.unanswered : REASONS.timedOut), ms)
  try {
    return await settleOrEnd(Promise.resolve(read), ended.signal)
  } finally {
    clearTimeout(timer)
  }
}

module.exports = {
  waitFor,
  wait,
  isWait,
  validateWait,
  waitText,
  waitExit,
  DEFAULT_WAIT_EXITS,
  WAIT_STATES,
  WAIT_VERSION,
  WAIT_FLAGS,
  parseDuration,
  formatDuration,
  readEvents,
  eventsEndCursor,
  eventMatcher,
  WaitforError,
}
