#!/usr/bin/env node
// An MCP server over stdio offering libwaitfor's waits (see README.md):
//   wait_for_event  typed event wait over a JSON Lines log (wait/1 envelope)
//   wait_for        AURA's generic wait; its probe calls this server's tools
//   wait_for_text   libtmux-mcp's wait for new pane output
//   send_keys       types into a pane and records the echo
//   run_command     runs argv, bounded
// A wait's notices go out as its profile's original tool sends them:
// notifications/progress (with total and message) when the request has a
// progressToken, notifications/message log warnings at the level the client
// set (logging/setLevel; all by default); notifications/cancelled aborts the
// call's AbortSignal, which cancels the wait. Each call's end is logged on
// stderr.

import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { WaitforError } from 'libwaitfor'
import { TOOLS, probeTool } from './tools.mjs'

const server = new Server({ name: 'waitfor-example', version: '0.1.0' }, { capabilities: { tools: {}, logging: {} } })

server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...TOOLS.values()].map((t) => t.tool) }))

/** Sends progress for this request, if the client asked for it. */
function progressSender(request, extra) {
  const token = request.params._meta?.progressToken
  if (token === undefined) return () => {}
  let last = 0
  return ({ progress, total, message }) => {
    // Progress must increase; a late report after a newer one is dropped.
    if (progress <= last || extra.signal.aborted) return
    last = progress
    const params = { progressToken: token, progress }
    if (total !== null && total !== undefined) params.total = total
    if (message !== null && message !== undefined) params.message = message
    extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {})
  }
}

/** Sends a log notice, at the level the client set (the SDK filters). */
function logSender(extra) {
  return ({ level, message }) => {
    server.sendLoggingMessage({ level, logger: 'waitfor', data: message }, extra.sessionId).catch(() => {})
  }
}

function log(line) {
  process.stderr.write(`${line}\n`)
}

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const { name, arguments: args = {} } = request.params
  const entry = TOOLS.get(name)
  if (!entry) return { isError: true, content: [{ type: 'text', text: `unknown tool \`${name}\`` }] }
  const ctx = {
    signal: extra.signal,
    progress: progressSender(request, extra),
    log: logSender(extra),
    tools: (tool, toolArgs, { budgetMs }) => probeTool(tool, toolArgs, AbortSignal.timeout(Math.max(1, Math.ceil(budgetMs)))),
  }
  try {
    const out = await entry.call(args, ctx)
    log(`${name} ended: ${extra.signal.aborted ? 'cancelled' : (out.outcome ?? out.state ?? out.reason ?? 'ok')}`)
    return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out }
  } catch (err) {
    log(`${name} failed${extra.signal.aborted ? ' after cancel' : ''}: ${err.message}`)
    if (err instanceof WaitforError) {
      return { isError: true, content: [{ type: 'text', text: `${err.code}: ${err.message}` }] }
    }
    throw err
  }
})

await server.connect(new StdioServerTransport())
