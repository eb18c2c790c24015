'use strict'
/**
 * The package's way in from the engine: one native `WaitChannel` per
 * JavaScript environment, and the `drain` it calls.
 *
 * Everything the engine has for JavaScript (due probe calls, finished
 * waits, progress reports) waits in the channel's inbox; the first arrival
 * wakes `drain` once, through one weak threadsafe function. One `drain`
 * turn delivers every event, runs every due probe call (each wait's probe
 * function is kept in `probes` by slot from its start to its end) and hands
 * all the synchronous answers back in one native call (numbers in typed
 * arrays, texts in one byte buffer: see `Answers`). Answers of probes
 * that return a Promise are gathered as they settle and sent together
 * from a microtask. A pending wait keeps the process alive (one shared
 * timer while any is pending), so the process exits on its own when none
 * is. Tool calls (AURA's host tools) are answered one by one through
 * `settleToolCall`.
 *
 * Nothing here throws into a threadsafe function: a probe's throw,
 * rejection or unreadable value becomes that call's probe error.
 * @module
 */

const binding = require('../index.js')
const { ERROR, answerOf, errorText, isThenable, Answers } = require('./answer.js')
const { readEvents } = require('./events.js')

/** Numbers per call in the batch `WaitChannel.take` writes. */
const CALL_FIELDS = 5
/** The answer to a call of a wait that was cancelled. */
const CANCELLED = 'the wait was cancelled'

/** Each pending wait, by key: `{key, slot?, probe?, bare?, state, onDone, onProgress}`. */
const waits = new Map()
/**
 * The pending waits with a JavaScript probe, by slot: a small number the
 * native side finds the call's reply by; reused once the wait has ended
 * (the key, never reused, tells a late call or answer apart).
 */
const probes = []
const freeSlots = []
/** Keys count up and are never reused (2^53 waits). */
let lastKey = 0
let channel = null
/** The timer that keeps the process alive while a wait is pending. */
let keepAlive = null
/** Due probe calls, as `WaitChannel.take` writes them (1,024 at a time). */
const due = new Float64Array(CALL_FIELDS * 1024)
/** Answers of the probe calls run in this turn. */
const answers = new Answers()
/** Answers of Promises that settled since the last send. */
const late = new Answers()
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
 * Calls the probe of the wait in `slot` with `key`, adding its answer to
 * `answers` (or, later, to `late`). A probe declared without parameters
 * gets no context object (one allocation less per call).
 */
function runProbe(slot, key, sample, elapsedMs, budgetMs) {
  const entry = probes[slot]
  if (entry === undefined || entry.key !== key || entry.state.cancelled) {
    answers.error(slot, key, CANCELLED)
    return
  }
  let value
  try {
    value = entry.bare ? entry.probe() : entry.probe({ sample, elapsedMs, budgetMs })
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

/** Delivers a finished wait (`done`) or a progress report of wait `key`. */
function deliver(key, done, progress) {
  const entry = waits.get(key)
  if (entry === undefined) return
  if (done !== undefined) {
    forget(entry)
    report(entry.onDone, done)
  } else if (entry.onProgress) {
    report(entry.onProgress, progress)
  }
}

/** Takes everything in the inbox; called by the native channel. */
function drain() {
  let events = null
  try {
    events = channel.takeEvents()
  } catch {
    // takeEvents only throws on a broken environment; nothing is waiting then.
  }
  if (events !== null) readEvents(events, deliver)
  for (;;) {
    let taken
    try {
      taken = channel.take(due)
    } catch {
      break // As above.
    }
    for (let i = 0; i < taken * CALL_FIELDS; i += CALL_FIELDS) runProbe(due[i], due[i + 1], due[i + 2], due[i + 3], due[i + 4])
    if (taken * CALL_FIELDS < due.length) break
  }
  answers.send(channel)
}

function forget(entry) {
  waits.delete(entry.key)
  if (entry.slot !== undefined) {
    probes[entry.slot] = undefined
    freeSlots.push(entry.slot)
  }
  if (waits.size === 0 && keepAlive !== null) {
    clearInterval(keepAlive)
    keepAlive = null
  }
}

/**
 * Registers a wait and starts it with `launch(channel, key, slot)`;
 * `entry` is `{probe?, state, onDone, onProgress?}`. A wait with a probe
 * gets a slot (otherwise `slot` is undefined).
 */
function begin(entry, launch) {
  channel ??= new binding.WaitChannel(drain)
  entry.key = ++lastKey
  if (entry.probe) {
    entry.bare = entry.probe.length === 0
    entry.slot = freeSlots.pop() ?? probes.length
    probes[entry.slot] = entry
  }
  waits.set(entry.key, entry)
  keepAlive ??= setInterval(() => {}, 2 ** 30)
  try {
    return launch(channel, entry.key, entry.slot)
  } catch (err) {
    forget(entry)
    throw err
  }
}

/**
 * Starts a wait on `spec` (JSON text) with the JavaScript function
 * `probe`, or with the spec's built-in probe when there is none.
 * `state.cancelled` set means the wait was cancelled: its probe is not
 * called any more. `onDone` gets `{result}` once; `onProgress` (optional)
 * gets each report.
 */
function startWait(spec, probe, state, onDone, onProgress, policy) {
  return begin({ probe, state, onDone, onProgress }, (ch, key, slot) =>
    binding.startWait(ch, key, spec, slot, Boolean(onProgress), policy),
  )
}

/**
 * Starts a profile call with the agent's `args` (JSON text); `tools`
 * (optional) answers the profile's host tool calls. `onDone` gets
 * `{output}` or `{error}` once.
 */
function startToolCall(profile, args, tools, state, onDone, onProgress, maxWaitCeilingMs) {
  return begin({ state, onDone, onProgress }, (ch, key) =>
    binding.startToolCall(ch, key, profile, args, tools ? toolDispatcher(tools) : undefined, Boolean(onProgress), maxWaitCeilingMs),
  )
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

module.exports = { startWait, startToolCall }
