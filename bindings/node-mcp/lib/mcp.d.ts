/**
 * `@libwaitfor/mcp`: libwaitfor's profiles as tools of an `McpServer` of the
 * official TypeScript SDK, listed with the exact JSON Schemas libwaitfor defines.
 *
 * @example
 * import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
 * import { registerWaitTools } from '@libwaitfor/mcp'
 * const server = new McpServer({ name: 'app', version: '1.0.0' })
 * registerWaitTools(server, { profiles: ['ouro/wait'], grants: { fileRoots: ['/var/log/app'] } })
 */
import type { Grants } from 'libwaitfor'

/**
 * What `registerWaitTools` needs of the SDK's `McpServer`: typed by shape,
 * so that the SDK's ESM and CommonJS builds both fit.
 */
export interface McpServerLike {
  registerTool(name: string, config: object, callback: (...args: any[]) => unknown): unknown
  readonly server: object
}

export interface WaitToolsOptions {
  /** Profile ids (`aura/wait_for`, `ouro/wait`, `libtmux-mcp/wait_for_text`, ...): one tool each. */
  profiles: string[]
  /** What built-in probes, tools, file readers and tmux sockets may reach: nothing by default. */
  grants?: Grants
  /** The server's own tools AURA's `wait_for` may probe (called as a client would); none by default, never a wait tool registered here. */
  tools?: string[]
  /** The host says the lent `tools` only read: `wait_for` is then annotated read-only, else destructive. */
  toolsReadOnly?: boolean
}

/**
 * Registers profiles as tools of `server`, with their exact schemas and
 * annotations, progress, cancellation and refusals as tool errors; returns
 * each tool's `RegisteredTool` (to `update`, `disable`, `remove`), by name.
 *
 * @example
 * const { wait_for } = registerWaitTools(server, { profiles: ['aura/wait_for'], tools: ['get_status'] })
 */
export declare function registerWaitTools<Server extends McpServerLike>(
  server: Server,
  options: WaitToolsOptions,
): Record<string, ReturnType<Server['registerTool']>>
