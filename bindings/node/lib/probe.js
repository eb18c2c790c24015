'use strict'
/**
 * The JavaScript side of probe and tool calls: runs the user's function on
 * the JS thread, awaits a Promise, and hands the answer (or the error) to
 * the native `settleProbe`. The dispatchers never throw, so no JavaScript
 * exception can reach the threadsafe function.
 * @module
 */

const binding = require('../index.js')

const OBSERVATION_KEYS = new Set(['text', 'json', 'exitCode', 'gone'])

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

/** Hands one answer to the engine; a value it cannot read is a probe error. */
function settle(id, value) {
  try {
    if (value === undefined || value === null) {
      binding.settleProbe(id, null, '')
    } else if (typeof value === 'string') {
      binding.settleProbe(id, null, value)
    } else if (ArrayBuffer.isView(value)) {
      binding.settleProbe(id, null, bytesText(value))
    } else if (isObservation(value)) {
      const text = value.text === undefined ? undefined : ArrayBuffer.isView(value.text) ? bytesText(value.text) : String(value.text)
      const json = value.json === undefined ? undefined : JSON.parse(JSON.stringify(value.json))
      if (value.exitCode !== undefined && !Number.isInteger(value.exitCode)) {
        throw new TypeError(`exitCode: must be an integer, got ${value.exitCode}`)
      }
      binding.settleProbe(id, null, text ?? (json === undefined ? '' : undefined), json, value.exitCode, Boolean(value.gone))
    } else if (typeof value === 'object') {
      binding.settleProbe(id, null, undefined, JSON.parse(JSON.stringify(value)))
    } else {
      binding.settleProbe(id, null, String(value))
    }
  } catch (err) {
    fail(id, err)
  }
}

function fail(id, err) {
  try {
    binding.settleProbe(id, errorText(err))
  } catch {
    // settleProbe only throws on a broken environment; nothing is waiting then.
  }
}

/** Runs `fn(...args)` and settles call `id` with its value or error. */
function run(id, fn, args) {
  let value
  try {
    value = fn(...args)
  } catch (err) {
    fail(id, err)
    return
  }
  if (value !== null && typeof value === 'object' && typeof value.then === 'function') {
    Promise.resolve(value).then(
      (v) => settle(id, v),
      (err) => fail(id, err),
    )
  } else {
    settle(id, value)
  }
}

/**
 * The dispatcher of one wait's probe: called by the engine with
 * `(callId, sample, elapsedMs, budgetMs)`. `state.cancelled` set means the
 * wait was cancelled: the probe is not called any more.
 */
function probeDispatcher(probe, state) {
  return (id, sample, elapsedMs, budgetMs) => {
    if (state.cancelled) {
      fail(id, new Error('the wait was cancelled'))
      return
    }
    run(id, probe, [{ sample, elapsedMs, budgetMs }])
  }
}

/** The dispatcher of a host's tools: `(callId, name, args, budgetMs)`. */
function toolDispatcher(tools) {
  return (id, name, args, budgetMs) => run(id, tools, [name, args, { budgetMs }])
}

module.exports = { probeDispatcher, toolDispatcher, isObservation }
