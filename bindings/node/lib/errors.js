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
    detail = JSON.parse(err && err.message)
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
      if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError(`${key || 'the value'} is ${v}, which JSON cannot hold`)
      return v
    })
  } catch (err) {
    throw new WaitforError({ code: 'invalid_arguments', message: `${field}: not JSON: ${err.message}`, field, rule: 'invalid_json' }, { cause: err })
  }
  if (text === undefined) throw invalid(field, 'must be a JSON object')
  return text
}

/** An object option's keys must be among `known`: a limit the host misspelled must not silently not apply. */
function checkKeys(field, value, known, takes) {
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(field, 'must be an object')
  const unknown = Object.keys(value).find((key) => !known.includes(key))
  if (unknown !== undefined) throw invalid(`${field}.${unknown}`, `unknown; ${takes}`, 'unknown_field')
}

/** The `grants` option (see `Grants` in waitfor.d.ts) as the JSON text the engine reads; undefined grants nothing. */
function grantsJson(grants) {
  if (grants === undefined || grants === null) return undefined
  checkKeys('options.grants', grants, ['commands', 'fileRoots', 'tmuxSocketPaths'], 'grants take commands, fileRoots and tmuxSocketPaths')
  const { commands = 'none', fileRoots = [], tmuxSocketPaths = false } = grants
  const names = (value) => Array.isArray(value) && value.every((item) => typeof item === 'string' && item !== '')
  if (commands !== 'none' && commands !== 'any' && !names(commands)) {
    throw invalid('options.grants.commands', "must be 'none', 'any' or an array of program names")
  }
  if (!names(fileRoots)) throw invalid('options.grants.fileRoots', 'must be an array of directory paths')
  if (typeof tmuxSocketPaths !== 'boolean') throw invalid('options.grants.tmuxSocketPaths', 'must be a boolean')
  return JSON.stringify({ commands, file_roots: fileRoots, tmux_socket_paths: tmuxSocketPaths })
}

/** The `policy` option (see `Policy` in waitfor.d.ts), checked. */
function checkPolicy(policy) {
  if (policy === undefined || policy === null) return undefined
  checkKeys('options.policy', policy, ['maxWaitCeilingMs', 'outputCapBytes'], 'policy takes maxWaitCeilingMs and outputCapBytes')
  for (const [key, value] of Object.entries(policy)) {
    if (value !== undefined && typeof value !== 'number') throw invalid(`options.policy.${key}`, 'must be a number')
  }
  return policy
}

module.exports = { WaitforError, invalid, fromNative, native, toJson, grantsJson, checkPolicy }
