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
const { WaitforError, native } = require('./errors.js')

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
 * Builds a wait, filling in `ax`. Unlike the seed's, it checks the rules
 * (a timed-out or waiting wait needs `resume`, a satisfied one an event)
 * and throws a `WaitforError` (`invalid_wait`, with `errors`) otherwise.
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

/** Milliseconds as the shortest exact duration parseDuration reads back: "2m", "90s", "500ms". */
function formatDuration(ms) {
  return native(() => binding.formatDuration(ms))
}

/**
 * Reads a JSON Lines event log after `cursor` with the core's source: a
 * `WaitRead` (`events`, `cursor`, `fresh`, `gone`) plus `malformed` lines.
 * Synchronous (one bounded read of the file's new bytes).
 *
 * @example
 * waitFor({ ..., read: (cursor) => Promise.resolve(readEvents('events.jsonl', cursor)) })
 */
function readEvents(path, cursor, options = {}) {
  return native(() => binding.readEvents(path, cursor ?? null, options.terminalTypes ?? null))
}

/** The cursor at the end of a JSON Lines event log (only later events count from it). */
function eventsEndCursor(path) {
  return native(() => binding.eventsEndCursor(path))
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

function abortReason(signal) {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError')
}

function realSleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal))
    const onAbort = () => {
      clearTimeout(timer)
      reject(abortReason(signal))
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

function required(options, name, type) {
  if (typeof options[name] !== type) {
    throw new WaitforError({ code: 'invalid_arguments', message: `${name}: must be a ${type}`, field: name, rule: 'wrong_type' })
  }
}

/** Default time between reads when `intervalMs` is not given. */
const DEFAULT_INTERVAL_MS = 1000

/**
 * Waits on a reference until a matching event, a time limit or the target
 * is gone, reading the source as often as `intervalMs` allows (default
 * 1000), and returns the typed wait. The first read is at once; a read
 * that returns `gone` ends the wait as `gone` unless it also carried a
 * matching event; at the limit the wait is `timed-out` with
 * `resume(cursor)`. `now` and `sleep` replace the clock (for tests); with
 * the real clock a read still running at the limit is abandoned. An
 * aborted `signal` rejects with its reason (the `wait/1` envelope has no
 * cancelled state).
 *
 * @example
 * const w = await waitFor({
 *   for: 'build 7', target: { kind: 'build', id: '7' }, cursor, timeoutMs: 90_000,
 *   read: async (c) => readEvents('events.jsonl', c),
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
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) {
    throw new WaitforError({ code: 'invalid_arguments', message: 'timeoutMs: must be a number of milliseconds, 0 or more', field: 'timeoutMs', rule: 'out_of_range' })
  }
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS
  if (!Number.isFinite(intervalMs) || intervalMs <= 0) {
    throw new WaitforError({ code: 'invalid_arguments', message: 'intervalMs: must be a positive number of milliseconds', field: 'intervalMs', rule: 'not_positive' })
  }
  const now = options.now ?? Date.now
  const injectedSleep = options.sleep
  const sleep = injectedSleep ?? ((ms) => realSleep(ms, signal))
  const match = options.match ?? (() => true)
  const started = now()
  const deadline = started + timeoutMs
  let cursor = options.cursor ?? null
  let fresh = null
  const base = {
    for: options.for,
    target: options.target ?? null,
    since: new Date(started).toISOString(),
    until: new Date(deadline).toISOString(),
    callback: options.callback ?? null,
  }
  const finish = (fields) => wait({ ...base, cursor, fresh, ...fields })
  for (;;) {
    if (signal?.aborted) throw abortReason(signal)
    const left = deadline - now()
    const read = injectedSleep || left <= 0 ? options.read(cursor) : raceDeadline(options.read(cursor), left, signal)
    const r = await read
    if (signal?.aborted) throw abortReason(signal)
    if (r === TIMED_OUT) break
    if (r.cursor !== undefined) cursor = r.cursor
    if (r.fresh !== undefined) fresh = r.fresh
    const events = (r.events ?? []).filter((e) => match(e))
    if (events.length > 0) {
      return finish({ state: 'satisfied', events, next: options.next ? options.next(events) : [] })
    }
    if (r.gone) {
      return finish({ state: 'gone', reason: r.gone, next: options.next ? options.next([]) : [] })
    }
    const remaining = deadline - now()
    if (remaining <= 0) break
    await sleep(Math.min(intervalMs, remaining))
  }
  return finish({
    state: 'timed-out',
    reason: `nothing matched within ${formatDuration(Math.max(0, Math.round(timeoutMs)))}`,
    resume: options.resume(cursor),
    next: options.next ? options.next([]) : [],
  })
}

const TIMED_OUT = Symbol('timed out')

/** The read, or `TIMED_OUT` when the limit comes first (the read is abandoned). */
function raceDeadline(read, ms, signal) {
  let timer
  let onAbort
  const limit = new Promise((resolve, reject) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms)
    onAbort = () => reject(abortReason(signal))
    signal?.addEventListener('abort', onAbort, { once: true })
  })
  return Promise.race([Promise.resolve(read), limit]).finally(() => {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
  })
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
