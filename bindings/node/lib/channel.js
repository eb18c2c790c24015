'use strict'
/**
 * The package's side of the native bridge (`src/bridge.rs`): one per
 * JavaScript environment, whose threadsafe function calls `dispatch` with
 * each probe call, host tool call, progress report and end. A wait is its
 * `WaitHandle`, kept here by a key that is never reused while it runs; a
 * pending wait keeps the process alive through one shared timer. Nothing
 * here throws into the threadsafe function: a probe's throw, rejection or
 * unreadable value is that call's probe error.
 * @module
 */

const binding = require('./native.js')
const { WaitforError, fromNative } = require('./errors.js')
const { ERROR, TEXT, answerOf, capped, errorText, isThenable } = require('./answer.js')

// What `dispatch` is called with, by its first argument (`ToJs` in src/bridge.rs).
const PROBE = 0
const TOOL = 1
const RESULT = 2
const PROGRESS = 3

/** The pending waits' handles, by key: a small integer, never one a pending wait has. */
const handles = new Map()
const LAST_KEY = 2 ** 30 - 1
let lastKey = 0
let bridge = null
/** The timer that keeps the process alive while a wait is pending. */
let keepAlive = null

/**
 * A probe's `value` as its answer: a string is returned (the bridge hands
 * it to the engine), anything else is read now and sent through `native`
 * (the wait's `NativeWait`); `cap` is the wait's output cap in bytes.
 */
function settle(native, value, cap) {
  if (typeof value === 'string') return capped(value, cap)
  let answer
  try {
    answer = answerOf(value, cap)
  } catch (err) {
    return native.answer(ERROR, errorText(err, cap))
  }
  native.answer(answer.flags, answer.text, answer.json, answer.exitCode)
}

function ignore() {}

/** Calls `handle`'s probe and returns or sends its answer (see `settle`); a probe declared without parameters gets no context. */
function runProbe(handle, sample, elapsedMs, budgetMs, cap) {
  const native = handle._native
  if (handle._cancelled) return native.answer(ERROR, 'the wait was cancelled')
  let value
  try {
    value = handle._bare ? handle._probe() : handle._probe({ sample, elapsedMs, budgetMs })
    if (isThenable(value)) {
      Promise.resolve(value)
        .then(
          (v) => (typeof v === 'string' ? native.answer(TEXT, capped(v, cap)) : settle(native, v, cap)),
          (err) => native.answer(ERROR, errorText(err, cap)),
        )
        .catch(ignore) // A native call throws only in a broken environment; nothing is waiting then.
      return
    }
  } catch (err) {
    return native.answer(ERROR, errorText(err, cap))
  }
  return settle(native, value, cap)
}

/** Calls the host's tools for a profile call and settles `reply` with the answer (see `ToolReply` in src/bridge.rs). */
function runTool(handle, name, args, budgetMs, cap, reply) {
  new Promise((resolve) => resolve(handle._tools(name, args, { budgetMs })))
    .then((value) => answerOf(value, cap))
    .then(
      (answer) => reply.settle(answer.flags, answer.text, answer.json),
      (err) => reply.settle(ERROR, errorText(err, cap)),
    )
    .catch(ignore)
}

/** Runs a user callback; what it throws is reported, not let through. */
function report(callback, value) {
  try {
    callback(value)
  } catch (err) {
    queueMicrotask(() => {
      throw err
    })
  }
}

/** Hands a progress report, or a profile call's notice (`{kind: 'progress' | 'log', ...}`), to `handle`'s callback. */
function notify(handle, body) {
  if (body.kind === 'log') {
    if (handle._onLog) report(handle._onLog, { level: body.level, message: body.message })
  } else if (handle._onProgress) {
    report(handle._onProgress, body.kind === 'progress' ? { progress: body.progress, total: body.total, message: body.message } : body)
  }
}

/** What the bridge calls with each item (`ToJs` in src/bridge.rs); it never throws, and returns a probe's string answer. */
function dispatch(kind, key, a, b, c, d, e) {
  try {
    const handle = handles.get(key)
    if (kind === TOOL) {
      if (handle === undefined) e.settle(ERROR, 'the call has ended')
      else runTool(handle, a, b, c, d, e)
    } else if (handle === undefined) {
      // The wait has ended: its late items are nobody's.
    } else if (kind === PROBE) {
      return runProbe(handle, a, b, c, d)
    } else if (kind === PROGRESS) {
      notify(handle, JSON.parse(a))
    } else {
      forget(handle)
      const body = JSON.parse(a)
      if (kind === RESULT) handle._resolve(body)
      else if (body.error) handle._reject(new WaitforError(body.error))
      else handle._resolve(body.output)
    }
  } catch {
    // Only a broken environment gets here (a native call failed); nothing is waiting then.
  }
}

function forget(handle) {
  handles.delete(handle._key)
  if (handles.size === 0 && keepAlive !== null) {
    clearInterval(keepAlive)
    keepAlive = null
  }
}

/** Registers `handle` under a fresh key and starts it with `launch(bridge, key)`, which returns its `NativeWait`; a throw leaves nothing registered. */
function begin(handle, launch) {
  bridge ??= new binding.Bridge(dispatch)
  do lastKey = lastKey === LAST_KEY ? 1 : lastKey + 1
  while (handles.has(lastKey))
  handle._key = lastKey
  handle._native = launch(bridge, handle._key)
  handles.set(handle._key, handle)
  keepAlive ??= setInterval(() => {}, 2 ** 30)
}

/** Starts `handle`'s wait on `spec` (JSON text) with its `_probe`, or the spec's built-in probe when it has none. */
function startWait(handle, spec, policy, grants) {
  begin(handle, (b, key) => b.startWait(key, spec, handle._probe !== undefined, handle._onProgress !== undefined, policy, grants))
}

/** Starts `handle`'s profile call with the agent's `args` (JSON text); a refusal's notices are delivered before it is thrown. */
function startToolCall(handle, profile, args, tools, maxWaitCeilingMs, grants) {
  const notices = handle._onProgress !== undefined || handle._onLog !== undefined
  handle._tools = tools
  try {
    begin(handle, (b, key) => b.startToolCall(key, profile, args, tools !== undefined, notices, maxWaitCeilingMs, grants))
  } catch (err) {
    const refusal = fromNative(err)
    for (const notice of refusal.notices ?? []) notify(handle, notice)
    throw refusal
  }
}

/** Takes a sample of `handle`'s wait now (nothing once it has ended). */
function wakeWait(handle) {
  if (handles.get(handle._key) === handle) handle._native.wake()
}

/** Ends `handle`'s wait with outcome `cancelled` (nothing once it has ended). */
function cancelWait(handle) {
  if (handles.get(handle._key) === handle) handle._native.cancel()
}

module.exports = { startWait, startToolCall, wakeWait, cancelWait }
