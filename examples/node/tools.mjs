// The tools of the example server: each is an MCP tool object (name,
// title, description, inputSchema, outputSchema, annotations) plus a
// `call(args, ctx)` that resolves with its structured output. `ctx` is
// `{signal, progress({progress, total, message}), log({level, message}), tools}`
// (the profile's notices, as its original tool sends them); a thrown WaitforError is
// the agent's mistake (an `isError` result), anything else a server fault.
//
// What an agent can reach is what the command line grants (see README.md):
// `--root DIR` (files), `--allow-command PROG` (programs), `--allow-send-keys`.
// Nothing by default.

import { execFile } from 'node:child_process'
import fs from 'node:fs'
import { parseArgs } from 'node:util'
import { callTool, profiles, recordSendKeys, WaitforError } from 'libwaitfor'

const { values: options } = parseArgs({
  options: {
    root: { type: 'string', multiple: true, default: [] },
    'allow-command': { type: 'string', multiple: true, default: [] },
    'allow-send-keys': { type: 'boolean', default: false },
  },
})
/** Directories whose regular files the tools may read (resolved). */
const ROOTS = options.root.map((root) => fs.realpathSync(root))
/** Programs run_command (and so wait_for) may run, by argv[0]. */
const COMMANDS = options['allow-command']
/** What libwaitfor's own probes may reach: the same as this server's tools. */
const GRANTS = { commands: COMMANDS, fileRoots: ROOTS }

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, openWorldHint: false }
/** A granted program (or a shell in a pane) may do anything the server's user can. */
const RUNS_PROGRAMS = { readOnlyHint: false, destructiveHint: true, openWorldHint: true }

function refused(field, message) {
  return new WaitforError({ code: 'invalid_arguments', message: `${field}: ${message}`, field, rule: 'not_granted' })
}

/** Longest run_command and send_keys may take, in milliseconds. */
const COMMAND_CEILING_MS = 60_000
const OUTPUT_LIMIT = 1 << 20

function invalid(field, message) {
  return new WaitforError({ code: 'invalid_arguments', message: `${field}: ${message}`, field, rule: 'wrong_type' })
}

/** Runs argv (no shell) within timeoutMs; resolves with its exit and output. */
function runArgv(argv, { timeoutMs = 10_000, signal } = {}) {
  return new Promise((resolve) => {
    execFile(argv[0], argv.slice(1), { timeout: timeoutMs, maxBuffer: OUTPUT_LIMIT, signal, encoding: 'utf8' }, (err, stdout, stderr) => {
      const exitCode = err ? (typeof err.code === 'number' ? err.code : null) : 0
      resolve({ exit_code: exitCode, stdout: stdout ?? '', stderr: stderr ?? (err && exitCode === null ? err.message : '') })
    })
  })
}

const runCommand = {
  tool: {
    name: 'run_command',
    title: 'Run a command',
    description: `Runs one of these programs (argv, no shell): ${COMMANDS.join(', ')}; returns its exit code and output. Bounded by timeout_ms (at most 60000).`,
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['argv'],
      properties: {
        argv: { type: 'array', minItems: 1, items: { type: 'string' }, description: 'Program and arguments.' },
        timeout_ms: { type: 'integer', minimum: 1, maximum: COMMAND_CEILING_MS, default: 10_000 },
      },
    },
    outputSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['exit_code', 'stdout', 'stderr'],
      properties: {
        exit_code: { type: ['integer', 'null'], description: 'null when it was killed or could not start.' },
        stdout: { type: 'string' },
        stderr: { type: 'string' },
      },
    },
    annotations: RUNS_PROGRAMS,
  },
  async call(args, { signal }) {
    const { argv, timeout_ms: timeoutMs = 10_000 } = args
    if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === 'string')) {
      throw invalid('argv', 'must be a non-empty array of strings')
    }
    if (!COMMANDS.includes(argv[0])) {
      throw refused('argv', `may not run \`${argv[0]}\`; allowed programs: ${COMMANDS.join(', ') || 'none (start the server with --allow-command PROG)'}`)
    }
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > COMMAND_CEILING_MS) {
      throw invalid('timeout_ms', `must be an integer in 1..=${COMMAND_CEILING_MS}`)
    }
    return runArgv(argv, { timeoutMs, signal })
  },
  /** What AURA's probe sees of a run: stdout then stderr. */
  text: (out) => out.stdout + out.stderr,
}

const sendKeys = {
  tool: {
    name: 'send_keys',
    title: 'Send keys to a tmux pane',
    description:
      'Types keys into a tmux pane (tmux send-keys) and records them, so wait_for_text on that pane does not mistake their echo for output.',
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['pane_id', 'keys'],
      properties: {
        pane_id: { type: 'string', pattern: '^%[0-9]+$', description: "Pane ID (e.g. '%1')." },
        keys: { type: 'string', description: 'Text (literal) or a tmux key name.' },
        literal: { type: 'boolean', default: true, description: 'Send keys as literal text (send-keys -l).' },
        enter: { type: 'boolean', default: true, description: 'Press Enter afterwards.' },
        socket_name: { type: ['string', 'null'], default: null, description: 'tmux socket name (-L).' },
      },
    },
    outputSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['pane_id', 'sent'],
      properties: { pane_id: { type: 'string' }, sent: { type: 'boolean' } },
    },
    // A shell in the pane runs what it types.
    annotations: RUNS_PROGRAMS,
  },
  async call(args, { signal }) {
    const { pane_id: paneId, keys, literal = true, enter = true, socket_name: socketName = null } = args
    if (typeof keys !== 'string') throw invalid('keys', 'must be a string')
    // Recorded before tmux paints the echo, so no concurrent wait samples
    // the echo unrecorded; an unsent record only masks until it expires.
    recordSendKeys({ socketName, paneId, keys: [keys], literal, enter })
    const tmux = socketName ? ['tmux', '-L', socketName] : ['tmux']
    const runs = [[...tmux, 'send-keys', '-t', paneId, ...(literal ? ['-l'] : []), keys]]
    if (enter) runs.push([...tmux, 'send-keys', '-t', paneId, 'Enter'])
    for (const argv of runs) {
      const out = await runArgv(argv, { timeoutMs: 5000, signal })
      if (out.exit_code !== 0) throw new WaitforError({ code: 'runtime', message: `tmux send-keys: ${out.stderr.trim()}` })
    }
    return { pane_id: paneId, sent: true }
  },
}

/** A tool that is a libwaitfor profile, called with this server's tools. */
function profileTool(id) {
  const { tool } = profiles().find((p) => p.profile === id)
  // wait_for does what the tools it probes can do; the pane wait reads
  // panes; the event wait reads granted files, off the event loop and within
  // its deadline (the engine opens them: a FIFO or a device is refused).
  const runs = id === 'aura/wait_for' && COMMANDS.length > 0
  return {
    tool: { ...tool, annotations: { ...tool.annotations, ...(runs ? RUNS_PROGRAMS : READ_ONLY) } },
    call: (args, { signal, progress, log, tools }) =>
      callTool(id, args, { signal, tools, grants: GRANTS, onProgress: progress, onLog: log }),
  }
}

/** Every tool of the server, by name. */
export const TOOLS = new Map(
  [
    ...(COMMANDS.length > 0 ? [runCommand] : []),
    ...(options['allow-send-keys'] ? [sendKeys] : []),
    profileTool('ouro/wait'),
    profileTool('aura/wait_for'),
    profileTool('libtmux-mcp/wait_for_text'),
  ].map((t) => [t.tool.name, t]),
)

/**
 * Lends this server's tools to AURA's probe: a probed tool's text, its
 * error as a probe error.
 */
export async function probeTool(name, args, signal) {
  if (name === 'run_command' && TOOLS.has(name)) return runCommand.text(await runCommand.call(args ?? {}, { signal }))
  // Only tools that observe: never send_keys, never a wait.
  const entry = TOOLS.get(name)
  if (!entry || entry.tool.name.startsWith('wait_for') || name === 'send_keys') {
    throw new Error(`no probe-able tool \`${name}\`${TOOLS.has('run_command') ? '' : ' (this server runs no commands: start it with --allow-command PROG)'}`)
  }
  return JSON.stringify(await entry.call(args ?? {}, { signal, progress: () => {}, log: () => {} }))
}
