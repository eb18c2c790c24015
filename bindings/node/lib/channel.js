'use strict'
/**
 * The package's way in from the engine: one native `WaitChannel` per
 * JavaScript environment (`src/channel.rs`), which calls `drain` once
 * something waits in it. `drain` runs the due probe calls a lot at a time,
 * handing each lot's answers back in one native call (`Answers`), then
 * delivers the finished waits and progress reports. A wait is its
 * `WaitHandle`, kept here by slot (reused once the wait has ended; the
 * key, never reused, tells a late call or event apart). A pending wait
 * keeps the process alive through one shared timer. Nothing here throws
 * into the threadsafe function: a probe's throw, rejection or unreadable
 * value is that call's probe error.
 * @module
 */

const binding = require('./native.js')
const { WaitforError, fromNative } = require('./errors.js')
const { ERROR, answerOf, errorText, isThenable, Answers } = require('./answer.js')
const { readEvents, rehearse, RESULT, DONE } = require('./events.js')

/** Numbers per call in the batch `WaitChannel.take` writes (`src/batch.rs`): slot, key, sample, elapsedMs, budgetMs, outputCap. */
const CALL_FIELDS = 6
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
/** The numbers `WaitChannel.takeEvents` writes: grown when a batch needs more, and kept. */
let eventNumbers = new Float64Array(4096)
/** Pending waits from which results are rehearsed (see `rehearse`): enough that they may well end together. */
const REHEARSE_FROM = 1000
/** Answers of the probe calls run in this lot. */
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
 * Calls a wait's probe for the due call at `at`; a probe declared without
 * parameters gets no context (its times would be heap numbers: most of the
 * garbage of 10,000 polling waits). The loop below shows both call sites
 * two functions before any user's, so V8 never inlines a user's probe
 * here: when the probe's code is thrown away (exactly when thousands of
 * waits end together), the package's stays.
 */
function callProbe(handle, at) {
  return handle._bare ? handle._probe() : handle._probe({ sample: due[at + 2], elapsedMs: due[at + 3], budgetMs: due[at + 4] })
}
const seeds = [() => '', (ctx) => ctx]
for (let i = 0; i < 64; i++) {
  callProbe({ _bare: i % 4 < 2, _probe: seeds[i % 2] }, 0)
}

/** Runs the due call at `at`, adding its answer to `answers` (or, once it settles, to `late`). */
function runProbe(at) {
  const slot = due[at]
  const key = due[at + 1]
  const cap = due[at + 5]
  const handle = handles[slot]
  if (handle === undefined || handle._key !== key || handle._cancelled) {
    answers.error(slot, key, CANCELLED, cap)
    return
  }
  let value
  try {
    value = callProbe(handle, at)
    if (isThenable(value)) {
      Promise.resolve(value).then(
        (v) => lateAnswers().value(slot, key, v, cap),
        (err) => lateAnswers().error(slot, key, err, cap),
      )
      return
    }
  } catch (err) {
    answers.error(slot, key, err, cap)
    return
  }
  answers.value(slot, key, value, cap)
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

/** Delivers an event of wait `key` in `slot`: its result, a profile call's end (`{output}` or `{error}`), or a report. */
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
 * Takes everything the channel has. Due calls run first, so the engine
 * works on their answers on another core while this thread reads the events.
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

/** Registers `handle` under a fresh key and a free slot and starts it with `launch(channel, slot, key)`; a throw leaves nothing registered. */
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

/** Starts `handle`'s wait on `spec` (JSON text) with its `_probe`, or the spec's built-in probe when it has none. */
function startWait(handle, spec, policy, grants) {
  begin(handle, (ch, slot, key) => binding.startWait(ch, slot, key, spec, handle._probe !== undefined, handle._onProgress !== undefined, policy, grants))
}

/** Starts `handle`'s profile call with the agent's `args` (JSON text); a refusal's notices are delivered before it is thrown. */
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

/** The dispatcher of a host's tools, called by the engine with `(reply, name, args, budgetMs, outputCap)` (`src/bridge.rs`). */
function toolDispatcher(tools) {
  return (reply, name, args, budgetMs, outputCap) => {
    new Promise((resolve) => resolve(tools(name, args, { budgetMs })))
      .then((value) => answerOf(value, outputCap))
      .then(
        (answer) => reply.settle(answer.flags, answer.text, answer.json),
        (err) => reply.settle(ERROR, errorText(err, outputCap)),
      )
      .catch(() => {}) // settle only throws on a broken environment; nothing is waiting then.
  }
}

module.exports = { startWait, startToolCall, wakeWait, cancelWait }
