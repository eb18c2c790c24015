'use strict'
/** The caller's values checked and converted at the edge: `WaitforError` (see waitfor.d.ts) and its helpers. */

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

// Core's cut of a field an error names (`shown_field` in core/src/error.rs),
// the same limits: the option keys checked here (an unknown grants, policy or
// options key) never reach Rust, and one of a megabyte must not come back whole.
const FIELD_CHARS = 200
const FIELD_STEP_CHARS = 64
const FIELD_DEEP_BYTES = 4096

/** `field` as an error names it: whole up to 200 characters (or a deep path of short steps), else cut. */
function shownField(field) {
  let chars = 0
  let cut = -1
  for (let i = 0; i < field.length; i += field.codePointAt(i) > 0xffff ? 2 : 1) {
    if (chars++ === FIELD_CHARS) {
      cut = i
      break
    }
  }
  if (cut < 0) return field
  const bytes = Buffer.byteLength(field)
  const deep = bytes <= FIELD_DEEP_BYTES && field.split(/[.[]/).every((step) => [...step].length <= FIELD_STEP_CHARS)
  return deep ? field : `${field.slice(0, cut)}... (cut; ${bytes} bytes in all)`
}

/** An `invalid_arguments` error about `field` (named cut, as core names one), caused by `cause` when given. */
function invalid(field, message, rule = 'wrong_type', cause) {
  const shown = shownField(field)
  return new WaitforError({ code: 'invalid_arguments', message: `${shown}: ${message}`, field: shown, rule }, cause === undefined ? undefined : { cause })
}

/** The typed error a native refusal carries as JSON in its message (see src/errors.rs). */
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

/** A value as JSON text (a string is taken as JSON text already), or a typed error naming `field`. */
function toJson(field, value) {
  if (typeof value === 'string') return value
  let text
  try {
    text = JSON.stringify(value, finiteOnly)
  } catch (err) {
    throw new WaitforError({ code: 'invalid_arguments', message: `${field}: not JSON: ${err.message}`, field, rule: 'invalid_json' }, { cause: err })
  }
  if (text === undefined) throw invalid(field, 'must be a JSON object')
  return text
}

/** The `grants` option (see `Grants` in waitfor.d.ts) as the JSON text the engine reads; undefined grants nothing. */
function grantsJson(grants) {
  if (grants === undefined || grants === null) return undefined
  if (typeof grants !== 'object' || Array.isArray(grants)) throw invalid('options.grants', 'must be an object')
  const { commands = 'none', fileRoots = [], tmuxSocketPaths = false, ...rest } = grants
  const unknown = Object.keys(rest)
  if (unknown.length > 0) {
    throw invalid(`options.grants.${unknown[0]}`, 'unknown; grants take commands, fileRoots and tmuxSocketPaths', 'unknown_field')
  }
  const names = (value) => Array.isArray(value) && value.every((item) => typeof item === 'string' && item !== '')
  if (commands !== 'none' && commands !== 'any' && !names(commands)) {
    throw invalid('options.grants.commands', "must be 'none', 'any' or an array of program names")
  }
  if (!names(fileRoots)) throw invalid('options.grants.fileRoots', 'must be an array of directory paths')
  if (typeof tmuxSocketPaths !== 'boolean') throw invalid('options.grants.tmuxSocketPaths', 'must be a boolean')
  return JSON.stringify({ commands, file_roots: fileRoots, tmux_socket_paths: tmuxSocketPaths })
}

/** The `policy` option (see `Policy` in waitfor.d.ts) checked: a limit the host misspelled must not silently not apply. */
function checkPolicy(policy) {
  if (policy === undefined || policy === null) return undefined
  if (typeof policy !== 'object' || Array.isArray(policy)) throw invalid('options.policy', 'must be an object')
  for (const [key, value] of Object.entries(policy)) {
    if (key !== 'maxWaitCeilingMs' && key !== 'outputCapBytes') {
      throw invalid(`options.policy.${key}`, 'unknown; policy takes maxWaitCeilingMs and outputCapBytes', 'unknown_field')
    }
    if (value !== undefined && typeof value !== 'number') throw invalid(`options.policy.${key}`, 'must be a number')
  }
  return policy
}

module.exports = { WaitforError, invalid, fromNative, native, toJson, grantsJson, checkPolicy }
