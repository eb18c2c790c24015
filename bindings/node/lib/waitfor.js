'use strict'
/**
 * `libwaitfor`, the main entry point; its API is documented in waitfor.d.ts.
 * Every wait runs on the native engine's scheduler; JavaScript probes and
 * results pass through one bridge (`lib/channel.js`).
 * @module
 */

const binding = require('./native.js')
const { WaitforError, invalid, native, toJson, grantsJson, checkPolicy } = require('./errors.js')
const { startWait, startToolCall, control } = require('./channel.js')
const { onAbort } = require('./abort.js')

const [specSchema, resultSchema, UNKNOWN_TOOL] = binding.constants()
const SPEC_SCHEMA = Object.freeze(JSON.parse(specSchema))
const RESULT_SCHEMA = Object.freeze(JSON.parse(resultSchema))

/** The options each entry point takes; any other is refused (a limit given to the wrong one would silently not apply). */
const WAIT_OPTIONS = ['signal', 'onProgress', 'policy', 'grants']
const CALL_OPTIONS = ['signal', 'onProgress', 'onLog', 'tools', 'maxWaitCeilingMs', 'grants']

/** Whether `v` is an AbortSignal: `Object.create(AbortSignal.prototype)` passes `instanceof`, but its `aborted` throws. */
const isAbortSignal = (v) => {
  try {
    return v instanceof AbortSignal && typeof v.aborted === 'boolean'
  } catch {
    return false
  }
}

/** `options` checked for names among `known` and for what every entry point takes (`signal`, `onProgress`); `{}` when absent. */
function checkOptions(options, known) {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object') throw invalid('options', 'must be an object')
  const unknown = Object.keys(options).find((key) => !known.includes(key) && options[key] !== undefined)
  if (unknown !== undefined) throw invalid(`options.${unknown}`, `unknown; the options are ${known.join(', ')}`, 'unknown_field')
  const { signal, onProgress } = options
  if (signal !== undefined && !isAbortSignal(signal)) throw invalid('options.signal', 'must be an AbortSignal')
  if (onProgress !== undefined && typeof onProgress !== 'function') throw invalid('options.onProgress', 'must be a function')
  return options
}

class WaitHandle {
  /**
   * @internal `launch(handle)` starts the wait (see `lib/channel.js`,
   * which reads and sets the underscored fields); what it throws rejects
   * `result`, and so does a `signal` that cannot be listened to.
   */
  constructor(probe, onProgress, signal, launch) {
    Object.assign(this, { _key: 0, _native: null, _probe: probe, _bare: probe?.length === 0, _cancelled: false, _onProgress: onProgress })
    this.result = new Promise((resolve, reject) => Object.assign(this, { _resolve: resolve, _reject: reject }))
    // Listened to before the wait starts: a signal that cannot be (its
    // addEventListener throws) is refused with nothing running, not left
    // with a wait nobody can reach until its deadline.
    let forget = null
    try {
      if (signal) forget = onAbort(signal, () => this.cancel())
    } catch (err) {
      this._reject(invalid('options.signal', 'cannot be listened to', 'wrong_type', err))
      return
    }
    try {
      launch(this)
    } catch (err) {
      forget?.()
      this._reject(err)
      return
    }
    // Aborted already: `launch` started the wait cancelled (no call made).
    if (forget) this.result.then(forget, forget)
  }

  wake() {
    control(this, 'wake')
  }

  cancel() {
    this._cancelled = true
    control(this, 'cancel')
  }
}

function start(spec, probe, options) {
  const { signal, onProgress, policy, grants } = checkOptions(options, WAIT_OPTIONS)
  if (probe !== undefined && probe !== null && typeof probe !== 'function') throw invalid('probe', 'must be a function')
  const text = toJson('spec', spec)
  const granted = grantsJson(grants)
  const limits = checkPolicy(policy)
  return new WaitHandle(probe || undefined, onProgress, signal, (handle) => native(() => startWait(handle, text, limits, granted)))
}

// Async: what `start` throws rejects the Promise.
const wait = async (spec, probe, options) => start(spec, probe, options).result

const checkSpec = (spec) => native(() => binding.checkSpec(toJson('spec', spec)))

const profiles = () => binding.profileDefinitions()
const toolDefinitions = () => profiles().map((p) => p.tool)
const findProfile = (name) => native(() => binding.findProfile(String(name)))
const parsePaneId = (paneId) => native(() => binding.parsePaneId(String(paneId)))

function checkArguments(name, args, options = {}) {
  const text = toJson('arguments', args)
  const granted = grantsJson(options && options.grants)
  return native(() => binding.checkArguments(String(name), text, granted))
}

async function callTool(name, args, options) {
  const { signal, onProgress, onLog, tools, maxWaitCeilingMs, grants } = checkOptions(options, CALL_OPTIONS)
  for (const [field, value] of [['tools', tools], ['onLog', onLog]]) {
    if (value !== undefined && typeof value !== 'function') throw invalid(`options.${field}`, 'must be a function')
  }
  if (maxWaitCeilingMs !== undefined && typeof maxWaitCeilingMs !== 'number') throw invalid('options.maxWaitCeilingMs', 'must be a number')
  if (typeof name !== 'string') throw new WaitforError({ code: 'unknown_profile', message: 'name: must be a profile id or tool name' })
  const text = toJson('arguments', args)
  const granted = grantsJson(grants)
  const launch = (h) => startToolCall(Object.assign(h, { _onLog: onLog }), name, text, tools, maxWaitCeilingMs, granted)
  return new WaitHandle(undefined, onProgress, signal, launch).result
}

function setMaxToolCalls(cap) {
  if (!Number.isInteger(cap) || cap < 0) throw invalid('cap', 'must be a whole number of calls, 0 or more', Number.isInteger(cap) ? 'out_of_range' : 'wrong_type')
  return binding.maxToolCalls(cap)
}

const maxToolCalls = () => binding.maxToolCalls(null)
const simulate = (vector) => native(() => binding.simulate(toJson('vector', vector)))

function recordSendKeys(sent) {
  if (sent === null || typeof sent !== 'object') throw invalid('sent', 'must be an object')
  const { socketName, paneId, literal, enter } = sent
  const keys = typeof sent.keys === 'string' ? [sent.keys] : sent.keys
  // Its form (`%N`) is checked natively, as every door checks it.
  if (typeof paneId !== 'string') throw invalid('paneId', 'must be a string')
  // Empty, as undefined, is the default socket.
  if (socketName !== undefined && socketName !== null && typeof socketName !== 'string') {
    throw invalid('socketName', 'must be a string')
  }
  if (!Array.isArray(keys) || !keys.every((k) => typeof k === 'string')) throw invalid('keys', 'must be a string or an array of strings')
  for (const [field, v] of [['literal', literal], ['enter', enter]]) {
    if (v !== undefined && typeof v !== 'boolean') throw invalid(field, 'must be a boolean')
  }
  native(() => binding.recordSendKeys(socketName ?? undefined, paneId, keys, literal === true, enter === true, grantsJson(sent.grants)))
}

// A literal of names: Node's ESM loader reads the named exports from it.
module.exports = { wait, start, WaitHandle, checkSpec, callTool, toolDefinitions, profiles, simulate, recordSendKeys, findProfile,
  checkArguments, parsePaneId, setMaxToolCalls, maxToolCalls, SPEC_SCHEMA, RESULT_SCHEMA, UNKNOWN_TOOL, WaitforError }
