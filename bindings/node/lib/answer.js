'use strict'
/**
 * What a probe or tool returned (or threw), as the engine reads it (see
 * `observation` in src/bridge.rs): flag bits, one text, the JSON text of a structured
 * value, an exit code. A value that cannot be read is a probe error.
 * @module
 */

const OBSERVATION_KEYS = new Set(['text', 'json', 'exitCode', 'gone'])

// Flag bits, as src/bridge.rs reads them.
const ERROR = 1 // an error; the text is its message
const TEXT = 2 // the text is the observation's text
const JSON_VALUE = 4 // the JSON text is its structured output
const GONE = 16 // the observed thing is gone

/**
 * Whether `v` is an observation object: a plain object with at least one
 * key, all of them among `text`, `json`, `exitCode`, `gone`.
 */
function isObservation(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || ArrayBuffer.isView(v)) return false
  const keys = Object.keys(v)
  return keys.length > 0 && keys.every((k) => OBSERVATION_KEYS.has(k))
}

/**
 * UTF-16 units of a message encoded at most: one past the engine's bound on
 * an error message (`ProbeError::MAX_MESSAGE_BYTES`, 4,096 bytes; a unit
 * takes at least a byte), which the engine then cuts with its own mark.
 */
const MESSAGE_UNITS = 4097

/**
 * The message of anything thrown, cut to `MESSAGE_UNITS` (or `cap`, if
 * smaller) UTF-16 units and an ellipsis when longer: uncut, a 50 MB message
 * was encoded (3x its length reserved) before the engine cut it.
 */
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
  const most = Math.min(cap, MESSAGE_UNITS)
  return text.length > most ? `${text.slice(0, most)}…` : text
}

/**
 * `text`, or only its first `cap + 1` UTF-16 units when it is longer than
 * `cap`: each unit takes at least one byte of UTF-8, so both are over a cap
 * of `cap` bytes and the wait ends with the same over-the-cap error, but
 * encoding costs the cap, not the text (a prebuilt 100 MiB answer held the
 * event loop ~250 ms). The built-in probes too read at most `cap + 1` bytes.
 */
function capped(text, cap) {
  return text.length > cap ? text.slice(0, cap + 1) : text
}

/** Bytes as text, as far as the cap needs them (see `capped`): decoding never shrinks bytes (a bad sequence becomes U+FFFD, 3 bytes). */
function bytesText(v, cap) {
  return Buffer.from(v.buffer, v.byteOffset, Math.min(v.byteLength, cap + 1)).toString('utf8')
}

/** Thrown by `jsonText` once the JSON text is sure to be longer than the cap. */
const OVER_CAP = new Error('over the cap')

/**
 * The JSON text of `value`; `OVER_CAP` thrown once it is sure to be longer
 * than `cap`: a structured value is serialized only as far as the cap, as a
 * string is read (a 100 MB object held the event loop 800 ms and took
 * 225 MB). The count is a lower bound of the text's length (an object
 * member writes at least `"key":` and one character, a string its length, an
 * array two characters an element, counted before its elements are seen),
 * so a value within the cap is never refused, and the text written before a
 * refusal is a few times the cap at most (escapes, long numbers). A whole
 * text longer than the cap is refused too: the engine measures only an
 * observation's text, not its `json`.
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

/**
 * A probe's value as the engine reads it: `{flags, text, json, exitCode}`
 * (`json`: JSON text, or undefined), its text cut past the wait's output
 * cap of `cap` bytes (see `capped`). Throws for a value it cannot read.
 *
 * @example
 * answerOf('ready', cap)                       // {flags: TEXT, text: 'ready'}
 * answerOf({ status: 'up' }, cap)              // {flags: JSON_VALUE, text: '', json: '{"status":"up"}'}
 * answerOf({ text: 'done', exitCode: 3 }, cap) // {flags: TEXT, text: 'done', exitCode: 3, ...}
 */
function answerOf(value, cap) {
  try {
    return readAnswer(value, cap)
  } catch (err) {
    // A structured value over the cap is answered as a string over it is: cut one past it.
    if (err === OVER_CAP) return { flags: TEXT, text: ' '.repeat(cap + 1) }
    throw err
  }
}

function readAnswer(value, cap) {
  if (value === undefined || value === null) return { flags: TEXT, text: '' }
  if (typeof value === 'string') return { flags: TEXT, text: capped(value, cap) }
  if (ArrayBuffer.isView(value)) return { flags: TEXT, text: bytesText(value, cap) }
  if (isObservation(value)) {
    let flags = 0
    let text = ''
    let json
    if (value.text !== undefined) {
      flags |= TEXT
      text = ArrayBuffer.isView(value.text) ? bytesText(value.text, cap) : capped(String(value.text), cap)
    }
    if (value.json !== undefined) {
      flags |= JSON_VALUE
      json = jsonText('json', value.json, cap)
    } else if (value.text === undefined) {
      flags |= TEXT
    }
    if (value.exitCode !== undefined) {
      if (!Number.isInteger(value.exitCode) || value.exitCode < -(2 ** 31) || value.exitCode >= 2 ** 31) {
        throw new TypeError(`exitCode: must be a 32-bit integer, got ${String(value.exitCode)}`)
      }
    }
    if (value.gone) flags |= GONE
    return { flags, text, json, exitCode: value.exitCode }
  }
  if (typeof value === 'object') return { flags: JSON_VALUE, text: '', json: jsonText('value', value, cap) }
  return { flags: TEXT, text: capped(String(value), cap) }
}

/** Whether `value` is a Promise or another thenable (reading `then` may throw). */
function isThenable(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function'
}

module.exports = { ERROR, TEXT, answerOf, capped, errorText, isThenable }
