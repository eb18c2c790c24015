// The tools of the example server: each is an MCP tool object (name,
// title, description, inputSchema, outputSchema, annotations) plus a
// `call(args, ctx)` that resolves with its structured output. `ctx` is
// `{signal, progress(progress, message), tools}`; a thrown WaitforError is
// the agent's mistake (an `isError` result), anything else a server fault.

import { execFile } from 'node:child_process'
import { callTool, profiles, recordSendKeys, WaitforError } from 'libwaitfor'
import { waitFor, readEvents, eventsEndCursor, eventMatcher, parseDuration, WAIT_STATES } from 'libwaitfor/ax'

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
    description: 'Runs a program (argv, no shell) and returns its exit code and output. Bounded by timeout_ms (at most 60000).',
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
    annotations: { readOnlyHint: false, openWorldHint: true },
  },
  async call(args, { signal }) {
    const { argv, timeout_ms: timeoutMs = 10_000 } = args
    if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === 'string')) {
      throw invalid('argv', 'must be a non-empty array of strings')
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
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
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

/** The JSON Schema of the wait/1 envelope (seeds/ouro-ax-wait.md). */
const WAIT_SCHEMA = {
  type: 'object',
  required: ['ax', 'for', 'target', 'state', 'since', 'until', 'cursor', 'events', 'fresh', 'resume', 'reason', 'callback', 'next'],
  properties: {
    ax: { const: 'wait/1' },
    for: { type: 'string' },
    target: {},
    state: { enum: [...WAIT_STATES] },
    since: { type: 'string' },
    until: { type: ['string', 'null'] },
    cursor: { type: ['string', 'null'] },
    events: {
      type: 'array',
      items: { type: 'object', required: ['cursor', 'type', 'at', 'by', 'target', 'summary'], properties: { cursor: { type: 'string' }, type: { type: 'string' } } },
    },
    fresh: { type: ['object', 'null'] },
    resume: { type: ['object', 'null'], properties: { command: { type: 'string' } } },
    reason: { type: ['string', 'null'] },
    callback: { type: ['string', 'null'] },
    next: { type: 'array', items: { type: 'object', required: ['command'] } },
  },
}

const waitForEvent = {
  tool: {
    name: 'wait_for_event',
    title: 'Wait for an event',
    description:
      'Waits until a JSON Lines event log gets an event matching `match` after `cursor` (default: the end of the log now), the timeout passes, or the log says the target is gone. Returns the wait/1 envelope; pass its `cursor` back to continue.',
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['path', 'match'],
      properties: {
        path: { type: 'string', minLength: 1, description: 'The JSON Lines event log.' },
        match: {
          type: 'object',
          description: 'Which event: {type, by, target, summary, summaryRegex, ignoreCase, data: [{pointer, equals|exists}]}.',
        },
        cursor: { type: ['string', 'null'], default: null, description: 'Resume after this cursor.' },
        timeout: { type: 'string', default: '60s', description: "How long to wait: '90s', '2m', '500ms'." },
        for: { type: 'string', default: 'event', description: 'What is awaited, in words.' },
      },
    },
    outputSchema: WAIT_SCHEMA,
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  async call(args, { signal, progress }) {
    const { path, match, timeout = '60s', for: what = 'event' } = args
    const timeoutMs = parseDuration(timeout)
    if (timeoutMs === null) throw invalid('timeout', `not a duration: ${JSON.stringify(timeout)}`)
    const cursor = args.cursor ?? eventsEndCursor(path)
    let reads = 0
    return waitFor({
      for: what,
      target: match.target ?? null,
      cursor,
      timeoutMs,
      intervalMs: 50,
      signal,
      match: eventMatcher(match),
      read: async (c) => {
        const read = readEvents(path, c)
        progress(++reads, `read ${read.events.length} new events`)
        return read
      },
      resume: (c) => ({ command: `wait_for_event --path ${path} --cursor ${c ?? ''}` }),
    })
  },
}

/** A tool that is a libwaitfor profile, called with this server's tools. */
function profileTool(id) {
  const { tool } = profiles().find((p) => p.profile === id)
  return {
    tool,
    call: (args, { signal, progress, tools }) =>
      callTool(id, args, {
        signal,
        tools,
        onProgress: (p) => progress(p.samples, p.last_line ?? `${p.samples} samples`),
      }),
  }
}

/** Every tool of the server, by name. */
export const TOOLS = new Map(
  [runCommand, sendKeys, waitForEvent, profileTool('aura/wait_for'), profileTool('libtmux-mcp/wait_for_text')].map((t) => [t.tool.name, t]),
)

/**
 * Lends this server's tools to AURA's probe: a probed tool's text, its
 * error as a probe error.
 */
export async function probeTool(name, args, signal) {
  if (name === 'run_command') return runCommand.text(await runCommand.call(args ?? {}, { signal }))
  const entry = TOOLS.get(name)
  if (!entry || entry.tool.name.startsWith('wait_for')) throw new Error(`no probe-able tool \`${name}\``)
  return JSON.stringify(await entry.call(args ?? {}, { signal, progress: () => {} }))
}
