#!/usr/bin/env node
// An MCP server over stdio, built on the TypeScript SDK's McpServer, offering
// libwaitfor's waits (see README.md):
//   wait_for_event  typed event wait over a JSON Lines log (wait/1 envelope)
//   wait_for        AURA's generic wait; its probe is libwaitfor's built-in
//                   run_command or read_file, within the same grants
//   wait_for_text   libtmux-mcp's wait for new pane output
//   send_keys       types into a pane and records the echo (--allow-send-keys)
//   run_command     runs argv in a process group of its own (--allow-command
//                   PROG); past timeout_ms or 1 MiB of output the call fails
//                   with the reason, and when it ends the group is killed;
//                   output whose answer would pass 4 MiB of JSON is cut
// No answer is over 4 MiB of JSON (see ANSWER_LIMIT).
// The waits come from registerWaitTools: exact schemas, progress for a
// request with a progressToken, cancellation. Each wait's end is logged on
// stderr. Nothing is granted by default: --root DIR (files the waits may
// read), --allow-command PROG, --allow-send-keys. --max-tool-calls N caps the
// waits running at once (1,024 by default).

import { spawn } from 'node:child_process'
import fs from 'node:fs'
import { parseArgs } from 'node:util'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { recordSendKeys, setMaxToolCalls } from 'libwaitfor'
import { registerWaitTools } from '@libwaitfor/mcp'
import { z } from 'zod'

const { values: options } = parseArgs({
  options: {
    root: { type: 'string', multiple: true, default: [] },
    'allow-command': { type: 'string', multiple: true, default: [] },
    'allow-send-keys': { type: 'boolean', default: false },
    'max-tool-calls': { type: 'string' },
  },
})
// How many wait calls may run at once (libwaitfor's default: 1,024); one
// more is answered at once with a too_many_calls tool error.
const maxToolCalls = options['max-tool-calls']
if (maxToolCalls !== undefined) {
  // As argparse's int: a usage error, not a stack trace, for what is no whole number.
  if (!/^\d+$/.test(maxToolCalls)) {
    console.error(`server.mjs: --max-tool-calls: not a whole number: '${maxToolCalls}'`)
    process.exit(2)
  }
  setMaxToolCalls(Number(maxToolCalls))
}
const COMMANDS = options['allow-command']
const READ_ONLY = { readOnlyHint: true, destructiveHint: false, openWorldHint: false }
/** A granted program (or a shell in a pane) may do anything the server's user can. */
const RUNS_PROGRAMS = { readOnlyHint: false, destructiveHint: true, openWorldHint: true }
/** Longest run_command may take, in milliseconds. */
const COMMAND_CEILING_MS = 60_000

/** Most output (stdout and stderr together) run_command keeps, in bytes. */
const OUTPUT_LIMIT = 1 << 20

/**
 * How long output may pause once the program has exited before the call
 * answers: a process it started that left its group (setsid) may hold the
 * output open for good.
 */
const DRAIN_GRACE_MS = 100

/**
 * Most JSON one tool answer may take, in bytes. An answer carries its output
 * twice (text and structuredContent) and a control byte is 6 bytes of JSON,
 * so OUTPUT_LIMIT of output can be 12 MiB: past the SDK client's 10 MiB read
 * buffer, which then closes the whole session. 4 MiB is the engine's own
 * bound on a call's input, with room to spare under that (stdio only here).
 */
const ANSWER_LIMIT = 4 << 20

/** Bytes of JSON an answer takes on the wire. */
const answerSize = (result) => Buffer.byteLength(JSON.stringify(result))

/** The tool error that stands for an answer over ANSWER_LIMIT bytes of JSON. */
const tooLarge = (size) => ({
  content: [{ type: 'text', text: `the answer was not sent: it is ${size} bytes of JSON, over this server's limit of ${ANSWER_LIMIT}; ask for less (a narrower filter, a smaller file or output)` }],
  isError: true,
})

/** The first `n` UTF-16 units of `text`, never half a surrogate pair. */
const head = (text, n) => text.slice(0, n).replace(/[\uD800-\uDBFF]$/, '')

/** How many characters (code points, as Python counts them) `text` has: an emoji is one, not two UTF-16 units. */
const characters = (text) => {
  let count = 0
  for (const _ of text) count++
  return count
}

/**
 * run_command's answer for `out`, its stdout and stderr cut, if need be, so
 * that it stays within ANSWER_LIMIT; a cut says so in `truncated` (and at the
 * end of the text). How much the JSON grows depends on the characters (1
 * byte for `a`, 12 for a NUL), so the cut is measured, not guessed: each try
 * keeps 90% of the share that would fit, and the loop ends because each try
 * keeps less (what still does not fit is a tool error).
 */
function commandAnswer(out) {
  // The text is the output, as AURA's wait_for reads a probed tool.
  const answer = (o) => ({ content: [{ type: 'text', text: o.stdout + o.stderr + (o.truncated ? `\n[${o.truncated}]` : '') }], structuredContent: o })
  let result = answer(out)
  let size = answerSize(result)
  while (size > ANSWER_LIMIT && (out.stdout || out.stderr)) {
    const share = (ANSWER_LIMIT / size) * 0.9
    const stdout = head(out.stdout, Math.floor(out.stdout.length * share))
    const stderr = head(out.stderr, Math.floor(out.stderr.length * share))
    const truncated = `stdout and stderr were cut to their first ${characters(stdout)} and ${characters(stderr)} characters: the whole answer would be over ${ANSWER_LIMIT} bytes of JSON`
    out = { ...out, stdout, stderr, truncated }
    result = answer(out)
    size = answerSize(result)
  }
  return size > ANSWER_LIMIT ? tooLarge(size) : result
}

/**
 * Runs argv (no shell) in a process group of its own; resolves with its exit
 * code (null if a signal ended it) and output once it has exited and its
 * output is closed, or once its output, still open after the exit, paused for
 * DRAIN_GRACE_MS. Past timeoutMs or OUTPUT_LIMIT bytes of output, or when `signal`
 * aborts, it rejects with the reason. However the call ends, the whole group
 * is killed, so nothing the program left in the background outlives it; a
 * process that left the group (setsid) and holds the output open runs on,
 * but holds the call no longer than that grace.
 */
function runArgv(argv, { timeoutMs, signal }) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    const output = { stdout: [], stderr: [] }
    let size = 0
    let lastOutputAt = 0
    let done = false
    const end = (error, result) => {
      if (done) return
      done = true
      clearTimeout(timer)
      signal?.removeEventListener('abort', cancelled)
      killGroup(child.pid)
      child.stdout.destroy()
      child.stderr.destroy()
      error ? reject(error) : resolve(result)
    }
    const killed = (why) => end(new Error(`\`${argv[0]}\` ${why}: killed`))
    const timer = setTimeout(() => killed(`ran longer than ${timeoutMs} ms`), timeoutMs)
    const cancelled = () => killed('was cancelled')
    signal?.addEventListener('abort', cancelled)
    if (signal?.aborted) cancelled()
    for (const name of ['stdout', 'stderr']) {
      child[name].on('data', (chunk) => {
        lastOutputAt = Date.now()
        output[name].push(chunk)
        size += chunk.length
        if (size > OUTPUT_LIMIT) killed(`wrote more than ${OUTPUT_LIMIT} bytes of output`)
      })
    }
    const answer = (code) => end(null, { exit_code: code, stdout: Buffer.concat(output.stdout).toString(), stderr: Buffer.concat(output.stderr).toString() })
    child.on('error', end)
    child.on('exit', (code) => {
      if (done) return
      // What it left in its group dies now, and lets go of the output; what
      // left the group may hold it open: answer once the output pauses.
      killGroup(child.pid)
      const exitedAt = Date.now()
      // Looked at after the loop has read what waits in the pipes
      // (setImmediate runs after its poll for I/O), so a loop that was busy
      // does not take waiting output for a pause.
      const settle = () => setImmediate(() => {
        const quiet = Date.now() - Math.max(exitedAt, lastOutputAt)
        if (quiet >= DRAIN_GRACE_MS) answer(code)
        else setTimeout(settle, DRAIN_GRACE_MS - quiet).unref()
      })
      setTimeout(settle, DRAIN_GRACE_MS).unref()
    })
    child.on('close', answer)
  })
}

/** SIGKILLs process group `pid`: gone already (ESRCH), or not the server's to signal (EPERM, setuid), is no error. */
function killGroup(pid) {
  try {
    if (pid) process.kill(-pid, 'SIGKILL')
  } catch (error) {
    if (error.code !== 'ESRCH' && error.code !== 'EPERM') throw error
  }
}

// logging: the waits' log warnings go out as notifications/message, at the level the client sets.
const server = new McpServer({ name: 'waitfor-example', version: '0.1.0' }, { capabilities: { logging: {} } })

if (COMMANDS.length > 0) {
  const description = `Runs one of these programs (argv, no shell): ${COMMANDS.join(', ')}; returns its exit code and output. Killed, with what it started, after timeout_ms or ${OUTPUT_LIMIT} bytes of output.`
  const inputSchema = {
    argv: z.array(z.string()).min(1).describe('Program and arguments.'),
    timeout_ms: z.number().int().min(1).max(COMMAND_CEILING_MS).default(10_000).describe('Kill the program (its process group) after this long.'),
  }
  const outputSchema = {
    exit_code: z.number().int().nullable().describe('null when a signal ended it.'),
    stdout: z.string(),
    stderr: z.string(),
    truncated: z.string().optional().describe('Present when the output was cut to fit the answer.'),
  }
  server.registerTool('run_command', { title: 'Run a command', description, inputSchema, outputSchema, annotations: RUNS_PROGRAMS }, async ({ argv, timeout_ms }, { signal }) => {
    if (!COMMANDS.includes(argv[0])) throw new Error(`argv: may not run \`${argv[0]}\`; allowed programs: ${COMMANDS.join(', ')}`)
    return commandAnswer(await runArgv(argv, { timeoutMs: timeout_ms, signal }))
  })
}

if (options['allow-send-keys']) {
  const description = 'Types keys into a tmux pane (tmux send-keys) and records them, so wait_for_text on that pane does not mistake their echo for output.'
  const inputSchema = {
    pane_id: z.string().regex(/^%[0-9]+$/).describe("Pane ID (e.g. '%1')."),
    keys: z.string().describe('Text (literal) or a tmux key name.'),
    literal: z.boolean().default(true).describe('Send keys as literal text (send-keys -l).'),
    enter: z.boolean().default(true).describe('Press Enter afterwards.'),
    // As wait_for_text: a socket name, never a path to another server.
    socket_name: z.string().regex(/^[^/\\\0]+$/).refine((name) => name !== '.' && name !== '..', 'a tmux socket name, not a path').nullable().default(null).describe('tmux socket name (-L), not a path.'),
  }
  const outputSchema = { pane_id: z.string(), sent: z.boolean() }
  // A shell in the pane runs what it types.
  server.registerTool('send_keys', { title: 'Send keys to a tmux pane', description, inputSchema, outputSchema, annotations: RUNS_PROGRAMS }, async (args, { signal }) => {
    const { pane_id: paneId, keys, literal, enter, socket_name: socketName } = args
    // Recorded before tmux paints the echo, so no concurrent wait samples
    // the echo unrecorded; an unsent record only masks until it expires.
    recordSendKeys({ socketName, paneId, keys: [keys], literal, enter })
    // -u: tmux reads and writes UTF-8 whatever the locale (MCP clients start
    // servers without LANG), as libwaitfor's own tmux calls do.
    const tmux = socketName ? ['tmux', '-u', '-L', socketName] : ['tmux', '-u']
    // --: keys that start with '-' are keys, not send-keys flags.
    const runs = [[...tmux, 'send-keys', '-t', paneId, ...(literal ? ['-l'] : []), '--', keys]]
    if (enter) runs.push([...tmux, 'send-keys', '-t', paneId, 'Enter'])
    for (const argv of runs) {
      const out = await runArgv(argv, { timeoutMs: 5000, signal })
      if (out.exit_code !== 0) throw new Error(`tmux send-keys: ${out.stderr.trim()}`)
    }
    const output = { pane_id: paneId, sent: true }
    return { content: [{ type: 'text', text: JSON.stringify(output) }], structuredContent: output }
  })
}

// wait_for probes libwaitfor's built-in run_command and read_file (never
// send_keys, never a wait), which reach what this server's own tools reach
// and are checked before the wait starts, as in the Python and C++ servers.
const waits = registerWaitTools(server, {
  profiles: ['ouro/wait', 'aura/wait_for', 'libtmux-mcp/wait_for_text'],
  grants: { fileRoots: options.root.map((root) => fs.realpathSync(root)), commands: COMMANDS },
})
for (const [name, tool] of Object.entries(waits)) {
  // Annotations for what this server granted (see SECURITY.md): the pane
  // wait reads panes, the event wait granted files, wait_for runs programs
  // only when run_command exists.
  const runs = name === 'wait_for' && COMMANDS.length > 0
  const run = tool.handler
  const callback = async (extra) => {
    // A wait's answer embeds text from outside (events, the last sample).
    let result = await run(extra)
    const size = answerSize(result)
    if (size > ANSWER_LIMIT) result = tooLarge(size)
    process.stderr.write(`${name} ended${extra.signal.aborted ? ' after cancel' : ''}: ${result.content[0].text.slice(0, 200)}\n`)
    return result
  }
  tool.update({ annotations: { ...tool.annotations, ...(runs ? RUNS_PROGRAMS : READ_ONLY) }, callback })
}

await server.connect(new StdioServerTransport())
// The client went away (closed our stdin): closing aborts every call in
// flight, so their waits end now and the process exits, rather than
// probing, granted commands and all, until their deadlines.
process.stdin.on('end', () => server.close())
