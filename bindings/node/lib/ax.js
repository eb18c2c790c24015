'use strict'
/**
 * `libwaitfor/ax`: the Ouro AX typed wait (`wait/1`) under the seed's own
 * names; its API is documented in ax.d.ts. The envelope, its checks,
 * durations, the event source and matcher, and the wait itself are core's
 * (`waitfor::ouro`): `waitFor` only runs core's steps on the JavaScript
 * clock and calls the JavaScript `read`, `match`, `resume` and `next`.
 * @module
 */

const binding = require('./native.js')
const { WaitforError, invalid, fromNative, native, grantsJson } = require('./errors.js')
const { onAbort } = require('./abort.js')

const constants = binding.ouroConstants()

function deepFreeze(v) {
  if (v && typeof v === 'object') {
    for (const k of Object.keys(v)) deepFreeze(v[k])
    Object.freeze(v)
  }
  return v
}

const WAIT_VERSION = constants.version
const WAIT_STATES = deepFreeze(constants.states)
const WAIT_FLAGS = deepFreeze(constants.flags)
const DEFAULT_WAIT_EXITS = deepFreeze(constants.defaultExits)

/** The envelope builder (the seed's `wait`; the engine's `wait` is the main entry point's). */
function wait(fields) {
  return native(() => binding.ouroWait(fields))
}

/** Why a value that is not JSON (a function, a symbol, NaN, a cycle, a property that throws) is no wait. */
const NOT_JSON = 'wait: must be a JSON value'

function isWait(v) {
  try {
    return binding.ouroIsWait(v === undefined ? null : v)
  } catch {
    return false
  }
}

function validateWait(v) {
  try {
    return binding.ouroValidateWait(v === undefined ? null : v)
  } catch {
    return { ok: false, errors: [NOT_JSON] }
  }
}

function waitText(w) {
  return native(() => binding.ouroWaitText(w))
}

function waitExit(w, exits, names) {
  return native(() => binding.ouroWaitExit(w, exits, names))
}

function parseDuration(text) {
  return typeof text === 'string' ? binding.parseDuration(text) : null
}

function formatDuration(ms) {
  // Not a number (a string, a BigInt, undefined): core's own refusal.
  return native(() => binding.formatDuration(typeof ms === 'number' ? ms : null))
}

/** The native Promise `start` gives, its refusals (thrown or rejected) as `WaitforError`s. */
async function settle(start) {
  try {
    return await start()
  } catch (err) {
    throw fromNative(err)
  }
}

function readEvents(path, cursor, options = {}) {
  return settle(() => binding.readEvents(path, cursor ?? null, options.terminalTypes ?? null, grantsJson(options.grants))).then(JSON.parse)
}

function eventsEndCursor(path, options = {}) {
  return settle(() => binding.eventsEndCursor(path, grantsJson(options.grants)))
}

function eventMatcher(spec) {
  const m = native(() => new binding.NativeEventMatcher(spec))
  // An event JSON cannot hold (NaN, a function, a cycle) matches nothing.
  return (event) => {
    try {
      return m.matches(event)
    } catch {
      return false
    }
  }
}

/**
 * Core's wait (`ouro::Stepper`) run on this clock: the stepper says what
 * to do next (read, sleep, done) and this loop does it, telling it the
 * time. A read that answers after the limit is dropped; with the default
 * timer it is abandoned at the limit, with an injected `sleep` it is
 * awaited and its `now()` decides.
 */
async function waitFor(options) {
  if (!options || typeof options !== 'object') throw invalid('options', 'must be an object')
  for (const [name, type] of [['for', 'string'], ['read', 'function'], ['resume', 'function']]) {
    if (typeof options[name] !== type) throw invalid(name, `must be a ${type}`)
  }
  for (const name of ['now', 'sleep', 'match', 'next']) {
    if (options[name] != null && typeof options[name] !== 'function') throw invalid(name, 'must be a function')
  }
  const { signal } = options
  const now = options.now ?? Date.now
  const sleep = options.sleep ?? null
  const match = options.match ?? (() => true)
  const number = (v) => (typeof v === 'number' ? v : NaN)
  const args = {
    for: options.for,
    target: options.target ?? undefined,
    cursor: options.cursor ?? undefined,
    callback: options.callback ?? undefined,
    timeoutMs: number(options.timeoutMs),
    intervalMs: options.intervalMs === undefined ? undefined : number(options.intervalMs),
  }
  const stepper = native(() => new binding.OuroStepper(args, now()))
  const step = (what, read) => native(() => stepper.step(now(), what, read))
  let action = stepper.first()
  // The read in flight, kept across the ticks of a timer that fired early.
  let reading = null
  while (action.do !== 'done') {
    if (signal?.aborted) {
      action = step('cancel')
      break
    }
    if (action.do === 'read') {
      const cursor = action.cursor
      reading = Promise.resolve()
        .then(() => options.read(cursor))
        // Anything but {events: [...]} goes to core as it is, which refuses it.
        .then((r) => (Array.isArray(r?.events) ? { ...r, events: r.events.filter((e) => match(e)) } : r))
    }
    const got = await first(reading, reading && sleep ? null : action.ms, sleep, signal)
    if (got.what === 'read') reading = null
    action = step(got.what, got.read)
  }
  const called = (f, arg) => [f(arg) ?? null]
  const resume = action.resume ? called(options.resume, action.cursor) : undefined
  const next = action.next && options.next ? called(options.next, action.next) : undefined
  return native(() => stepper.finish(resume, next))
}

/** The longest delay `setTimeout` takes; a longer sleep is taken in parts (core asks again). */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * What comes first, as the stepper's event: the read's answer
 * (`reading`), a tick after `ms` (none when null) on `sleep` or a timer,
 * or a cancel when `signal` aborts. Rejects when the read (or the sleep)
 * does. Cleans up its timer and listener.
 */
function first(reading, ms, sleep, signal) {
  let timer
  let forget
  const racers = reading ? [reading.then((read) => ({ what: 'read', read }))] : []
  if (ms !== null) {
    // After an injected sleep, a turn of the event loop: one that resolves
    // at once, on a clock that does not move, would otherwise keep the
    // loop in microtasks for good (no timer, no abort, no I/O).
    const slept = sleep
      ? Promise.resolve(sleep(ms)).then(() => new Promise(setImmediate))
      : new Promise((resolve) => (timer = setTimeout(resolve, Math.min(ms, MAX_TIMER_MS))))
    racers.push(slept.then(() => ({ what: 'tick' })))
  }
  if (signal) racers.push(new Promise((resolve) => (forget = onAbort(signal, () => resolve({ what: 'cancel' })))))
  return Promise.race(racers).finally(() => {
    clearTimeout(timer)
    forget?.()
  })
}

// A literal of names: Node's ESM loader reads the named exports from it.
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
