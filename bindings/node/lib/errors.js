'use strict'
/**
 * Typed errors: every refusal of the package is a `WaitforError` with a
 * stable `code`.
 * @module
 */

/**
 * A refusal, in the shape core gives errors in every language: `code`,
 * `field` and `rule` (`null` unless the error is about one field of the
 * input), `message`. The codes: a refused wait spec (`invalid_spec`), refused
 * arguments of a tool call or a function (`invalid_arguments`), an unknown
 * profile or tool name (`unknown_profile`), a profile that could not finish
 * (`runtime`), an invalid `wait/1` envelope (`invalid_wait`, with
 * `errors`), an event source problem (`bad_cursor`, `source_replaced`,
 * `io`), a bug (`internal`).
 *
 * @example
 * try { await wait({ until: { matches: '(' }, regex: true }, () => '') }
 * catch (e) { if (e instanceof WaitforError) console.log(e.code, e.field, e.rule) }
 */
class WaitforError extends Error {
  /**
   * @param {{code: string, message: string, field?: string, rule?: string, errors?: string[]}} detail
   * @param {{cause?: unknown}} [options]
   */
  constructor(detail, options) {
    super(detail.message, options)
    this.name = 'WaitforError'
    /** @type {string} */
    this.code = detail.code
    /** @type {string|null} */
    this.field = detail.field ?? null
    /** @type {string|null} */
    this.rule = detail.rule ?? null
    if (detail.errors !== undefined) this.errors = detail.errors
  }
}

/** The typed error a native refusal carries as JSON in its message. */
function fromNative(err) {
  if (err instanceof WaitforError) return err
  let detail
  try {
    detail = JSON.parse(err && err.message)
  } catch {
    detail = null
  }
  if (detail && typeof detail.code === 'string') {
    const error = new WaitforError(detail)
    // A refused tool call's notices, for `callTool` to deliver first.
    if (Array.isArray(detail.notices)) Object.defineProperty(error, 'notices', { value: detail.notices })
    return error
  }
  return new WaitforError({ code: 'invalid_arguments', message: String(err && err.message) }, { cause: err })
}

/** Runs `fn`, turning what it throws into a `WaitforError`. */
function native(fn) {
  try {
    return fn()
  } catch (err) {
    throw fromNative(err)
  }
}

/** JSON.stringify would write NaN and Infinity as null, which would read as "not given". */
function finiteOnly(key, value) {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError(`${key || 'the value'} is ${value}, which JSON cannot hold`)
  return value
}

/** A value as JSON text, or a typed error naming `field`. */
function toJson(field, value) {
  if (typeof value === 'string') return value
  let text
  try {
    text = JSON.stringify(value, finiteOnly)
  } catch (err) {
    throw new WaitforError({ code: 'invalid_arguments', message: `${field}: not JSON: ${err.message}`, field, rule: 'invalid_json' }, { cause: err })
  }
  if (text === undefined) {
    throw new WaitforError({ code: 'invalid_arguments', message: `${field}: must be a JSON object`, field, rule: 'wrong_type' })
  }
  return text
}

module.exports = { WaitforError, fromNative, native, toJson }
