'use strict'
/**
 * `libwaitfor`: wait for a condition from Node, without blocking the event
 * loop and without holding a libuv pool thread. Each wait is a timer entry
 * on the native engine's scheduler; JavaScript probes are called on the
 * JavaScript thread, every due call in one turn, and results come back in
 * batches too, all through one weak threadsafe function (`lib/channel.js`);
 * a pending wait keeps the process alive like a timer.
 *
 * @example
 * const { wait } = require('libwaitfor')
 * const result = await wait(
 *   { until: { matches: 'ready' }, stop: ['FATAL'], interval_ms: 100, max_wait_ms: 5000 },
 *   async () => (await fetch('http://localhost:8080/health')).text(),
 * )
 * if (result.outcome === 'matched') console.log('up after', result.elapsed_ms, 'ms')
 * @module
 */

const binding = require('./native.js')
const { WaitforError, native, toJson } = require('./errors.js')
const { grantsJson } = require('./grants.js')
const { startWait, startToolCall, wakeWait, cancelWait } = require('./channel.js')
const { findProfile, checkArguments, parsePaneId } = require('./surface.js')

const [specSchema, resultSchema] = binding.schemas()

/** The JSON Schema of a spec. */
const SPEC_SCHEMA = Object.freeze(JSON.parse(specSchema))
/** The JSON Schema of a result. */
const RESULT_SCHEMA = Object.freeze(JSON.parse(resultSchema))
/**
 * What a `tools` function throws (as an Error's message) for a tool the
 * server does not have: `aura/wait_for` then fails as AURA does, "probe
 * tool 'NAME' is not exposed by any connected MCP server".
 */
const UNKNOWN_TOOL = binding.unknownTool()

function checkOptions(options) {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object') {
    throw new WaitforError({ code: 'invalid_arguments', message: 'options: must be an object', field: 'options', rule: 'wrong_type' })
  }
  const { signal, onProgress } = options
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new WaitforError({ code: 'invalid_arguments', message: 'options.signal: must be an AbortSignal', field: 'options.signal', rule: 'wrong_type' })
  }
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw new WaitforError({ code: 'invalid_arguments', message: 'options.onProgress: must be a function', field: 'options.onProgress', rule: 'wrong_type' })
  }
  return options
}

/**
 * A running wait: `result` settles once, `wake()` samples now, `cancel()`
 * ends it with outcome `cancelled`.
 *
 * @example
 * const handle = start({ until: { matches: 'done' }, interval_ms: 60000 }, probe)
 * watcher.on('change', () => handle.wake())  // push: no need to wait a minute
 * const result = await handle.result
 */
class WaitHandle {
  /**
   * @internal `launch(handle)` starts the wait (see `lib/channel.js`,
   * which reads and sets the underscored fields); what it throws rejects
   * `result`.
   */
  constructor(probe, onProgress, signal, launch) {
    this._key = 0
    this._slot = 0
    this._probe = probe
    this._bare = probe !== undefined && probe.length === 0
    this._cancelled = false
    this._onProgress = onProgress
    this._resolve = null
    this._reject = null
    /** @type {Promise<any>} */
    this.result = new Promise((resolve, reject) => {
      this._resolve = resolve
      this._reject = reject
    })
    try {
      launch(this)
    } catch (err) {
      this._reject(err)
      return
    }
    if (signal) {
      if (signal.aborted) this.cancel()
      else {
        const onAbort = () => this.cancel()
        signal.addEventListener('abort', onAbort, { once: true })
        const removeListener = () => signal.removeEventListener('abort', onAbort)
        this.result.then(removeListener, removeListener)
      }
    }
  }

  /** Takes a sample now instead of at the next poll (a push signal). */
  wake() {
    wakeWait(this)
  }

  /**
   * Ends the wait with outcome `cancelled`; a probe call in flight is
   * abandoned and the probe is not called again. Harmless after the end.
   */
  cancel() {
    this._cancelled = true
    cancelWait(this)
  }
}

function startNative(spec, probe, options) {
  const { signal, onProgress, policy, grants } = checkOptions(options)
  if (probe !== undefined && probe !== null && typeof probe !== 'function') {
    throw new WaitforError({ code: 'invalid_arguments', message: 'probe: must be a function', field: 'probe', rule: 'wrong_type' })
  }
  const text = toJson('spec', spec)
  const granted = grantsJson(grants)
  return new WaitHandle(probe || undefined, onProgress, signal, (handle) => native(() => startWait(handle, text, policy, granted)))
}

/**
 * Starts a wait and returns its handle at once.
 *
 * @param {object|string} spec the wait (see `SPEC_SCHEMA`): `until`,
 *   `stop`, `interval_ms`, `max_wait_ms`, ... and, with no `probe`
 *   argument, a built-in `probe` (`command` or `file`), which reaches only
 *   what `options.grants` allow: `{commands: 'any' | string[], fileRoots:
 *   string[], tmuxSocketPaths: boolean}`, nothing by default.
 * @param {Function} [probe] called on the JavaScript thread with
 *   `{sample, elapsedMs, budgetMs}`; returns (or resolves to) a string, a
 *   Buffer, an object (structured output, for `json` conditions) or
 *   `{text, json, exitCode, gone}`. A throw or rejection is a probe error.
 * @param {{signal?: AbortSignal, onProgress?: Function, policy?: {maxWaitCeilingMs?: number, outputCapBytes?: number},
 *   grants?: {commands?: 'none'|'any'|string[], fileRoots?: string[], tmuxSocketPaths?: boolean}}} [options]
 * @returns {WaitHandle}
 *
 * @example
 * const handle = start({ probe: { file: { path: 'build.log' } }, until: { matches: 'BUILD OK' } },
 *                      undefined, { grants: { fileRoots: [process.cwd()] } })
 * setTimeout(() => handle.cancel(), 1000)
 * console.log((await handle.result).outcome)
 */
function start(spec, probe, options) {
  return startNative(spec, probe, options)
}

/**
 * Runs a wait; the Promise resolves with the engine's result (the same
 * JSON as every other binding: `outcome`, `elapsed_ms`, `samples`,
 * `matched_index`, `tail`, `resume`, ...). Timeouts, stops and probe errors
 * are results, not rejections; a rejection is a `WaitforError` for bad
 * input. An `AbortSignal` that aborts (or already has) resolves the
 * Promise with outcome `cancelled` (the probe is not called after that).
 *
 * @param {object|string} spec
 * @param {Function} [probe]
 * @param {{signal?: AbortSignal, onProgress?: Function, policy?: {maxWaitCeilingMs?: number, outputCapBytes?: number},
 *   grants?: {commands?: 'none'|'any'|string[], fileRoots?: string[], tmuxSocketPaths?: boolean}}} [options]
 * @returns {Promise<any>}
 *
 * @example
 * const r = await wait({ until: { json: { pointer: '/status', equals: 'ok' } }, max_wait_ms: 30000 },
 *                      () => fetch(url).then((res) => res.json()))
 */
function wait(spec, probe, options) {
  try {
    return startNative(spec, probe, options).result
  } catch (err) {
    return Promise.reject(err)
  }
}

/**
 * Validates a spec without running it; throws a `WaitforError`
 * (`invalid_arguments`, with `field` and `rule`) when it is not valid.
 *
 * @example
 * checkSpec({ until: { matches: 'ok' }, interval_ms: 5 }) // throws: interval_ms, out_of_range
 */
function checkSpec(spec) {
  const text = toJson('spec', spec)
  native(() => binding.checkSpec(text))
}

/**
 * Every profile (a seed tool libwaitfor stands in for) with its MCP tool
 * object.
 *
 * @returns {{profile: string, tool: object}[]}
 * @example
 * profiles().map((p) => p.profile) // ['aura/wait_for', ...]
 */
function profiles() {
  return binding.profileDefinitions()
}

/**
 * The MCP tool definitions of every profile (`name`, `title`,
 * `description`, `inputSchema`, `outputSchema`, `annotations`), ready to
 * list from an MCP server.
 *
 * @example
 * server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: toolDefinitions() }))
 */
function toolDefinitions() {
  return profiles().map((p) => p.tool)
}

/**
 * Resolves a profile id (`aura/wait_for`) or a tool name that only one
 * profile has (`wait_for`).
 */
function profileId(name) {
  if (typeof name !== 'string') {
    throw new WaitforError({ code: 'unknown_profile', message: 'name: must be a profile id or tool name' })
  }
  const all = profiles()
  if (all.some((p) => p.profile === name)) return name
  const byTool = all.filter((p) => p.tool.name === name)
  if (byTool.length === 1) return byTool[0].profile
  if (byTool.length > 1) {
    throw new WaitforError({
      code: 'unknown_profile',
      message: `tool name \`${name}\` is offered by ${byTool.map((p) => p.profile).join(', ')}: name the profile`,
    })
  }
  return name
}

/**
 * Calls a profile's tool with the agent's arguments, as an MCP server
 * does: resolves with the profile's output (valid against the tool's
 * `outputSchema`); rejects with a `WaitforError` (`invalid_arguments`
 * with `field` and `rule`, `unknown_profile`, or `runtime`).
 *
 * @param {string} name a profile id (`aura/wait_for`) or a tool name
 *   unique among the profiles
 * @param {object|string} args the tool's arguments
 * @param {{signal?: AbortSignal, onProgress?: Function, onLog?: Function, maxWaitCeilingMs?: number,
 *   tools?: (name: string, args: object, ctx: {budgetMs: number}) => any,
 *   grants?: {commands?: 'none'|'any'|string[], fileRoots?: string[], tmuxSocketPaths?: boolean}}} [options]
 *   `onProgress({progress, total, message})` and `onLog({level, message})`
 *   hear the profile's notices as its original tool sends them (an MCP
 *   server forwards them as `notifications/progress` and
 *   `notifications/message`): `libtmux-mcp/wait_for_text` reports
 *   progress at every poll with the message "Waiting on pane %N: Xs
 *   elapsed, Ys left" and logs warnings (an invalid regex, before the
 *   refusal; a wait that ends without a match; a pane history near its
 *   limit); the other profiles report the seconds elapsed with the time
 *   limit as `total` and no message.
 *   `tools` lends the server's own tools to profiles that probe them
 *   (AURA's `wait_for`); without it the built-in `run_command` and
 *   `read_file` answer, as far as `grants` reach (nothing by default).
 *   `grants` also bounds the profiles' file readers and tmux sockets.
 * @returns {Promise<any>}
 *
 * @example
 * const out = await callTool('wait_for', {
 *   probe: { tool: 'get_status', args: { id: 7 } }, until: { matches: 'Running' }, max_wait_sec: 60,
 * }, { tools: (name, args) => myTools[name](args), signal: extra.signal })
 */
function callTool(name, args, options) {
  try {
    const { signal, onProgress, onLog, tools, maxWaitCeilingMs, grants } = checkOptions(options)
    for (const [field, value] of [['tools', tools], ['onLog', onLog]]) {
      if (value !== undefined && typeof value !== 'function') {
        throw new WaitforError({ code: 'invalid_arguments', message: `options.${field}: must be a function`, field: `options.${field}`, rule: 'wrong_type' })
      }
    }
    const profile = profileId(name)
    const text = toJson('arguments', args)
    const granted = grantsJson(grants)
    const handle = new WaitHandle(undefined, onProgress, signal, (h) => {
      h._onLog = onLog
      startToolCall(h, profile, text, tools, maxWaitCeilingMs, granted)
    })
    return handle.result
  } catch (err) {
    return Promise.reject(err)
  }
}

/**
 * Runs one shared test vector (`tests/vectors/*.json`) on virtual time
 * and returns the engine's answer: `{result, call_starts_ms, progress}`
 * plus `output` or `tool_error` for profile vectors.
 *
 * @example
 * simulate({ spec: { until: { matches: 'ok' } }, script: { steps: [{ text: 'ok' }] } }).result.outcome // 'matched'
 */
function simulate(vector) {
  const text = toJson('vector', vector)
  return native(() => binding.simulate(text))
}

function invalid(field, message, rule = 'wrong_type') {
  return new WaitforError({ code: 'invalid_arguments', message: `${field}: ${message}`, field, rule })
}

/**
 * Records, now, keys this process sent to a tmux pane with `send-keys`, so
 * that every pane wait of this process (`probe.tmux`, the `wait_for_text`
 * profiles) discounts their echo: the command line being typed, and the
 * recently submitted lines, are not matched as new output. Call it when
 * tmux accepted the keys (a `send_keys` tool does it right after
 * `tmux send-keys`). Records are per socket and pane and expire on their own.
 *
 * @param {{socketName?: string, paneId: string, keys: string|string[], literal?: boolean, enter?: boolean}} sent
 *   `keys` are the `send-keys` arguments: literal text with `literal`
 *   (`-l`), otherwise tmux key names (`C-c`, `Enter`, one character);
 *   `enter` means a final Enter was sent.
 *
 * @example
 * execFileSync('tmux', ['-L', sock, 'send-keys', '-t', '%1', '-l', 'make test'])
 * execFileSync('tmux', ['-L', sock, 'send-keys', '-t', '%1', 'Enter'])
 * recordSendKeys({ socketName: sock, paneId: '%1', keys: 'make test', literal: true, enter: true })
 * // a wait for 'make test' on %1 now ignores the typed line
 */
function recordSendKeys(sent) {
  if (sent === null || typeof sent !== 'object') throw invalid('sent', 'must be an object')
  const { socketName, paneId, literal, enter } = sent
  const keys = typeof sent.keys === 'string' ? [sent.keys] : sent.keys
  if (typeof paneId !== 'string' || !/^%\d+$/.test(paneId)) throw invalid('paneId', `must be a pane id like %1, got ${JSON.stringify(paneId)}`)
  if (socketName !== undefined && socketName !== null && (typeof socketName !== 'string' || socketName === '')) {
    throw invalid('socketName', 'must be a non-empty string')
  }
  if (!Array.isArray(keys) || !keys.every((k) => typeof k === 'string')) throw invalid('keys', 'must be a string or an array of strings')
  for (const [field, v] of [['literal', literal], ['enter', enter]]) {
    if (v !== undefined && typeof v !== 'boolean') throw invalid(field, 'must be a boolean')
  }
  binding.recordSendKeys({ socketName: socketName ?? undefined, paneId, keys, literal, enter })
}

module.exports = {
  wait,
  start,
  WaitHandle,
  checkSpec,
  callTool,
  toolDefinitions,
  profiles,
  simulate,
  recordSendKeys,
  findProfile,
  checkArguments,
  parsePaneId,
  SPEC_SCHEMA,
  RESULT_SCHEMA,
  UNKNOWN_TOOL,
  WaitforError,
}
