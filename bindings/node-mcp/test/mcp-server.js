'use strict'
// An McpServer of the official TypeScript SDK over stdio, for mcp.test.js:
// its own zod tools around libwaitfor's profiles, registered with
// registerWaitTools. Files may be read under the root given as argv[2].
// Each wait call's end is logged on stderr.
const fs = require('node:fs')
const path = require('node:path')
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js')
const { StdioServerTransport } = require('@modelcontextprotocol/sdk/server/stdio.js')
const { z } = require('zod')
const { registerWaitTools } = require('@libwaitfor/mcp')

const root = fs.realpathSync(process.argv[2])
const server = new McpServer({ name: 'waitfor-mcp-test', version: '0.0.0' })
const text = (t) => ({ content: [{ type: 'text', text: t }] })

server.registerTool('read_status', { description: 'Reads a status file.', inputSchema: { name: z.string().regex(/^\w+$/) } }, ({ name }) =>
  text(fs.readFileSync(path.join(root, name), 'utf8')),
)
const waits = registerWaitTools(server, {
  profiles: ['ouro/wait', 'aura/wait_for', 'libtmux-mcp/wait_for_text'],
  grants: { fileRoots: [root] },
  tools: ['read_status'],
  toolsReadOnly: true,
})
// Registered after the wait tools: McpServer's own tools keep working.
server.registerTool('shout', { inputSchema: { word: z.string() } }, ({ word }) => text(word.toUpperCase()))

for (const [name, tool] of Object.entries(waits)) {
  const run = tool.handler
  tool.update({
    callback: async (extra) => {
      const result = await run(extra)
      process.stderr.write(`${name} ended${extra.signal.aborted ? ' after cancel' : ''}: ${result.content[0].text}\n`)
      return result
    },
  })
}

server.connect(new StdioServerTransport())
