'use strict'
// registerWaitTools on the official TypeScript SDK's McpServer, driven by the
// SDK's Client over stdio (test/mcp-server.js), on real files and a real
// tmux server. The server gets the SDK's default (minimal) environment, as
// MCP clients start servers.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { Client } = require('@modelcontextprotocol/sdk/client/index.js')
const { StdioClientTransport, getDefaultEnvironment } = require('@modelcontextprotocol/sdk/client/stdio.js')
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js')
const { profiles } = require('libwaitfor')
const { registerWaitTools } = require('@libwaitfor/mcp')
const { tempDir, eventually } = require('../../node/test/helpers.js')
const { TmuxServer } = require('../../node/test/tmux.js')

const dir = tempDir('waitfor-mcp-')
/** A test that waits for the server fails instead of hanging. */
const bounded = { timeout: 60_000 }
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [path.join(__dirname, 'mcp-server.js'), dir],
  stderr: 'pipe',
  // TMUX_TMPDIR, when set, is where the test's tmux server has its socket.
  env: { ...getDefaultEnvironment(), ...(process.env.TMUX_TMPDIR ? { TMUX_TMPDIR: process.env.TMUX_TMPDIR } : {}) },
})
let serverLog = ''
transport.stderr.on('data', (chunk) => (serverLog += chunk))
const client = new Client({ name: 'waitfor-mcp-test', version: '0.0.0' })
/** Every message from the server as it came off the wire (parsed, before the SDK's schemas). */
const received = []

test.before(async () => {
  await client.connect(transport)
  const deliver = transport.onmessage
  transport.onmessage = (message, extra) => {
    received.push(message)
    deliver(message, extra)
  }
})
test.after(() => client.close())

/** Calls a tool with a progress token; `progressed` resolves at the first notification. */
function callWithProgress(name, args, options = {}) {
  const seen = []
  let first
  const progressed = new Promise((resolve) => (first = resolve))
  const onprogress = (p) => first(seen.push(p))
  const result = client.callTool({ name, arguments: args }, undefined, { timeout: 60_000, ...options, onprogress })
  return { result, progressed, seen }
}

/** A successful call's structured output. */
function output(res) {
  assert.ok(!res.isError, JSON.stringify(res.content))
  assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent)
  return res.structuredContent
}

test('tools/list gives each profile its exact schemas and annotations, beside the server\'s own tools', async () => {
  const { tools } = await client.listTools()
  assert.deepEqual(tools.map((t) => t.name).sort(), ['read_status', 'shout', 'wait_for', 'wait_for_event', 'wait_for_text'])
  const listed = received.findLast((m) => m.result?.tools).result.tools
  for (const id of ['ouro/wait', 'aura/wait_for', 'libtmux-mcp/wait_for_text']) {
    const defined = profiles().find((p) => p.profile === id).tool
    const tool = listed.find((t) => t.name === defined.name)
    for (const field of ['title', 'description', 'inputSchema', 'outputSchema']) {
      assert.equal(JSON.stringify(tool[field]), JSON.stringify(defined[field]), `${id} ${field}`)
    }
    // wait_for probes read_status, which the server says only reads.
    const annotations = id === 'aura/wait_for' ? { ...defined.annotations, readOnlyHint: true, destructiveHint: false } : defined.annotations
    assert.equal(JSON.stringify(tool.annotations), JSON.stringify(annotations), `${id} annotations`)
  }
  assert.deepEqual(listed.find((t) => t.name === 'shout').inputSchema.required, ['word'])
})

test('ouro/wait: an event appended to a log inside the granted root satisfies the call, with progress', bounded, async () => {
  const log = path.join(dir, 'events.jsonl')
  const line = (type) => `${JSON.stringify({ type, at: new Date().toISOString(), by: 'test', target: null, summary: type })}\n`
  fs.writeFileSync(log, line('build.done'))
  const { result, progressed, seen } = callWithProgress('wait_for_event', { path: log, type: 'build.done', cursor: 'end', timeout: '30s' })
  await progressed
  fs.appendFileSync(log, line('build.started') + line('build.done'))
  const w = output(await result)
  assert.equal(w.state, 'satisfied')
  assert.deepEqual(w.events.map((e) => e.type), ['build.done'])
  // The Ouro original sends no progress of its own: seconds elapsed of the timeout, no message.
  assert.ok(seen[0].progress >= 0 && seen[0].total === 30 && seen[0].message === undefined, JSON.stringify(seen))
  assert.ok(seen.every((p, i) => i === 0 || p.progress > seen[i - 1].progress), JSON.stringify(seen))
})

test('aura/wait_for probes a lent tool of the same server (through its zod schema) until its text matches', bounded, async () => {
  fs.writeFileSync(path.join(dir, 'status'), 'starting\n')
  const { result, progressed } = callWithProgress('wait_for', {
    probe: { tool: 'read_status', args: { name: 'status' } },
    until: { matches: 'ready' },
    poll_sec: 1,
    max_wait_sec: 30,
  })
  await progressed
  fs.writeFileSync(path.join(dir, 'status'), 'ready\n')
  const out = output(await result)
  assert.equal(out.reason, 'matched')
  assert.match(out.last_observation, /ready/)
})

test('aura/wait_for reaches only the tools it was lent, and a lent tool\'s error reaches the agent', async () => {
  for (const [probe, message] of [
    [{ tool: 'shout', args: { word: 'x' } }, /no probe-able tool `shout`; wait_for may probe: read_status/],
    [{ tool: 'read_status', args: { name: '../etc' } }, /Input validation error/],
  ]) {
    const res = await client.callTool({ name: 'wait_for', arguments: { probe, until: { matches: 'x' }, poll_sec: 1, max_wait_sec: 5 } })
    assert.match(JSON.stringify(res), message)
  }
})

test('a refused call is a tool error whose text says why', async () => {
  for (const [name, args, message] of [
    ['wait_for_event', { path: '/etc/passwd', type: 'x', timeout: '1s' }, /^invalid_arguments: .*outside the directories the host lets waits read/],
    ['wait_for', { probe: { tool: 'read_status', args: {} }, until: {} }, /^invalid_arguments: .*until/],
    ['wait_for_text', { pane_id: '%0', patterns: ['x'], timeout: 'soon' }, /^invalid_arguments: .*timeout/],
  ]) {
    const res = await client.callTool({ name, arguments: args })
    assert.equal(res.isError, true, name)
    assert.match(res.content[0].text, message, name)
  }
  assert.equal((await client.callTool({ name: 'shout', arguments: { word: 'ok' } })).content[0].text, 'OK')
})

test('an answer over 4 MiB of JSON is a tool error giving its size, and the session goes on', bounded, async () => {
  // wait_for_event repeats its arguments (`for`, and in `resume` the whole
  // call): 4 MB of them made a 17 MB message, past the 10 MiB the SDK's
  // stdio client reads, which then closed the session and every call in it.
  const log = path.join(dir, 'big-answer.jsonl')
  fs.writeFileSync(log, '')
  const res = await client.callTool({ name: 'wait_for_event', arguments: { path: log, for: 'x'.repeat(4_000_000), cursor: 'end', timeout: 100 } }, undefined, bounded)
  assert.equal(res.isError, true)
  assert.match(res.content[0].text, /^runtime: the answer was not sent: it is \d+ bytes of JSON, over the limit of 4194304; /)
  assert.equal((await client.callTool({ name: 'shout', arguments: { word: 'ok' } })).content[0].text, 'OK')
})

test('cancelling the call (notifications/cancelled) ends the wait in the server', bounded, async () => {
  fs.writeFileSync(path.join(dir, 'busy'), 'busy\n')
  const controller = new AbortController()
  const { result, progressed } = callWithProgress(
    'wait_for',
    { probe: { tool: 'read_status', args: { name: 'busy' } }, until: { matches: 'never' }, poll_sec: 1, max_wait_sec: 120 },
    { signal: controller.signal },
  )
  await progressed
  const cancelled = Date.now()
  controller.abort()
  await assert.rejects(result, /abort/i)
  await eventually(() => serverLog.includes('wait_for ended after cancel'), { timeoutMs: 20_000 })
  // Far inside the 120 s the call asked for (generous for a loaded machine).
  assert.ok(Date.now() - cancelled < 20_000)
})

test('libtmux-mcp/wait_for_text matches new output of a real pane', bounded, async (t) => {
  const tmux = await TmuxServer.start()
  t.after(() => tmux.kill())
  const { result, progressed } = callWithProgress('wait_for_text', { pane_id: tmux.pane, socket_name: tmux.socketName, patterns: ['ZZ-42'], timeout: 20 })
  await progressed
  tmux.type('echo ZZ-$((6*7))')
  const out = output(await result)
  assert.equal(out.outcome, 'matched')
  assert.deepEqual(out.matched_lines, ['ZZ-42'])
})

test('registerWaitTools refuses what is not an McpServer, an unknown profile, and malformed options', () => {
  const server = () => new McpServer({ name: 'x', version: '0' })
  assert.throws(() => registerWaitTools({}, { profiles: ['ouro/wait'] }), /server: must be an McpServer/)
  const refused = server()
  assert.throws(() => registerWaitTools(refused, { profiles: ['ouro/wait', 'nope/wait'] }), /unknown profile `nope\/wait`; profiles: .*aura\/wait_for/)
  // The refused call registered nothing.
  assert.equal(typeof registerWaitTools(refused, { profiles: ['ouro/wait'] }).wait_for_event.disable, 'function')
  assert.throws(() => registerWaitTools(server(), {}), /options.profiles/)
  assert.throws(() => registerWaitTools(server(), { profiles: ['ouro/wait'], tools: 'read_status' }), /options.tools/)
  assert.throws(() => registerWaitTools(server(), { profiles: ['aura/wait_for'], toolsReadOnly: 'yes' }), /options.toolsReadOnly/)
  // A wait lent to wait_for would start a wait inside each of its samples,
  // one inside the other, until the process's cap on calls refuses all others.
  for (const lent of ['wait_for', 'wait_for_event']) {
    assert.throws(() => registerWaitTools(server(), { profiles: ['aura/wait_for', 'ouro/wait'], tools: [lent] }), new RegExp(`options.tools: \`${lent}\` is a wait tool`))
  }
})

test("wait_for's annotations follow what it can do: lent tools that may change things, or granted commands, make it destructive", () => {
  const annotations = (options) => registerWaitTools(new McpServer({ name: 'x', version: '0' }), { profiles: ['aura/wait_for'], ...options }).wait_for.annotations
  assert.equal(annotations({ tools: ['delete_marker'] }).destructiveHint, true)
  assert.equal(annotations({ tools: ['status'], toolsReadOnly: true }).readOnlyHint, true)
  assert.equal(annotations({}).readOnlyHint, true)
  assert.equal(annotations({ grants: { commands: ['make'] } }).destructiveHint, true)
})
