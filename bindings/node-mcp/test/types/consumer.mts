// A strict TypeScript (ESM) consumer of `@libwaitfor/mcp` beside the SDK's McpServer.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { registerWaitTools } from '@libwaitfor/mcp'

const server = new McpServer({ name: 'app', version: '1.0.0' })
const tools = registerWaitTools(server, { profiles: ['aura/wait_for'], grants: { commands: ['kubectl'] }, tools: ['get_status'] })
tools.wait_for.update({ annotations: { readOnlyHint: true } })
const enabled: boolean = tools.wait_for.enabled
console.log(enabled)
