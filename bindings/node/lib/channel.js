'use strict'
/**
 * The package's way in from the engine: one native `WaitChannel` per
 * JavaScript environment, and the `drain` it calls.
 *
 * Everything the engine has for JavaScript (due probe calls, finished
 * waits, progress reports) waits in the channel; the first arrival wakes
 * `drain` once, through one weak threadsafe function. One `drain` turn
 * runs the due probe calls a few hundred at a time, handing each lot's
 * synchronous answers back in one native call (numbers in typed arrays,
 * texts in one byte buffer: see `Answers`), so the engine starts on them
 * while the next lot runs, then delivers every event. Answers of probes
 * that return a Promise are gathered as they settle and sent together
 * from a microtask. A pending wait keeps the process alive (one shared
 * timer while any is pending), so the process exits on its own when none
 * is. Tool calls (AURA's host tools) are answered one by one through
 * `settleToolCall`.
 *
 * A wait is its `WaitHandle` (`lib/waitfor.js`), kept here by slot from
 * its start to its end: a small number the native side finds the wait's
 * calls, events and controls by, reused once the wait has ended (the key,
 * never reused, tells a late call or event apart). The fields used here:
 * `_key`, `_slot`, `_probe`, `_bare`, `_cancelled`, `_resolve`,
 * `_reject`, `_onProgress`, `_onLog`. One object per wait, and no native object:
 * 10,000 waits ending together are that much less for the garbage
 * collector to copy while they end.
 *
 * Nothing here throws into a threadsafe function: a probe's throw,
 * rejection or unreadable value becomes that call's probe error.
 * @module
 */

const binding = require('./native.js')
const { WaitforError, fromNative } = require('./errors.js')
const { ERROR, answerOf, errorText, isThenable, Answers } = require('./answer.js')
const { readEvents, rehearse, RESULT, DONE } = require('./events.js')

/** Numbers per call in the batch `WaitChannel.take` writes. */
const CALL_FIELDS = 5
/** Calls taken at a time; their answers go back before the next are taken. */
const CALLS_PER_TAKE = 256
/** The answer to a call of a wait that was cancelled. */
const CANCELLED = 'the wait was cancelled'

/** The pending waits' handles, by slot. */
const handles = []
const freeSlots = []
let pending = 0
/** Keys count up and are never reused (2^53 waits). */
let lastKey = 0
let channel = null
/** The timer that keeps the process alive while a wait is pending. */
let keepAlive = null
/** Due probe calls, as `WaitChannel.take` writes them. */
const due = new Float64Array(CALL_FIELDS * CALLS_PER_TAKE)
/**
 * The numbers of the events `WaitChannel.takeEvents` takes: grown when a
 * batch needs more, and kept (10,000 results at once leave it at 2-4 MiB).
 */
let eventNumbers = new Float64Array(4096)
/**
 * Pending waits from which results are rehearsed (see `rehearse`): enough
 * that they may well end together.
 */
const REHEARSE_FROM = 1000
/** Answers of the probe calls run in this lot (never more than a lot: its arrays never grow). */
const answers = new Answers(CALLS_PER_TAKE)
/** Answers of Promises that settled since the last send. */
const late = new Answers(64)
let lateQueued = false

function sendLate() {
  lateQueued = false
  late.send(channel)
}

function lateAnswers() {
  if (!lateQueued) {
    lateQueued = true
    queueMicrotask(sendLate)
  }
  return late
}

/**
 * Calls a wait's probe for the due call at `at`. A probe declared without
 * parameters gets no context object, and the call's times are not even
 * read: fractional milliseconds, each would be a number allocated on the
 * heap once passed from function to function (at 10,000 waits, most of
 * the garbage made while they poll).
 *
 * Its two call sites have seen two functions of this module before any
 * user's (V8 records call targets from a function's ninth call or so on,
 * hence the loop), so V8 never inlines a user's probe into the code that
 * runs it: when a probe's compiled code is thrown away (the flag it reads
 * changed, which is exactly when thousands of waits end together), the
 * package's compiled code stays.
 */
function callProbe(handle, at) {
  return handle._bare ? handle._probe() : handle._probe({ sample: due[at + 2], elapsedMs: due[at + 3], budgetMs: due[at + 4] })
}
const seeds = [() => '', (ctx) => ctx]
for (let i = 0; i < 64; i++) {
  callProbe({ _bare: i % 4 < 2, _probe: seeds[i % 2] }, 0)
}

/**
 * Runs the due call at `at` (the probe of the wait in its slot with its
 * key), adding its answer to `answers` (or, later, to `late`).
 */
function runProbe(at) {
  const slot = due[at]
  const key = due[at + 1]
  const handle = handles[slot]
  if (handle === undefined || handle._key !== key || handle._cancelled) {
    answers.error(slot, key, CANCELLED)
    return
  }
  let value
  try {
    value = callProbe(handle, at)
    if (isThenable(value)) {
      Promise.resolve(value).then(
        (v) => lateAnswers().value(slot, key, v),
        (err) => lateAnswers().error(slot, key, err),
      )
      return
    }
  } catch (err) {
    answers.error(slot, key, err)
    return
  }
  answers.value(slot, key, value)
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

/**
 * Hands a progress report to `handle`'s `_onProgress`, or a profile call's
 * notice (`{kind: 'progress' | 'log', ...}`) to its `_onProgress`
 * (`{progress, total, message}`) or `_onLog` (`{level, message}`).
 */
function notify(handle, body) {
  if (body.kind === 'log') {
    if (handle._onLog) report(handle._onLog, { level: body.level, message: body.message })
  } else if (handle._onProgress) {
    report(handle._onProgress, body.kind === 'progress' ? { progress: body.progress, total: body.total, message: body.message } : body)
  }
}

/**
 * Delivers an event of wait `key` in `slot`: its result (`RESULT`), the
 * end of a profile call (`DONE`: `{output}` or `{error}`), or a progress
 * report or notice.
 */
function deliver(slot, key, kind, body) {
  const handle = handles[slot]
  if (handle === undefined || handle._key !== key) return
  if (kind === RESULT) {
    forget(handle)
    handle._resolve(body)
  } else if (kind === DONE) {
    forget(handle)
    if (body.error) handle._reject(new WaitforError(body.error))
    else handle._resolve(body.output)
  } else {
    notify(handle, body)
  }
}

/** Runs every due probe call, a lot at a time, sending each lot's answers. */
function runCalls() {
  for (;;) {
    let taken
    try {
      taken = channel.take(due)
    } catch {
      return // take only throws on a broken environment; nothing is waiting then.
    }
    for (let at = 0; at < taken * CALL_FIELDS; at += CALL_FIELDS) runProbe(at)
    answers.send(channel)
    if (taken < CALLS_PER_TAKE) return
  }
}

/**
 * Takes everything the channel has; called by the native channel. Due
 * calls run first: their answers reach the engine, which works on them on
 * another core while this thread reads the events (when thousands of
 * waits end at once, each call's answer is the next result).
 */
function drain() {
  let events = null
  try {
    events = channel.takeEvents(eventNumbers)
    // Too many numbers for the array: grow it and take again (more may have come meanwhile).
    while (events !== null && events.text === undefined) {
      eventNumbers = new Float64Array(Math.max(2 * eventNumbers.length, 2 * events.count))
      events = channel.takeEvents(eventNumbers)
    }
  } catch {
    // takeEvents only throws on a broken environment; nothing is waiting then.
    events = null
  }
  runCalls()
  if (events !== null) {
    readEvents(eventNumbers, events.count, events.text, deliver)
    runCalls()
  }
}

function forget(handle) {
  handles[handle._slot] = undefined
  freeSlots.push(handle._slot)
  if (--pending === 0 && keepAlive !== null) {
    clearInterval(keepAlive)
    keepAlive = null
  }
}

/**
 * Registers `handle` (its `_probe`, `_bare`, `_onProgress`, `_resolve`
 * and `_reject` set) under a fresh key and a free slot, and starts it
 * with `launch(channel, slot, key)`; a throw leaves nothing registered.
 */
function begin(handle, launch) {
  channel ??= new binding.WaitChannel(drain)
  const slot = freeSlots.pop() ?? handles.length
  handle._key = ++lastKey
  handle._slot = slot
  try {
    launch(channel, slot, handle._key)
  } catch (err) {
    freeSlots.push(slot)
    throw err
  }
  handles[slot] = handle
  if (++pending >= REHEARSE_FROM) rehearse()
  keepAlive ??= setInterval(() => {}, 2 ** 30)
}

/**
 * Starts `handle`'s wait on `spec` (JSON text) with its JavaScript
 * `_probe`, or with the spec's built-in probe when it has none, reaching
 * only what `grants` (JSON text, optional) allow. Its `_resolve` gets the
 * result.
 */
function startWait(handle, spec, policy, grants) {
  begin(handle, (ch, slot, key) => binding.startWait(ch, slot, key, spec, handle._probe !== undefined, handle._onProgress !== undefined, policy, grants))
}

/**
 * Starts `handle`'s profile call with the agent's `args` (JSON text);
 * `tools` (optional) answers the profile's host tool calls, `grants`
 * (JSON text, optional) bounds its built-in probes and tools. Its
 * `_resolve` gets the output, its `_reject` a `WaitforError`; its
 * `_onProgress` and `_onLog` the profile's notices (a refusal's before
 * the refusal is thrown).
 */
function startToolCall(handle, profile, args, tools, maxWaitCeilingMs, grants) {
  const notices = handle._onProgress !== undefined || handle._onLog !== undefined
  try {
    begin(handle, (ch, slot, key) =>
      binding.startToolCall(ch, slot, key, profile, args, tools ? toolDispatcher(tools) : undefined, notices, maxWaitCeilingMs, grants),
    )
  } catch (err) {
    const refusal = fromNative(err)
    for (const notice of refusal.notices ?? []) notify(handle, notice)
    throw refusal
  }
}

/** Whether `handle`'s wait is still running. */
function running(handle) {
  return channel !== null && handles[handle._slot] === handle
}

/** Takes a sample of `handle`'s wait now (nothing once it has ended). */
function wakeWait(handle) {
  if (running(handle)) channel.wakeWait(handle._slot)
}

/** Ends `handle`'s wait with outcome `cancelled` (nothing once it has ended). */
function cancelWait(handle) {
  if (running(handle)) channel.cancelWait(handle._slot)
}

/** Hands the answer of tool call `id` to the waiting worker. */
function settleTool(id, value) {
  let answer
  try {
    answer = answerOf(value)
  } catch (err) {
    failTool(id, err)
    return
  }
  try {
    binding.settleToolCall(id, answer.flags, answer.text, answer.json)
  } catch {
    // settleToolCall only throws on a broken environment; nothing is waiting then.
  }
}

function failTool(id, err) {
  try {
    binding.settleToolCall(id, ERROR, errorText(err))
  } catch {
    // As above.
  }
}

/**
 * The dispatcher of a host's tools, called by the engine with
 * `(callId, name, args, budgetMs)`.
 */
function toolDispatcher(tools) {
  return (id, name, args, budgetMs) => {
    let value
    try {
      value = tools(name, args, { budgetMs })
      if (isThenable(value)) {
        Promise.resolve(value).then(
          (v) => settleTool(id, v),
          (err) => failTool(id, err),
        )
        return
      }
    } catch (err) {
      failTool(id, err)
      return
    }
    settleTool(id, value)
  }
}

module.exports = { startWait, startToolCall, wakeWait, cancelWait }
