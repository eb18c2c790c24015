// Drives the example server with the official SDK's Client over stdio, on
// real files, processes and a real tmux server; every result is checked
// against its tool's outputSchema with ajv.
import test from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js'
import Ajv from 'ajv'

const require = createRequire(import.meta.url)
const { tempDir, eventually } = require('../../../bindings/node/test/helpers.js')
const { TmuxServer } = require('../../../bindings/node/test/tmux.js')

const here = path.dirname(fileURLToPath(import.meta.url))
const dir = tempDir('waitfor-mcp-example-')

// A `tmux` first on the server's PATH that logs each call's arguments (one
// call a line) to `tmuxCalls` and runs the real tmux.
const tmuxCalls = path.join(dir, 'tmux-calls')
const realTmux = execFileSync('sh', ['-c', 'command -v tmux'], { encoding: 'utf8' }).trim()
const shimDir = path.join(dir, 'bin')
fs.mkdirSync(shimDir)
fs.writeFileSync(path.join(shimDir, 'tmux'), `#!/bin/sh\nprintf '%s\\n' "$*" >>'${tmuxCalls}'\nexec '${realTmux}' "$@"\n`, { mode: 0o755 })

// Granted what these tests use; `defaults` below is started with nothing.
const granted = ['--root', dir, ...['cat', 'echo', 'sh', 'sleep', 'yes'].flatMap((prog) => ['--allow-command', prog]), '--allow-send-keys']
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [path.join(here, '..', 'server.mjs'), ...granted],
  stderr: 'pipe',
  // As MCP clients start servers: the SDK's default (minimal) environment,
  // not this process's own. Only TMUX_TMPDIR is added, when set, because the
  // test's tmux server (`-L name`) has its socket there, and the logging
  // tmux goes first on PATH.
  env: {
    ...getDefaultEnvironment(),
    ...(process.env.TMUX_TMPDIR ? { TMUX_TMPDIR: process.env.TMUX_TMPDIR } : {}),
    PATH: `${shimDir}${path.delimiter}${getDefaultEnvironment().PATH}`,
  },
})
let serverLog = ''
transport.stderr.on('data', (chunk) => (serverLog += chunk))
const client = new Client({ name: 'waitfor-example-test', version: '0.0.0' })
const logs = []
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params))
await client.connect(transport)
test.after(() => client.close())

const ajv = new Ajv({ strict: false, allErrors: true })
const { tools } = await client.listTools()
const validators = new Map(tools.map((t) => [t.name, ajv.compile(t.outputSchema)]))

/** Calls a tool; asserts success and that the output fits its outputSchema. */
async function call(name, args, options = {}) {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000, ...options })
  assert.ok(!res.isError, `${name} failed: ${JSON.stringify(res.content)}`)
  const validate = validators.get(name)
  assert.ok(validate(res.structuredContent), `${name}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(res.structuredContent)}`)
  assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent)
  return res.structuredContent
}

/** A call whose first progress notification resolves `progressed`. */
function callWithProgress(name, args, options = {}) {
  const seen = []
  let first
  const progressed = new Promise((resolve) => (first = resolve))
  const result = call(name, args, {
    ...options,
    onprogress: (p) => {
      seen.push(p)
      first(p)
    },
  })
  return { result, progressed, seen }
}

function eventLine(type, summary) {
  return `${JSON.stringify({ type, at: new Date().toISOString(), by: 'test', target: null, summary })}\n`
}

test('lists the five tools, each with an input and an output schema', () => {
  assert.deepEqual(tools.map((t) => t.name).sort(), ['run_command', 'send_keys', 'wait_for', 'wait_for_event', 'wait_for_text'])
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', t.name)
    assert.equal(t.outputSchema.type, 'object', t.name)
  }
})

test('wait_for_event: an event appended after the call satisfies it, with progress', async () => {
  const log = path.join(dir, 'events.jsonl')
  fs.writeFileSync(log, eventLine('build.done', 'an old build, before the call'))
  const { result, progressed, seen } = callWithProgress('wait_for_event', { path: log, type: 'build.done', cursor: 'end', timeout: '30s', for: 'build 8' })
  await progressed
  fs.appendFileSync(log, eventLine('build.started', 'build 8 started') + eventLine('build.done', 'build 8 passed'))
  const w = await result
  assert.equal(w.ax, 'wait/1')
  assert.equal(w.state, 'satisfied')
  assert.deepEqual(w.events.map((e) => e.summary), ['build 8 passed'])
  // The Ouro original sends no progress of its own: seconds elapsed of the timeout, no message.
  assert.ok(seen.length >= 1 && seen[0].progress >= 0 && seen[0].total === 30 && seen[0].message === undefined, JSON.stringify(seen))
})

test('wait_for_event: nothing matching is a timed-out envelope that says how to resume', async () => {
  const log = path.join(dir, 'quiet.jsonl')
  fs.writeFileSync(log, '')
  const w = await call('wait_for_event', { path: log, type: 'never', timeout: '200ms' })
  assert.equal(w.state, 'timed-out')
  assert.match(w.resume.command, /^wait_for_event \{.*"cursor":/)
})

test('wait_for (AURA) probes a granted command until the output matches', async () => {
  const status = path.join(dir, 'status')
  fs.writeFileSync(status, 'starting\n')
  const { result, progressed } = callWithProgress('wait_for', {
    probe: { tool: 'run_command', args: { argv: ['cat', status] } },
    until: { matches: 'ready' },
    poll_sec: 1,
    max_wait_sec: 30,
  })
  await progressed
  fs.writeFileSync(status, 'ready\n')
  const out = await result
  assert.equal(out.reason, 'matched')
  assert.match(out.last_observation, /ready/)
})

test('a cancelled call (notifications/cancelled) cancels the wait in the server', async () => {
  const controller = new AbortController()
  const { result, progressed } = callWithProgress(
    'wait_for',
    { probe: { tool: 'run_command', args: { argv: ['echo', 'busy'] } }, until: { matches: 'never-printed' }, poll_sec: 1, max_wait_sec: 120 },
    { signal: controller.signal },
  )
  await progressed
  controller.abort()
  await assert.rejects(result, /abort/i)
  await eventually(() => serverLog.includes('wait_for ended after cancel: runtime: wait_for was cancelled'), { timeoutMs: 20_000 })
})

test('bad arguments are a tool error naming the field', async () => {
  const res = await client.callTool({ name: 'wait_for', arguments: { probe: { tool: 'run_command', args: {} }, until: {} } })
  assert.equal(res.isError, true)
  assert.match(res.content[0].text, /invalid_arguments: .*until/)
})

test('send_keys and wait_for_text on a real pane: the output matches, and the typed line is a new row as libtmux-mcp sees it', async (t) => {
  const tmux = await TmuxServer.start()
  t.after(() => tmux.kill())
  const pane = { pane_id: tmux.pane, socket_name: tmux.socketName }
  const echoOnly = callWithProgress('wait_for_text', { ...pane, patterns: ['echo ZZ-'], timeout: 1.5 })
  const output = callWithProgress('wait_for_text', { ...pane, patterns: ['ZZ-42'], timeout: 20 })
  await Promise.all([echoOnly.progressed, output.progressed])
  await call('send_keys', { ...pane, keys: 'sleep 0.3; echo ZZ-$((6*7))' })
  const out = await output.result
  assert.equal(out.outcome, 'matched')
  assert.deepEqual(out.matched_lines, ['ZZ-42'])
  // libtmux-mcp has no echo model: its drop-in sees the typed line as new.
  const echo = await echoOnly.result
  assert.equal(echo.outcome, 'matched')
  assert.match(echo.matched_lines[0], /echo ZZ-/)
  assert.ok(tmux.screen().includes('echo ZZ-'), 'the typed line is on screen')
  // Keys that start with '-' are typed, not read as send-keys flags (-X
  // is one: "not in a mode").
  const typed = callWithProgress('wait_for_text', { ...pane, patterns: ['-XQ'], timeout: 10 })
  await typed.progressed
  const dashed = await client.callTool({ name: 'send_keys', arguments: { ...pane, keys: '-XQ', enter: false } })
  assert.notEqual(dashed.isError, true, JSON.stringify(dashed.content))
  assert.equal((await typed.result).outcome, 'matched')
  // As wait_for_text, send_keys reaches tmux servers by name only.
  for (const socket of ['../../../tmp/other.sock', '/tmp/other.sock', '..']) {
    const refused = await client.callTool({ name: 'send_keys', arguments: { pane_id: tmux.pane, keys: 'id', socket_name: socket } })
    assert.equal(refused.isError, true, socket)
  }
  // Every tmux call, send_keys's and the waits', runs with -u (UTF-8
  // whatever the locale: the server was started without LANG).
  const made = fs.readFileSync(tmuxCalls, 'utf8').trimEnd().split('\n')
  const words = made.map((c) => c.split(' '))
  assert.ok(words.some((w) => w.includes('send-keys')) && words.some((w) => w.includes('capture-pane')), made.join('\n'))
  assert.deepEqual(made.filter((c) => c.split(' ')[0] !== '-u'), [])
})

test("wait_for_text sends libtmux-mcp's progress and warnings: notifications/progress with total and message, notifications/message", async (t) => {
  // libtmux-mcp: progress (elapsed, effective timeout, "Waiting on pane %N:
  // Xs elapsed, Ys left") at every poll; warnings "No match in pane %N before
  // Ts timeout" and "Invalid regex pattern: ...".
  const tmux = await TmuxServer.start()
  t.after(() => tmux.kill())
  const pane = { pane_id: tmux.pane, socket_name: tmux.socketName }
  logs.length = 0
  const { result, seen } = callWithProgress('wait_for_text', { ...pane, patterns: ['never'], timeout: 0.5 })
  assert.equal((await result).outcome, 'timeout')
  assert.ok(seen.length >= 1, 'no progress')
  for (const p of seen) {
    assert.equal(p.total, 0.5)
    assert.match(p.message, new RegExp(`^Waiting on pane ${tmux.pane}: \\d+\\.\\ds elapsed, \\d+\\.\\ds left$`))
  }
  const bad = await client.callTool({ name: 'wait_for_text', arguments: { ...pane, patterns: ['('], regex: true } })
  assert.equal(bad.isError, true)
  await eventually(() => logs.length >= 2)
  assert.deepEqual(logs[0], { level: 'warning', logger: 'waitfor', data: `No match in pane ${tmux.pane} before 0.5s timeout` })
  assert.equal(logs[1].level, 'warning')
  assert.match(logs[1].data, /^Invalid regex pattern: /)
})

test('with its defaults an agent runs no command and reads no file', async () => {
  const defaults = new Client({ name: 'waitfor-example-defaults', version: '0.0.0' })
  await defaults.connect(new StdioClientTransport({ command: process.execPath, args: [path.join(here, '..', 'server.mjs')], stderr: 'pipe', env: getDefaultEnvironment() }))
  try {
    const { tools: offered } = await defaults.listTools()
    assert.deepEqual(offered.map((t) => t.name).sort(), ['wait_for', 'wait_for_event', 'wait_for_text'])
    for (const t of offered) {
      const { readOnlyHint, destructiveHint, openWorldHint } = t.annotations
      assert.deepEqual([readOnlyHint, destructiveHint, openWorldHint], [true, false, false], t.name)
    }
    const refusals = [
      // wait_for's built-in tools are refused before the wait starts.
      ['wait_for', { probe: { tool: 'run_command', args: { argv: ['sh', '-c', 'id'] } }, until: { matches: 'uid' }, max_wait_sec: 5 }, /^invalid_arguments: .*the host grants no commands/],
      ['wait_for', { probe: { tool: 'read_file', args: { path: '/etc/shadow' } }, until: { matches: 'root' }, max_wait_sec: 5 }, /^invalid_arguments: .*the host grants no file access/],
      ['wait_for_event', { path: '/etc/shadow', type: 'x', timeout: '1s' }, /not_granted|grants no file access/],
      ['run_command', { argv: ['sh', '-c', 'id'] }, /Tool run_command not found/],
      ['send_keys', { pane_id: '%0', keys: 'id' }, /Tool send_keys not found/],
    ]
    for (const [name, args, message] of refusals) {
      const res = await defaults.callTool({ name, arguments: args }, undefined, { timeout: 30_000 })
      assert.equal(res.isError, true, name)
      assert.match(res.content[0].text, message, name)
    }
  } finally {
    await defaults.close()
  }
})

test('a wait over the server\'s cap is a tool error at once, and the running one goes on', async () => {
  const capDir = tempDir('waitfor-mcp-cap-')
  const flag = path.join(capDir, 'state')
  fs.writeFileSync(flag, 'starting\n')
  const capped = new Client({ name: 'waitfor-example-capped', version: '0.0.0' })
  const args = [path.join(here, '..', 'server.mjs'), '--root', capDir, '--max-tool-calls', '1']
  await capped.connect(new StdioClientTransport({ command: process.execPath, args, stderr: 'pipe', env: getDefaultEnvironment() }))
  try {
    const wait = { probe: { tool: 'read_file', args: { path: flag } }, until: { matches: 'Running' }, poll_sec: 1, max_wait_sec: 60 }
    const calls = [0, 1].map(() => capped.callTool({ name: 'wait_for', arguments: wait }, undefined, { timeout: 60_000 }))
    // The call over the cap is answered at once; the other waits.
    const refused = await Promise.race(calls)
    assert.equal(refused.isError, true)
    assert.match(refused.content[0].text, /^too_many_calls: .*at most 1\b/)
    fs.writeFileSync(flag, 'Running\n')
    const ended = await Promise.all(calls)
    const matched = ended.filter((r) => r !== refused)
    assert.equal(matched.length, 1)
    assert.ok(!matched[0].isError, JSON.stringify(matched[0].content))
    assert.equal(matched[0].structuredContent.reason, 'matched')
    // Its place came back.
    const again = await capped.callTool({ name: 'wait_for', arguments: wait }, undefined, { timeout: 60_000 })
    assert.ok(!again.isError, JSON.stringify(again.content))
  } finally {
    await capped.close()
  }
})

test('a granted server refuses what it did not grant', async () => {
  for (const [name, args, message] of [
    ['run_command', { argv: ['id'] }, /may not run `id`; allowed programs: cat, echo, sh, sleep, yes/],
    ['wait_for_event', { path: '/etc/shadow', type: 'x', timeout: '1s' }, /outside the directories the host lets waits read/],
    ['wait_for_event', { path: dir, type: 'x', timeout: '1s' }, /not a regular file/],
  ]) {
    const res = await client.callTool({ name, arguments: args })
    assert.equal(res.isError, true, name)
    assert.match(res.content[0].text, message, name)
  }
})

/** Calls run_command: its result (checked against the outputSchema unless it is an error) and how long it took. */
async function runCommand(args, options = {}) {
  const began = Date.now()
  const res = await client.callTool({ name: 'run_command', arguments: args }, undefined, { timeout: 60_000, ...options })
  const validate = validators.get('run_command')
  assert.ok(res.isError || validate(res.structuredContent), `run_command: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(res.structuredContent)}`)
  return { res, ms: Date.now() - began }
}

/** Whether process `pid` runs (one exited but not yet reaped, a zombie, does not). */
function running(pid) {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat[stat.lastIndexOf(')') + 2] !== 'Z'
  } catch {
    return process.platform !== 'linux'
  }
}

/** The pid `sh` wrote to `file` ($!), killed when the test ends if it still runs. */
function backgroundPid(t, file) {
  const pid = Number(fs.readFileSync(file, 'utf8'))
  assert.ok(pid > 0, `no pid in ${file}: did sh start in time?`)
  t.after(() => running(pid) && process.kill(pid, 'SIGKILL'))
  return pid
}

test('run_command answers a program that exits by itself, non-zero too, with its code and output', async () => {
  const { res } = await runCommand({ argv: ['sh', '-c', 'echo out; echo err >&2; exit 3'] })
  assert.ok(!res.isError, JSON.stringify(res.content))
  assert.deepEqual(res.structuredContent, { exit_code: 3, stdout: 'out\n', stderr: 'err\n' })
  assert.equal(res.content[0].text, 'out\nerr\n')
})

test('run_command past its output cap fails with the reason', async () => {
  const { res } = await runCommand({ argv: ['yes'] })
  assert.equal(res.isError, true, 'yes was answered as if it had exited')
  assert.equal(res.content[0].text, '`yes` wrote more than 1048576 bytes of output: killed')
})

// The most JSON one tool answer may take (the server's ANSWER_LIMIT).
const ANSWER_LIMIT = 4 << 20

/**
 * Runs `scenario(session)` on a server of its own, granted `sh` and `dir`,
 * whose session is watched: it must still be open at the end. An answer
 * past the SDK client's 10 MiB read buffer closes it (and so fails the
 * calls after it) without touching the other tests' session.
 */
async function ownSession(scenario) {
  const session = new Client({ name: 'waitfor-example-answer-size', version: '0.0.0' })
  const args = [path.join(here, '..', 'server.mjs'), '--root', dir, '--allow-command', 'sh']
  const own = new StdioClientTransport({ command: process.execPath, args, stderr: 'pipe', env: getDefaultEnvironment() })
  const errors = []
  session.onerror = (error) => errors.push(error.message)
  await session.connect(own)
  try {
    await scenario(session)
    assert.deepEqual(errors, [])
  } finally {
    await session.close()
  }
}

test('run_command cuts output whose answer would pass 4 MiB of JSON, says so, and the session goes on', async () => {
  // 1 MB of NULs is within the 1 MiB cap, but a NUL is 6 bytes of JSON in
  // each of the answer's two copies: 12 MB, past the client's buffer.
  await ownSession(async (session) => {
    const res = await session.callTool({ name: 'run_command', arguments: { argv: ['sh', '-c', 'head -c 1000000 /dev/zero'] } }, undefined, { timeout: 60_000 })
    assert.ok(!res.isError, JSON.stringify(res.content).slice(0, 500))
    const out = res.structuredContent
    assert.ok(validators.get('run_command')(out), JSON.stringify(out).slice(0, 500))
    const kept = out.stdout.length
    assert.ok(kept > 0 && kept < 1_000_000 && out.stdout === '\0'.repeat(kept), `kept ${kept}`)
    assert.equal(out.stderr, '')
    assert.equal(out.exit_code, 0)
    assert.equal(out.truncated, `stdout and stderr were cut to their first ${kept} and 0 characters: the whole answer would be over ${ANSWER_LIMIT} bytes of JSON`)
    assert.equal(res.content[0].text, `${out.stdout}\n[${out.truncated}]`)
    assert.ok(Buffer.byteLength(JSON.stringify(res)) <= ANSWER_LIMIT)
    // The session still works.
    const again = await session.callTool({ name: 'run_command', arguments: { argv: ['sh', '-c', 'echo alive'] } }, undefined, { timeout: 30_000 })
    assert.deepEqual(again.structuredContent, { exit_code: 0, stdout: 'alive\n', stderr: '' })
  })
})

test('a cut answer counts characters, not UTF-16 units: an emoji is one', async () => {
  // 100,000 emoji (400 kB) on stdout and 600 kB of NULs on stderr: within
  // the 1 MiB cap, but the NULs alone make over 4 MiB of JSON.
  await ownSession(async (session) => {
    const script = "yes '\u{1F600}' | head -n 100000 | tr -d '\\n'; head -c 600000 /dev/zero >&2"
    const res = await session.callTool({ name: 'run_command', arguments: { argv: ['sh', '-c', script] } }, undefined, { timeout: 60_000 })
    assert.ok(!res.isError, JSON.stringify(res.content).slice(0, 500))
    const out = res.structuredContent
    const emoji = [...out.stdout]
    assert.ok(emoji.length > 0 && emoji.every((c) => c === '\u{1F600}'), 'whole emoji only')
    assert.ok(out.stderr.length > 0 && out.stderr.length < 600_000)
    assert.equal(out.truncated, `stdout and stderr were cut to their first ${emoji.length} and ${out.stderr.length} characters: the whole answer would be over ${ANSWER_LIMIT} bytes of JSON`)
  })
})

test('a log of large events comes back within the answer bound, a part a wait, and resumes', async () => {
  // 1,000 events of 1,300 control characters (8 MB of log) would be one 17 MB
  // answer; a wait takes at most 512 KiB of the log.
  const log = path.join(dir, 'control-events.jsonl')
  fs.writeFileSync(log, Array.from({ length: 1000 }, (_, n) => eventLine('t', `${n} ${'\x01'.repeat(1300)}`)).join(''))
  await ownSession(async (session) => {
    const wait = (args) => session.callTool({ name: 'wait_for_event', arguments: { path: log, timeout: '30s', ...args } }, undefined, { timeout: 60_000 })
    const numbers = (res) => {
      assert.ok(!res.isError, JSON.stringify(res.content).slice(0, 300))
      assert.equal(res.structuredContent.state, 'satisfied')
      assert.ok(Buffer.byteLength(JSON.stringify(res)) < 2 << 20)
      return res.structuredContent.events.map((e) => Number(e.summary.split(' ')[0]))
    }
    const first = await wait({})
    const kept = numbers(first)
    assert.ok(kept.length > 0 && kept.length < 1000, `${kept.length} events`)
    assert.deepEqual(kept, kept.map((_, i) => i))
    const then = numbers(await wait({ cursor: first.structuredContent.cursor }))
    assert.equal(then[0], kept.length)
  })
})

test('run_command answers when the program exits, though a process that left its group holds the output', async (t) => {
  const file = path.join(dir, 'escapee-after-exit')
  // The escapee writes its pid once in its own session; the program waits
  // for that, so that it has left the group before the program exits.
  const escape = `setsid sh -c 'echo $$ > "${file}.new" && mv "${file}.new" "${file}"; exec sleep 30' &`
  const { res } = await runCommand({ argv: ['sh', '-c', `${escape} while [ ! -e '${file}' ]; do sleep 0.01; done; echo done`], timeout_ms: 5000 })
  backgroundPid(t, file)
  assert.ok(!res.isError, JSON.stringify(res.content))
  assert.deepEqual(res.structuredContent, { exit_code: 0, stdout: 'done\n', stderr: '' })
})

test('run_command past its timeout fails with the reason, promptly', async () => {
  const { res, ms } = await runCommand({ argv: ['sleep', '30'], timeout_ms: 200 })
  assert.equal(res.isError, true, 'sleep 30 was answered as if it had exited')
  assert.equal(res.content[0].text, '`sleep` ran longer than 200 ms: killed')
  // Not the 30 s it would sleep (generous for a loaded machine).
  assert.ok(ms < 10_000, `took ${ms} ms`)
})

test('run_command kills what the program left in the background, and nothing holding its output holds the call', async (t) => {
  for (const [i, [script, escapes]] of [
    // Lets go of the output: killed with the group, not left running.
    ['sleep 30 >/dev/null 2>&1 &', false],
    // Holds the output: killed with the group at the timeout, not waited for.
    ['sleep 30 &', false],
    // Left the group (its own session) holding the output: not killed, but the call still ends at its timeout.
    ['setsid sleep 30 &', true],
  ].entries()) {
    const file = path.join(dir, `background-${i}`)
    const { res, ms } = await runCommand({ argv: ['sh', '-c', `${script} echo $! > '${file}'; wait`], timeout_ms: 300 })
    const pid = backgroundPid(t, file)
    assert.ok(ms < 10_000, `${script}: took ${ms} ms`)
    if (!escapes) await eventually(() => !running(pid), { timeoutMs: 5_000 }).catch(() => assert.fail(`${script}: pid ${pid} still runs`))
    assert.equal(res.isError, true, `${script}: answered ${JSON.stringify(res.structuredContent)}`)
    assert.equal(res.content[0].text, '`sh` ran longer than 300 ms: killed', script)
  }
})

test('a cancelled run_command kills what the program left in the background', async (t) => {
  const file = path.join(dir, 'background-cancelled')
  const controller = new AbortController()
  const result = runCommand({ argv: ['sh', '-c', `sleep 30 >/dev/null 2>&1 & echo $! > '${file}'; wait`] }, { signal: controller.signal })
  await eventually(() => fs.existsSync(file) && fs.readFileSync(file, 'utf8').endsWith('\n'))
  const pid = backgroundPid(t, file)
  controller.abort()
  await assert.rejects(result, /abort/i)
  await eventually(() => !running(pid), { timeoutMs: 5_000 }).catch(() => assert.fail(`pid ${pid} still runs`))
})

test('wait_for_event on a FIFO or a device is a tool error within seconds, and the server answers ping meanwhile', async () => {
  const fifo = path.join(dir, 'events.fifo')
  execFileSync('mkfifo', [fifo])
  // A link inside the root to a device resolves outside it.
  const zero = path.join(dir, 'zero.jsonl')
  fs.symlinkSync('/dev/zero', zero)
  for (const [args, message] of [
    [{ path: fifo, cursor: 'end', timeout: '30s' }, /FIFO.*not a regular file/i],
    [{ path: fifo, timeout: '30s' }, /FIFO.*not a regular file/i],
    [{ path: zero, cursor: 'end', timeout: '30s' }, /outside the directories the host lets waits read/],
    [{ path: '/dev/zero', cursor: 'end', timeout: '30s' }, /outside the directories the host lets waits read/],
  ]) {
    const began = Date.now()
    const answer = client.callTool({ name: 'wait_for_event', arguments: args }, undefined, { timeout: 60_000 })
    // The event loop is free while the call runs: ping is answered.
    await client.ping({ timeout: 5_000 })
    const res = await answer
    assert.equal(res.isError, true, JSON.stringify(args))
    assert.match(res.content[0].text, message, JSON.stringify(args))
    // Well inside the 30 s the call asked for (generous for a loaded machine).
    assert.ok(Date.now() - began < 10_000, `${JSON.stringify(args)} took ${Date.now() - began} ms`)
  }
  await client.ping({ timeout: 5_000 })
})

test('a client that closes stdin mid-call leaves no server behind: its waits are cancelled and it exits', async () => {
  const log = path.join(dir, 'quiet.jsonl')
  fs.writeFileSync(log, '')
  const server = spawn(process.execPath, [path.join(here, '..', 'server.mjs'), '--root', dir], { env: getDefaultEnvironment(), stdio: ['pipe', 'pipe', 'ignore'] })
  const exited = new Promise((resolve) => server.on('exit', resolve))
  let out = ''
  server.stdout.on('data', (chunk) => (out += chunk))
  const send = (message) => server.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`)
  send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } } })
  send({ method: 'notifications/initialized' })
  send({ id: 2, method: 'tools/call', params: { name: 'wait_for_event', arguments: { path: log, type: 'never', timeout: '60s' } } })
  // Answered in order: once ping is, the call is running.
  send({ id: 3, method: 'ping' })
  await eventually(() => out.includes('"id":3'), { timeoutMs: 20_000 })
  const closed = Date.now()
  server.stdin.end()
  await exited
  // Not the 60 s the call asked for (generous for a loaded machine).
  assert.ok(Date.now() - closed < 10_000, `exited ${Date.now() - closed} ms after stdin closed`)
})

test('--max-tool-calls that is no whole number is a usage error, not a stack trace', () => {
  for (const bad of ['', 'abc', '-1', '1.5']) {
    const r = spawnSync(process.execPath, [path.join(here, '..', 'server.mjs'), `--max-tool-calls=${bad}`], { encoding: 'utf8', env: getDefaultEnvironment() })
    assert.equal(r.status, 2, `${bad}: ${r.stderr}`)
    assert.match(r.stderr, /--max-tool-calls: not a whole number/)
    assert.doesNotMatch(r.stderr, /\n\s+at /)
  }
})
