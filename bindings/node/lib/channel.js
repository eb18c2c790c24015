'use strict'
/**
 * The package's side of the native bridge (src/bridge.rs), one per
 * JavaScript environment: its threadsafe function calls `dispatch` with
 * each probe call, host tool call, report and end of the waits kept here
 * by key. A pending wait keeps the process alive through one shared timer.
 * Nothing throws into the bridge: a probe's throw, rejection or unreadable
 * value is that call's probe error.
 * @module
 */

const binding = require('./native.js')
const { WaitforError, fromNative } = require('./errors.js')

// `dispatch`'s first argument (`ToJs` in src/bridge.rs).
const [PROBE, TOOL, END] = [0, 1, 2]

/** The pending waits' handles by key, a small integer no other pending wait has. */
const handles = new Map()
let lastKey = 0
let bridge = null
let keepAlive = null

/**
 * `text`, cut to its first `cap + 1` UTF-16 units when longer than `cap`:
 * the engine refuses it over the cap of `cap` bytes alike, but encoding
 * costs the cap, not the text (a 100 MiB answer held the loop ~250 ms).
 */
const capped = (text, cap) => (text.length > cap ? text.slice(0, cap + 1) : text)

/** Bytes as text, as far as the cap needs them (decoding never shrinks bytes). */
const bytesText = (v, cap) => Buffer.from(v.buffer, v.byteOffset, Math.min(v.byteLength, cap + 1)).toString('utf8')

const OVER_CAP = new Error('over the cap')

/**
 * The JSON text of `value`, serialized only until it is sure to be longer
 * than `cap` (then `OVER_CAP` is thrown): the count is a lower bound of the
 * text's length, so a value within the cap is never refused.
 */
function jsonText(field, value, cap) {
  let least = 0
  const text = JSON.stringify(value, function (key, v) {
    const type = typeof v
    if (!Array.isArray(this) && v !== undefined && type !== 'function' && type !== 'symbol') least += key ? key.length + 4 : 1
    least += type === 'string' ? v.length : Array.isArray(v) ? 2 * v.length : 0
    if (least > cap) throw OVER_CAP
    return v
  })
  if (text === undefined) throw new TypeError(`${field}: not a JSON value`)
  if (text.length > cap) throw OVER_CAP
  return text
}

/** The message of anything thrown, cut past the engine's 4,096 bytes (or `cap`) with an ellipsis. */
function errorText(err, cap) {
  let text
  try {
    text = err instanceof Error ? String(err.message || err.name) : typeof err === 'string' ? err : jsonText('error', err, cap)
  } catch {
    try {
      text = String(err)
    } catch {
      text = 'the probe threw a value that cannot be read'
    }
  }
  const most = Math.min(cap, 4097)
  return text.length > most ? `${text.slice(0, most)}…` : text
}

const OBSERVATION_KEYS = new Set(['text', 'json', 'exitCode', 'gone'])

/** Sends `native` (a `NativeWait`) the answer `value`, for a wait whose output cap is `cap` bytes. */
function answer(native, value, cap) {
  try {
    if (value === undefined || value === null) return native.answer(false, '')
    if (typeof value !== 'object') return native.answer(false, capped(String(value), cap))
    if (ArrayBuffer.isView(value)) return native.answer(false, bytesText(value, cap))
    const keys = Array.isArray(value) ? [] : Object.keys(value)
    if (keys.length === 0 || !keys.every((k) => OBSERVATION_KEYS.has(k))) return native.answer(false, undefined, jsonText('value', value, cap))
    const { text, json, exitCode, gone } = value
    if (exitCode !== undefined && !(Number.isInteger(exitCode) && exitCode >= -(2 ** 31) && exitCode < 2 ** 31)) {
      throw new TypeError(`exitCode: must be a 32-bit integer, got ${String(exitCode)}`)
    }
    const read = text === undefined ? (json === undefined ? '' : undefined) : ArrayBuffer.isView(text) ? bytesText(text, cap) : capped(String(text), cap)
    native.answer(false, read, json === undefined ? undefined : jsonText('json', json, cap), exitCode, Boolean(gone))
  } catch (err) {
    // A structured value over the cap is answered as a string over it is.
    native.answer(err !== OVER_CAP, err === OVER_CAP ? ' '.repeat(cap + 1) : errorText(err, cap))
  }
}

const isThenable = (v) => v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function'
const ignore = () => {}

/** Answers `native` with what `promise` settles to; a native call throws only in a broken environment. */
const later = (native, promise, cap) =>
  promise.then((v) => answer(native, v, cap), (err) => native.answer(true, errorText(err, cap))).catch(ignore)

/** Calls `handle`'s probe: a string it returns goes back as `dispatch`'s value, anything else through its `NativeWait`. */
function runProbe(handle, sample, elapsedMs, budgetMs, cap) {
  const native = handle._native
  if (handle._cancelled) return native.answer(true, 'the wait was cancelled')
  try {
    const value = handle._bare ? handle._probe() : handle._probe({ sample, elapsedMs, budgetMs })
    if (typeof value === 'string') return capped(value, cap)
    if (!isThenable(value)) return answer(native, value, cap)
    later(native, Promise.resolve(value), cap)
  } catch (err) {
    native.answer(true, errorText(err, cap))
  }
}

/**
 * Runs a user callback (`onProgress`, `onLog`). What it throws ends nothing:
 * it becomes a process warning (as Python hands a raising `on_progress` to
 * `sys.unraisablehook`) and the wait goes on. So does a rejection of the
 * promise it returns (an `async` callback that throws), which would
 * otherwise be an unhandled rejection, ending the process and every wait in it.
 */
function report(callback, value) {
  try {
    const answer = callback(value)
    if (isThenable(answer)) answer.then(undefined, warn)
  } catch (err) {
    warn(err)
  }
}

/**
 * Emits a warning for `thrown`, as an Error of this package whose `cause` it
 * is: Node prints a warning through its `toString` after this returns, and a
 * thrown value's own (or its `name` getter) may throw, which would then be an
 * uncaught exception.
 */
function warn(thrown) {
  let text
  try {
    text = String(thrown)
  } catch {
    text = 'a value that cannot be shown as text'
  }
  try {
    process.emitWarning(new Error(`a libwaitfor callback threw ${text}`, { cause: thrown }))
  } catch {}
}

/** Hands a report, or a profile call's notice (`{kind: 'progress' | 'log', ...}`), to `handle`'s callbacks. */
function notify(handle, body) {
  if (body.kind === 'log') {
    if (handle._onLog) report(handle._onLog, { level: body.level, message: body.message })
  } else if (handle._onProgress) {
    report(handle._onProgress, body.kind === 'progress' ? { progress: body.progress, total: body.total, message: body.message } : body)
  }
}

/** What the bridge calls with each item (`ToJs` in src/bridge.rs); never throws. */
function dispatch(kind, key, a, b, c, d) {
  const handle = handles.get(key)
  if (handle === undefined) return // Ended (or key 0: a call queued behind its end): nobody's.
  try {
    if (kind === PROBE) return runProbe(handle, a, b, c, d)
    if (kind === TOOL) return void later(handle._native, new Promise((resolve) => resolve(handle._tools(c, JSON.parse(d), { budgetMs: b }))), a)
    const body = JSON.parse(a)
    if (kind !== END) return notify(handle, body)
    handles.delete(key)
    if (handles.size === 0) keepAlive = clearInterval(keepAlive)
    if (!handle._tool) handle._resolve(body)
    else if (body.error) handle._reject(new WaitforError(body.error))
    else handle._resolve(body.output)
  } catch {
    // Only a broken environment gets here; nothing is waiting then.
  }
}

/** Registers `handle` under a fresh key, started by `launch(bridge, key)`, which returns its `NativeWait`. */
function begin(handle, launch) {
  bridge ??= new binding.Bridge(dispatch)
  do lastKey = lastKey === 2 ** 30 ? 1 : lastKey + 1
  while (handles.has(lastKey))
  handle._native = launch(bridge, lastKey)
  handles.set((handle._key = lastKey), handle)
  keepAlive ??= setInterval(ignore, 2 ** 30)
}

/** Starts `handle`'s wait on `spec` (JSON text) with its `_probe`, or the spec's built-in probe. */
function startWait(handle, spec, policy, grants) {
  const { maxWaitCeilingMs, outputCapBytes } = policy ?? {}
  const probe = handle._probe !== undefined
  begin(handle, (b, key) => b.startWait(key, handle._cancelled, spec, probe, handle._onProgress !== undefined, maxWaitCeilingMs, outputCapBytes, grants))
}

/** Starts `handle`'s profile call with `args` (JSON text); a refusal's notices are delivered before it is thrown. */
function startToolCall(handle, profile, args, tools, maxWaitCeilingMs, grants) {
  const notices = handle._onProgress !== undefined || handle._onLog !== undefined
  Object.assign(handle, { _tool: true, _tools: tools })
  try {
    begin(handle, (b, key) => b.startToolCall(key, handle._cancelled, profile, args, tools !== undefined, notices, maxWaitCeilingMs, grants))
  } catch (err) {
    const refusal = fromNative(err)
    for (const notice of refusal.notices ?? []) notify(handle, notice)
    throw refusal
  }
}

/** Runs `method` (`wake`, `cancel`) on `handle`'s wait while it runs. */
function control(handle, method) {
  if (handles.get(handle._key) === handle) handle._native[method]()
}

module.exports = { startWait, startToolCall, control }
