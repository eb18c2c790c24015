'use strict'
/** The caller's values checked and converted at the edge: `WaitforError` (see waitfor.d.ts) and its helpers. */

const binding = require('./native.js')

class WaitforError extends Error {
  /**
   * @param {{code: string, message: string, field?: string, rule?: string, errors?: string[]}} detail
   * @param {{cause?: unknown}} [options]
   */
  constructor(detail, options) {
    super(detail.message, options)
    this.name = 'WaitforError'
    this.code = detail.code
    this.field = detail.field ?? null
    this.rule = detail.rule ?? null
    if (detail.errors !== undefined) this.errors = detail.errors
  }
}

/** An `invalid_arguments` error about `field`, named (cut) and worded by core; caused by `cause` when given. */
function invalid(field, message, rule = 'wrong_type', cause) {
  return new WaitforError(binding.invalidArguments(field, rule, message), cause === undefined ? undefined : { cause })
}

/** The typed error a native refusal carries as JSON in its message (see src/errors.rs). */
function fromNative(err) {
  if (err instanceof WaitforError) return err
  let detail = null
  try {
    detail = JSON.parse(err?.message)
  } catch {}
  if (typeof detail?.code !== 'string') return new WaitforError({ code: 'invalid_arguments', message: String(err && err.message) }, { cause: err })
  const error = new WaitforError(detail)
  // A refused tool call's notices, for `callTool` to deliver first.
  if (Array.isArray(detail.notices)) Object.defineProperty(error, 'notices', { value: detail.notices })
  return error
}

/** Runs `fn`, turning what it throws into a `WaitforError`. */
function native(fn) {
  try {
    return fn()
  } catch (err) {
    throw fromNative(err)
  }
}

/** A value as JSON text (a string is JSON text already), or a typed error naming `field`. */
function toJson(field, value) {
  if (typeof value === 'string') return value
  let text
  try {
    // NaN and Infinity would be written as null, which reads as "not given".
    text = JSON.stringify(value, (key, v) => {
      if (typeof v !== 'number' || Number.isFinite(v)) return v
      throw new TypeError(`${key || 'the value'} is ${v}, which JSON cannot hold`)
    })
  } catch (err) {
    throw invalid(field, `not JSON: ${err.message}`, 'invalid_json', err)
  }
  if (text === undefined) throw invalid(field, 'must be a JSON object')
  return text
}

/** The `grants` option (see `Grants` in waitfor.d.ts) as JSON text, which core checks where it is used; undefined grants nothing. */
function grantsJson(grants) {
  if (grants === undefined || grants === null) return undefined
  if (typeof grants !== 'object') throw invalid('options.grants', 'must be an object')
  return toJson('options.grants', grants)
}

/** The `policy` option (see `Policy` in waitfor.d.ts), checked. */
function checkPolicy(policy) {
  if (policy === undefined || policy === null) return undefined
  if (typeof policy !== 'object' || Array.isArray(policy)) throw invalid('options.policy', 'must be an object')
  for (const [key, value] of Object.entries(policy)) {
    const field = `options.policy.${key}`
    if (key !== 'maxWaitCeilingMs' && key !== 'outputCapBytes') throw invalid(field, 'unknown; policy takes maxWaitCeilingMs and outputCapBytes', 'unknown_field')
    if (value !== undefined && typeof value !== 'number') throw invalid(field, 'must be a number')
  }
  return policy
}

module.exports = { WaitforError, invalid, fromNative, native, toJson, grantsJson, checkPolicy }
