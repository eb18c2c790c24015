// A strict TypeScript consumer of the package: compiled with `tsc --noEmit`.
import { wait, start, callTool, toolDefinitions, checkSpec, recordSendKeys, setMaxToolCalls, maxToolCalls, WaitforError, type WaitResult, type ToolDefinition, type Grants, type ToolProgress, type ToolLog } from 'libwaitfor'

async function main(): Promise<void> {
  const result: WaitResult = await wait({ until: { matches: 'ready' }, max_wait_ms: 1000 }, async ({ sample }) => `sample ${sample}`)
  const outcome: string = result.outcome
  const handle = start({ probe: { file: { path: 'x.log' } }, until: { matches: 'ok' } }, null, { signal: AbortSignal.timeout(1000) })
  handle.wake()
  recordSendKeys({ socketName: 'work', paneId: '%1', keys: ['make test'], literal: true, enter: true })
  const pane: boolean = (await wait({ probe: { tmux: { pane_id: '%1', socket_name: 'work' } }, until: { matches: 'ok' } })).alternate_screen
  // The originals' rules, asked for by name.
  checkSpec({ probe: { tmux: { session_name: 'build', pick: 'first', freshness: 'by_content' } }, until: { quiet_for_ms: 2000 }, sample_at_deadline: true, quiet_on_plan: true })
  // A pattern object names its flags as the engine reads them.
  checkSpec({ until: { matches: 'ready' }, stop: ['Error', { text: 'FAIL(ED)?', regex: true, case_sensitive: false }] })
  handle.cancel()
  await handle.result
  const tools: ToolDefinition[] = toolDefinitions()
  const before: number = setMaxToolCalls(4096)
  const cap: number = maxToolCalls()
  console.log(cap, setMaxToolCalls(before))
  const out: unknown = await callTool(tools[0].name, {}, { tools: async (name, args) => `${name} ${JSON.stringify(args)}` })
  const granted: Grants = { commands: ['kubectl'], fileRoots: ['/var/log/app'], tmuxSocketPaths: false }
  await wait({ probe: { command: { argv: ['kubectl', 'get', 'pods'] } }, until: { matches: 'Running' } }, null, { grants: granted })
  await callTool('aura/wait_for', {}, { grants: { commands: 'any' } })
  await callTool('aura/wait_for', {}, {
    onProgress: (p: ToolProgress) => console.log(p.progress, p.total ?? 0, p.message ?? ''),
    onLog: (l: ToolLog) => console.log(l.level, l.message),
  })
  try {
    checkSpec({ until: { matches: '(' } })
  } catch (e) {
    if (e instanceof WaitforError) console.log(e.code, e.field, e.rule)
  }
  console.log(outcome, pane, out)
}
void main()
