'use strict'
/**
 * `@libwaitfor/ax`: the Ouro AX typed wait (`wait/1`) under the seed's names,
 * documented in ax.d.ts. Everything is core's (`waitfor::ouro`, in this
 * package's add-on); `waitFor` runs core's steps on the JavaScript clock and
 * calls the caller's functions. Refusals are libwaitfor's `WaitforError`.
 * @module
 */

const path = require('node:path')

// libwaitfor's own edge helpers, from its lib/ (its package's exports leave
// them out; this package pins libwaitfor's version): the add-on loader, whose
// error names the platform package when no add-on loads, the typed errors,
// and one abort listener per signal.
const lib = path.dirname(require.resolve('libwaitfor'))
const { loadAddon } = require(path.join(lib, 'addon.js'))
const { WaitforError, invalid, fromNative, native, grantsJson } = require(path.join(lib, 'errors.js'))
const { onAbort } = require(path.join(lib, 'abort.js'))
const binding = loadAddon(() => require('../index.js'), require('../package.json'), 'bindings/node-ax')

function deepFreeze(v) {
  if (v && typeof v === 'object') Object.values(v).forEach(deepFreeze)
  return Object.freeze(v)
}
const { version: WAIT_VERSION, states, flags, defaultExits } = binding.ouroConstants()
const [WAIT_STATES, WAIT_FLAGS, DEFAULT_WAIT_EXITS] = [states, flags, defaultExits].map(deepFreeze)

/** A value JSON cannot hold (a function, NaN, a cycle, a throwing getter) fails to convert: it is no wait. */
const json = (v) => (v === undefined ? null : v)
function attempt(fn, otherwise) {
  try {
    return fn()
  } catch {
    return otherwise
  }
}
const wait = (fields) => native(() => binding.ouroWait(fields))
const isWait = (v) => attempt(() => binding.ouroIsWait(json(v)), false)
const validateWait = (v) => attempt(() => binding.ouroValidateWait(json(v)), { ok: false, errors: ['wait: must be a JSON value'] })
const waitText = (w) => native(() => binding.ouroWaitText(w))
const waitExit = (w, exits, names) => native(() => binding.ouroWaitExit(w, exits, names))
const parseDuration = (text) => (typeof text === 'string' ? binding.parseDuration(text) : null)
// Not a number (a string, a BigInt, undefined): core's own refusal.
const formatDuration = (ms) => native(() => binding.formatDuration(typeof ms === 'number' ? ms : null))

/** The native Promise `start` gives, its refusals (thrown or rejected) as `WaitforError`s. */
const settle = (start) => new Promise((resolve) => resolve(start())).catch((err) => Promise.reject(fromNative(err)))
const events = (path, cursor, options, end) =>
  settle(() => binding.readEvents(path, cursor ?? null, options?.terminalTypes ?? null, grantsJson(options?.grants), end)).then(JSON.parse)
const readEvents = (path, cursor, options) => events(path, cursor, options, false)
const eventsEndCursor = (path, options) => events(path, null, options, true)

function eventMatcher(spec) {
  const m = native(() => new binding.NativeEventMatcher(spec))
  // An event JSON cannot hold matches nothing.
  return (event) => attempt(() => m.matches(event), false)
}

/**
 * Core's wait (`ouro::Stepper`) on this clock: it says what to do next
 * (read, sleep, done) and this loop does it. A read that answers after the
 * limit is dropped; with the default timer it is abandoned at the limit,
 * with an injected `sleep` it is awaited and its `now()` decides.
 */
async function waitFor(options) {
  if (!options || typeof options !== 'object') throw invalid('options', 'must be an object')
  for (const name of ['read', 'resume', 'now', 'sleep', 'match', 'next']) {
    const given = options[name] != null || name === 'read' || name === 'resume'
    if (given && typeof options[name] !== 'function') throw invalid(name, 'must be a function')
  }
  const [signal, now, sleep, match] = [options.signal, options.now ?? Date.now, options.sleep ?? null, options.match ?? (() => true)]
  // Core names the field; a number JSON cannot hold goes as its text.
  const ms = (v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v)
  const { for: awaited, target, cursor, callback, timeoutMs, intervalMs } = options
  const args = { for: awaited, target, cursor, callback, timeoutMs: ms(timeoutMs), intervalMs: ms(intervalMs) }
  const stepper = native(() => new binding.OuroStepper(args, now()))
  const step = (what, read) => native(() => stepper.step(now(), what, read))
  let action = stepper.first()
  let reading = null // the read in flight, kept across the ticks of a timer that fired early
  while (action.do !== 'done') {
    if (signal?.aborted) {
      action = step('cancel')
      break
    }
    if (action.do === 'read') {
      const at = action.cursor
      reading = Promise.resolve()
        .then(() => options.read(at))
        // Anything but {events: [...]} goes to core as it is, which refuses it.
        .then((r) => (Array.isArray(r?.events) ? { ...r, events: r.events.filter((e) => match(e)) } : r))
    }
    const got = await first(reading, reading && sleep ? null : action.ms, sleep, signal)
    if (got.what === 'read') reading = null
    action = step(got.what, got.read)
  }
  const returned = { resume: action.resume ? (options.resume(action.cursor) ?? null) : undefined }
  if (action.next && options.next) returned.next = options.next(action.next) ?? null
  return native(() => stepper.finish(returned))
}

/**
 * What comes first, as the stepper's event: the read's answer, a tick
 * after `ms` (none when null) on `sleep` or a timer (at most setTimeout's
 * longest; core asks again), or a cancel when `signal` aborts.
 */
function first(reading, ms, sleep, signal) {
  let timer
  let forget
  const racers = reading ? [reading.then((read) => ({ what: 'read', read }))] : []
  if (ms !== null) {
    // After an injected sleep, a turn of the event loop: one that resolves at
    // once on a clock that stands still would keep the loop in microtasks.
    const slept = sleep
      ? Promise.resolve(sleep(ms)).then(() => new Promise(setImmediate))
      : new Promise((resolve) => (timer = setTimeout(resolve, Math.min(ms, 2 ** 31 - 1))))
    racers.push(slept.then(() => ({ what: 'tick' })))
  }
  if (signal) racers.push(new Promise((resolve) => (forget = onAbort(signal, () => resolve({ what: 'cancel' })))))
  return Promise.race(racers).finally(() => {
    clearTimeout(timer)
    forget?.()
  })
}

// A literal of names: Node's ESM loader reads the named exports from it.
module.exports = { waitFor, wait, isWait, validateWait, waitText, waitExit, DEFAULT_WAIT_EXITS, WAIT_STATES, WAIT_VERSION, WAIT_FLAGS,
  parseDuration, formatDuration, readEvents, eventsEndCursor, eventMatcher, WaitforError }
