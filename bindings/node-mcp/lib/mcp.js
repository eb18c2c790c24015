'use strict'
/**
 * `@libwaitfor/mcp`: libwaitfor's profiles as tools of an `McpServer` of the
 * official TypeScript SDK 1.x, listed with their exact JSON Schemas; its API
 * is documented in mcp.d.ts.
 * @module
 */

// SDK 1.x's registerTool lists what zod's converter makes of zod schemas, not
// a JSON Schema as defined. So each tool is registered without schemas (it keeps
// McpServer's name checks, enable/disable/remove, list_changed and error
// handling) and McpServer's handlers are wrapped, through `_requestHandlers` (the
// Server has no API to read one): tools/list puts back the exact schemas,
// tools/call hands the handler its arguments (a schema-less one gets `extra` only).

const { callTool, profiles: definitions, WaitforError } = require('libwaitfor')

/** An `invalid_arguments` error about `field`, in the shape libwaitfor's own checks give. */
const invalid = (field, message) => new WaitforError({ code: 'invalid_arguments', field, rule: 'wrong_type', message: `${field}: ${message}` })

const isNames = (value) => Array.isArray(value) && value.every((v) => typeof v === 'string')

/** A wait's progress as notices, when the client gave the call a progress token. */
function progressSender(extra) {
  const progressToken = extra._meta?.progressToken
  if (progressToken === undefined) return undefined
  let last = -Infinity
  return ({ progress, total, message }) => {
    // Progress must increase; a report after a newer one is dropped.
    if (extra.signal.aborted || progress <= last) return
    last = progress
    const params = { progressToken, progress, ...(total !== null && { total }), ...(message !== null && { message }) }
    extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {})
  }
}

/**
 * The most bytes of JSON a wait's answer (its `tools/call` result) may take.
 * An answer carries its output twice (text and structuredContent), and
 * `wait_for_event` repeats its arguments in it (`for`, `target`, and the whole
 * call in `resume`): 4 MB of arguments made a 17 MB message, and the SDK's
 * stdio client reads at most 10 MiB, then closes the session with every call
 * in it. Past this bound the answer is a tool error that gives its size.
 */
const ANSWER_LIMIT = 4 << 20

/** `result`, or the tool error that stands for it when it is over ANSWER_LIMIT bytes of JSON. */
function bounded(result) {
  const size = Buffer.byteLength(JSON.stringify(result))
  if (size <= ANSWER_LIMIT) return result
  const text = `runtime: the answer was not sent: it is ${size} bytes of JSON, over the limit of ${ANSWER_LIMIT}; ask for less (shorter arguments, a narrower filter)`
  return { isError: true, content: [{ type: 'text', text }] }
}

/** A tool result's text; a tool error throws it (a probe error). */
function resultText(result) {
  const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n')
  if (result.isError) throw new Error(text)
  return text
}

/** AURA's `wait_for` calls the lent `tools` (read-only if the host says so), or else its built-in ones within `grants`. */
function waitForAnnotations(base, tools, toolsReadOnly, grants) {
  const commands = grants?.commands ?? 'none'
  const readOnly = tools.length > 0 ? toolsReadOnly : commands === 'none' || commands.length === 0
  return { ...base, readOnlyHint: readOnly, destructiveHint: !readOnly }
}

function registerWaitTools(server, { profiles, grants, tools = [], toolsReadOnly = false } = {}) {
  const table = server?.server?._requestHandlers
  if (!(table instanceof Map) || typeof server.registerTool !== 'function') {
    throw invalid('server', 'must be an McpServer of @modelcontextprotocol/sdk 1.x')
  }
  if (!isNames(profiles) || profiles.length === 0) throw invalid('options.profiles', 'must be a non-empty array of profile ids')
  if (!isNames(tools)) throw invalid('options.tools', 'must be an array of tool names')
  if (typeof toolsReadOnly !== 'boolean') throw invalid('options.toolsReadOnly', 'must be a boolean')
  const known = definitions()
  const chosen = profiles.map((id) => known.find((p) => p.profile === id) ?? id)
  const unknown = chosen.find((p) => typeof p === 'string')
  if (unknown !== undefined) {
    throw new WaitforError({ code: 'unknown_profile', message: `unknown profile \`${unknown}\`; profiles: ${known.map((p) => p.profile).join(', ')}` })
  }
  // A wait lent to wait_for would start a wait in each of its samples.
  const lentWait = tools.find((name) => chosen.some(({ tool }) => tool.name === name))
  if (lentWait !== undefined) throw invalid('options.tools', `\`${lentWait}\` is a wait tool: wait_for may not probe it`)
  const argsOf = new WeakMap() // a call's arguments, by its `extra`
  const schemas = new Map() // tool name -> its exact schemas
  const registered = {}
  for (const { profile: id, tool } of chosen) {
    const { name, title, description, inputSchema, outputSchema } = tool
    const annotations = id === 'aura/wait_for' ? waitForAnnotations(tool.annotations, tools, toolsReadOnly, grants) : tool.annotations
    registered[name] = server.registerTool(name, { title, description, annotations }, (extra) => run(id, argsOf.get(extra), extra))
    schemas.set(name, { inputSchema, outputSchema })
  }
  const [list, call] = [table.get('tools/list'), table.get('tools/call')]
  table.set('tools/list', async (request, extra) => {
    const result = await list(request, extra)
    return { ...result, tools: result.tools.map((t) => (schemas.has(t.name) ? { ...t, ...schemas.get(t.name) } : t)) }
  })
  table.set('tools/call', (request, extra) => {
    argsOf.set(extra, request.params?.arguments ?? {})
    return call(request, extra)
  })
  const callOwnTool = table.get('tools/call') // a lent call goes through it too

  /** This server's tools, as AURA's probe calls them within the call's budget. */
  const lend = (extra) => async (name, args, { budgetMs }) => {
    if (!tools.includes(name)) throw new Error(`no probe-able tool \`${name}\`; wait_for may probe: ${tools.join(', ')}`)
    const signal = AbortSignal.any([extra.signal, AbortSignal.timeout(Math.max(1, Math.ceil(budgetMs)))])
    const request = { method: 'tools/call', params: { name, arguments: args ?? {} } }
    return resultText(await callOwnTool(request, { ...extra, signal, _meta: undefined }))
  }

  async function run(id, args, extra) {
    // Log notices go as `notifications/message`: the SDK sends them when the server declared `logging`.
    const onLog = ({ level, message }) => server.server.sendLoggingMessage({ level, logger: 'waitfor', data: message }, extra.sessionId).catch(() => {})
    const options = { signal: extra.signal, grants, onProgress: progressSender(extra), onLog, tools: tools.length > 0 ? lend(extra) : undefined }
    try {
      const out = await callTool(id, args, options)
      return bounded({ content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out })
    } catch (err) {
      if (!(err instanceof WaitforError)) throw err
      return { isError: true, content: [{ type: 'text', text: `${err.code}: ${err.message}` }] }
    }
  }
  return registered
}

module.exports = { registerWaitTools }
