'use strict'
/**
 * The JavaScript side of probe and tool calls.
 *
 * Probes run in batches: the engine queues every due probe call of this
 * environment on one native `ProbeChannel` and wakes `drain` once; `drain`
 * takes the whole batch, calls each wait's probe function (kept in
 * `probes` by key from the wait's start to its end) and hands all the
 * synchronous answers back in one native call. Answers of probes that
 * return a Promise are gathered as they settle and sent together from a
 * microtask. Tool calls (AURA's host tools) are answered one by one
 * through `settleToolCall`.
 *
 * Nothing here throws into a threadsafe function: a probe's throw,
 * rejection or unreadable value becomes that call's probe error.
 * @module
 */

const binding = require('../index.js')

const OBSERVATION_KEYS = new Set(['text', 'json', 'exitCode', 'gone'])

// Flag bits of an answer, as src/answer.rs reads them.
const ERROR = 1
const TEXT = 2
const JSON_VALUE = 4
const EXIT = 8
const GONE = 16

/** Numbers per call in a batch from `ProbeChannel.take()`. */
const CALL_FIELDS = 4

/**
 * Whether `v` is an observation object: a plain object with at least one
 * key, all of them among `text`, `json`, `exitCode`, `gone`.
 */
function isObservation(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || ArrayBuffer.isView(v)) return false
  const keys = Object.keys(v)
  return keys.length > 0 && keys.every((k) => OBSERVATION_KEYS.has(k))
}

function errorText(err) {
  if (err instanceof Error) return err.message || err.name
  try {
    return typeof err === 'string' ? err : JSON.stringify(err) ?? String(err)
  } catch {
    return String(err)
  }
}

function bytesText(v) {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8')
}

function jsonText(field, value) {
  const text = JSON.stringify(value)
  if (text === undefined) throw new TypeError(`${field}: not a JSON value`)
  return text
}

/**
 * A probe's value as the engine reads it: `{flags, text, json}` (json:
 * JSON text or undefined; exitCode when flagged). Throws for a value it
 * cannot read.
 */
function answerOf(value) {
  if (value === undefined || value === null) return { flags: TEXT, text: '' }
  if (typeof value === 'string') return { flags: TEXT, text: value }
  if (ArrayBuffer.isView(value)) return { flags: TEXT, text: bytesText(value) }
  if (isObservation(value)) {
    let flags = 0
    let text = ''
    let json
    if (value.text !== undefined) {
      flags |= TEXT
      text = ArrayBuffer.isView(value.text) ? bytesText(value.text) : String(value.text)
    }
    if (value.json !== undefined) {
      flags |= JSON_VALUE
      json = jsonText('json', value.json)
    } else if (value.text === undefined) {
      flags |= TEXT
    }
    if (value.exitCode !== undefined) {
      if (!Number.isInteger(value.exitCode) || value.exitCode < -(2 ** 31) || value.exitCode >= 2 ** 31) {
        throw new TypeError(`exitCode: must be a 32-bit integer, got ${String(value.exitCode)}`)
      }
      flags |= EXIT
    }
    if (value.gone) flags |= GONE
    return { flags, text, json, exitCode: value.exitCode }
  }
  if (typeof value === 'object') return { flags: JSON_VALUE, text: '', json: jsonText('value', value) }
  return { flags: TEXT, text: String(value) }
}

function isThenable(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function'
}

/** Answers gathered for one native `settle` call. */
class Answers {
  constructor() {
    this.keys = []
    this.flags = []
    this.texts = []
    this.exitCodes = []
    this.jsons = []
  }

  get size() {
    return this.keys.length
  }

  /** Adds the answer for the call of wait `key`: `value`, read now. */
  value(key, value) {
    let answer
    try {
      answer = answerOf(value)
    } catch (err) {
      this.error(key, err)
      return
    }
    this.keys.push(key)
    this.flags.push(answer.flags)
    this.texts.push(answer.text)
    this.exitCodes.push(answer.exitCode ?? 0)
    if (answer.json !== undefined) this.jsons.push(answer.json)
  }

  /** Adds a probe error for the call of wait `key`. */
  error(key, err) {
    this.keys.push(key)
    this.flags.push(ERROR)
    this.texts.push(errorText(err))
    this.exitCodes.push(0)
  }

  /** Hands every answer to the engine at once. */
  send(channel) {
    try {
      channel.settle(Float64Array.from(this.keys), Uint8Array.from(this.flags), this.texts, Int32Array.from(this.exitCodes), this.jsons)
    } catch {
      // settle only throws on a broken environment; nothing is waiting then.
    }
  }
}

/** Each running wait's probe, by key: `{probe, state}`. */
const probes = new Map()
/** Keys count up and are never reused (2^53 waits). */
let lastKey = 0
let channel = null
/** Answers of Promises that settled since the last send. */
let late = null

function flushLate() {
  const answers = late
  late = null
  answers.send(channel)
}

function lateAnswers() {
  if (late === null) {
    late = new Answers()
    queueMicrotask(flushLate)
  }
  return late
}

/** Runs every due probe call; called by the native channel. */
function drain() {
  let calls
  try {
    calls = channel.take()
  } catch {
    return
  }
  const answers = new Answers()
  for (let i = 0; i < calls.length; i += CALL_FIELDS) {
    const key = calls[i]
    const entry = probes.get(key)
    if (entry === undefined || entry.state.cancelled) {
      answers.error(key, new Error('the wait was cancelled'))
      continue
    }
    let value
    try {
      value = entry.probe({ sample: calls[i + 1], elapsedMs: calls[i + 2], budgetMs: calls[i + 3] })
      if (isThenable(value)) {
        Promise.resolve(value).then(
          (v) => lateAnswers().value(key, v),
          (err) => lateAnswers().error(key, err),
        )
        continue
      }
    } catch (err) {
      answers.error(key, err)
      continue
    }
    answers.value(key, value)
  }
  if (answers.size > 0) answers.send(channel)
}

/**
 * Starts a wait whose probe is `probe` (see `ProbeChannel.start`);
 * `state.cancelled` set means the wait was cancelled: its probe is not
 * called any more. `onDone` gets `{result}` once.
 */
function startProbeWait(spec, probe, state, onDone, onProgress, policy) {
  channel ??= new binding.ProbeChannel(drain)
  const key = ++lastKey
  probes.set(key, { probe, state })
  try {
    return channel.start(
      spec,
      key,
      (done) => {
        probes.delete(key)
        onDone(done)
      },
      onProgress,
      policy,
    )
  } catch (err) {
    probes.delete(key)
    throw err
  }
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

module.exports = { startProbeWait, toolDispatcher }
