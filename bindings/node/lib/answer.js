'use strict'
/**
 * What a probe or tool returned (or threw), as the engine reads it: flag
 * bits, one text, the JSON text of a structured value and an exit code,
 * read the same way by `src/answer.rs`. Reading never throws out of here:
 * a value that cannot be read is the call's probe error.
 * @module
 */

const OBSERVATION_KEYS = new Set(['text', 'json', 'exitCode', 'gone'])

/** The answer is an error; its text is the message. */
const ERROR = 1
/** The text is the observation's text. */
const TEXT = 2
/** The JSON text is the observation's structured output. */
const JSON_VALUE = 4
/** The exit code is set. */
const EXIT = 8
/** The observed thing is gone. */
const GONE = 16

/**
 * Whether `v` is an observation object: a plain object with at least one
 * key, all of them among `text`, `json`, `exitCode`, `gone`.
 */
function isObservation(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || ArrayBuffer.isView(v)) return false
  const keys = Object.keys(v)
  return keys.length > 0 && keys.every((k) => OBSERVATION_KEYS.has(k))
}

/** The message of anything thrown. */
function errorText(err) {
  try {
    if (err instanceof Error) return String(err.message || err.name)
    return typeof err === 'string' ? err : JSON.stringify(err) ?? String(err)
  } catch {
    try {
      return String(err)
    } catch {
      return 'the probe threw a value that cannot be read'
    }
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
 * A probe's value as the engine reads it: `{flags, text, json, exitCode}`
 * (`json`: JSON text, or undefined). Throws for a value it cannot read.
 *
 * @example
 * answerOf('ready')                       // {flags: TEXT, text: 'ready'}
 * answerOf({ status: 'up' })              // {flags: JSON_VALUE, text: '', json: '{"status":"up"}'}
 * answerOf({ text: 'done', exitCode: 3 }) // {flags: TEXT | EXIT, text: 'done', exitCode: 3, ...}
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

/** Whether `value` is a Promise or another thenable (reading `then` may throw). */
function isThenable(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function'
}

/** Answers gathered for one native `settle` call; reused after each send. */
class Answers {
  constructor() {
    this.count = 0
    this.keys = new Float64Array(64)
    this.flags = new Uint8Array(64)
    this.exitCodes = new Int32Array(64)
    this.texts = []
    this.jsons = []
  }

  push(key, flags, text, exitCode) {
    if (this.count === this.keys.length) {
      for (const field of ['keys', 'flags', 'exitCodes']) {
        const bigger = new this[field].constructor(this.count * 2)
        bigger.set(this[field])
        this[field] = bigger
      }
    }
    this.keys[this.count] = key
    this.flags[this.count] = flags
    this.exitCodes[this.count] = exitCode
    this.texts.push(text)
    this.count++
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
    this.push(key, answer.flags, answer.text, answer.exitCode ?? 0)
    if (answer.json !== undefined) this.jsons.push(answer.json)
  }

  /** Adds a probe error for the call of wait `key`. */
  error(key, err) {
    this.push(key, ERROR, errorText(err), 0)
  }

  /** Hands every answer to `channel` at once, and starts over. */
  send(channel) {
    const { count, texts, jsons } = this
    if (count === 0) return
    this.count = 0
    this.texts = []
    this.jsons = []
    try {
      channel.settle(count, this.keys, this.flags, this.exitCodes, texts, jsons)
    } catch {
      // settle only throws on a broken environment; nothing is waiting then.
    }
  }
}

module.exports = { ERROR, answerOf, errorText, isThenable, Answers }
