/**
 * `libwaitfor`: wait for a condition from Node without blocking the event
 * loop. Results and specs are the engine's JSON (snake_case), identical in
 * every language binding.
 *
 * @example
 * import { wait } from 'libwaitfor'
 * const r = await wait({ until: { matches: 'ready' }, max_wait_ms: 5000 }, () => readStatus())
 * if (r.outcome === 'matched') { ... }
 */

/** A pattern: literal text by default; `{text, regex, case_sensitive}` sets the flags per pattern. */
export type Pattern = string | { text: string; regex?: boolean; case_sensitive?: boolean }

/** The success condition tree. */
export type Condition =
  | { matches: Pattern }
  | { not_matches: Pattern }
  | { patterns: Pattern[] }
  | { quiet_for_ms: number }
  | { any_output: true }
  | { json: { pointer: string; equals?: unknown; exists?: boolean } }
  | { exit_code: number }
  | { any: Condition[] }
  | { all: Condition[] }
  | Record<string, unknown>

/** A wait (see `SPEC_SCHEMA` for every field and rule). */
export interface Spec {
  /** A built-in probe; leave it out when passing a JavaScript probe. */
  probe?:
    | { command: { argv: string[]; cwd?: string; stderr?: boolean } }
    | { file: { path: string } }
    | { tmux: TmuxProbe }
  view?: 'whole' | 'fresh'
  until: Condition
  stop?: Pattern[]
  regex?: boolean
  interval_ms?: number
  backoff?: unknown
  max_wait_ms?: number
  on_probe_error?: 'fail' | { tolerate: number }
  output_cap_bytes?: number
  tail?: { lines?: number; bytes?: number }
  progress_every_ms?: number
  resume?: string
  /** Sample once more at the deadline, as AURA's `wait_for` does (default false). */
  sample_at_deadline?: boolean
  /** Measure `quiet_for_ms` on the sample plan, as AURA's `wait_for` does (default false). */
  quiet_on_plan?: boolean
  [field: string]: unknown
}

/**
 * A tmux pane probe: only rows written after the wait began count, typed
 * input recorded with `recordSendKeys` is discounted. The first target
 * field given wins; none means the first session's pane.
 */
export interface TmuxProbe {
  pane_id?: string
  window_id?: string
  session_id?: string
  session_name?: string
  target?: string
  /** `tmux -L` socket name; the default server when absent. */
  socket_name?: string
  /** Wake on output through a control-mode client (default true). */
  push?: boolean
  /** A window or session target's pane: `active` (default) or `first`, as libtmux-mcp picks. */
  pick?: 'active' | 'first'
  /** New rows `by_row` (default) or `by_content`, libtmux-mcp's rule. */
  freshness?: 'by_row' | 'by_content'
}

/** How a wait ended. */
export type Outcome =
  | 'matched'
  | 'settled'
  | 'any_output'
  | 'stopped'
  | 'gone'
  | 'timeout'
  | 'cancelled'
  | 'probe_error'
  | 'error'

/** The engine's result (see `RESULT_SCHEMA`). */
export interface WaitResult {
  outcome: Outcome
  matched_index: number | null
  matched_lines: string[]
  matched_at_entry: boolean
  saw_new_output: boolean
  tail: { lines: string[]; truncated: boolean }
  exit_code: number | null
  samples: number
  elapsed_ms: number
  effective_max_wait_ms: number
  clamped: boolean
  probe: { errors: number; abandoned: number; last_error: string | null }
  error: string | null
  resume: string | null
  woken: boolean
  /** The target was on an alternate screen (a full-screen program) at some sample: matching was suppressed then. */
  alternate_screen: boolean
  /** What the probe says about how the wait ended (absent when nothing): a pane wait says when this process's other waits on its tmux server held every turn, a command wait when this process's other commands held every turn to start one. */
  notices?: string[]
  [field: string]: unknown
}

/** A progress report (throttled by the spec's `progress_every_ms`). */
export interface Progress {
  samples: number
  elapsed_ms: number
  last_line: string | null
}

/** What a probe call is told. */
export interface ProbeContext {
  /** 1 for the first call, 2 for the next, ... */
  sample: number
  /** Whole milliseconds since the wait started. */
  elapsedMs: number
  /** Whole milliseconds left before the deadline; the call is abandoned after it. */
  budgetMs: number
}

/** An observation with its facts. */
export interface Observation {
  text?: string | Uint8Array
  /** Structured output, for `json` conditions. */
  json?: unknown
  exitCode?: number
  /** The target can no longer change. */
  gone?: boolean
}

/**
 * What a probe may return: a string, bytes (UTF-8), an observation, any
 * other JSON value (structured output), nothing (empty text), or a Promise
 * of one of these.
 */
export type ProbeValue = string | Uint8Array | Observation | object | number | boolean | null | undefined
export type Probe = (ctx: ProbeContext) => ProbeValue | Promise<ProbeValue>

/** The host's limits for one wait. */
export interface Policy {
  /** A `max_wait_ms` above this is lowered to it (reported as `clamped`). Default 300000. */
  maxWaitCeilingMs?: number
  /** The largest observation; a spec's `output_cap_bytes` may lower it, never raise it. Default 262144. */
  outputCapBytes?: number
}

/**
 * What built-in probes may reach (a spec's `command` and `file` probes,
 * AURA's `run_command` and `read_file`, the profiles' file readers and tmux
 * sockets). Absent fields grant nothing; see SECURITY.md.
 */
export interface Grants {
  /** Programs that may run, compared with `argv[0]` as given; `'any'` for every program. Default `'none'`. */
  commands?: 'none' | 'any' | string[]
  /** Directories whose regular files (after symbolic links are resolved) may be read. Default none. */
  fileRoots?: string[]
  /** Whether a tmux `socket_name` may be a path instead of a name. Default false. */
  tmuxSocketPaths?: boolean
}

/** What `wait` and `start` take; any other option is refused (`invalid_arguments`, rule `unknown_field`). */
export interface WaitOptions {
  /** Aborting resolves the wait with outcome `cancelled`. Any number of waits may share one signal: it gets one `abort` listener, removed when the last of them ends. */
  signal?: AbortSignal
  onProgress?: (progress: Progress) => void
  policy?: Policy
  /** What the spec's built-in probe may reach: nothing by default. */
  grants?: Grants
}

/** A running wait. */
export declare class WaitHandle {
  private constructor()
  /** Settles once with the result. */
  readonly result: Promise<WaitResult>
  /** Takes a sample now instead of at the next poll. */
  wake(): void
  /** Ends the wait with outcome `cancelled`. */
  cancel(): void
}

/**
 * Runs a wait with a JavaScript probe, or the spec's built-in one. Never
 * rejects for a normal ending (timeout, stop, probe error, cancel); rejects
 * with a `WaitforError` for bad input.
 *
 * @example
 * const r = await wait({ until: { matches: 'ok' }, interval_ms: 100 }, async () => (await fetch(url)).text())
 */
export declare function wait(spec: Spec | string, probe?: Probe | null, options?: WaitOptions): Promise<WaitResult>

/**
 * Starts a wait and returns its handle at once.
 *
 * @example
 * const h = start({ probe: { file: { path: 'app.log' } }, until: { matches: 'listening' } })
 * h.wake()
 * const r = await h.result
 */
export declare function start(spec: Spec | string, probe?: Probe | null, options?: WaitOptions): WaitHandle

/** Validates a spec without running it; throws a `WaitforError` when invalid. */
export declare function checkSpec(spec: Spec | string): void

/** An MCP tool definition. */
export interface ToolDefinition {
  name: string
  title: string
  description: string
  inputSchema: { type: 'object'; [key: string]: unknown }
  outputSchema: { type: 'object'; [key: string]: unknown }
  annotations: Record<string, unknown>
}

/** Every profile with its tool: `profile` is `family/tool`, such as `aura/wait_for`. */
export declare function profiles(): { profile: string; tool: ToolDefinition }[]

/** A profile by its id (`aura/wait_for`) or a tool name only one profile has (`wait_for`); throws `unknown_profile`. */
export declare function findProfile(name: string): { profile: string; tool: ToolDefinition }

/** The profile id of a tool call `callTool` would accept; throws what it would refuse before running. */
export declare function checkArguments(name: string, args: object | string, options?: { grants?: Grants }): string

/** The number of a tmux pane id (`%12` is 12); throws `invalid_arguments` (rule `invalid_pane_id`). */
export declare function parsePaneId(paneId: string): number

/** The MCP tool definitions of every profile. */
export declare function toolDefinitions(): ToolDefinition[]

/**
 * Sets how many profile calls (`callTool`, the tools `@libwaitfor/mcp`
 * registers) may be in flight in this process at once, 1,024 by default,
 * and returns the cap it replaces. A call over the cap rejects at once
 * with a `WaitforError` of code `too_many_calls`; the calls running go on,
 * also when the cap is lowered under their number. `0` refuses every call.
 * A call's place comes back when its wait ends, however it ends (result,
 * error, an aborted `signal`, a failing tool). Plain waits (`wait`,
 * `start`) are not counted. Throws `invalid_arguments` (field `cap`) for a
 * negative or fractional cap.
 *
 * @example
 * setMaxToolCalls(4096) // a server that expects thousands of agents' waits at once
 */
export declare function setMaxToolCalls(cap: number): number

/** How many profile calls may be in flight in this process at once (see `setMaxToolCalls`). */
export declare function maxToolCalls(): number

/** A tool call's progress, as its profile reports it (MCP's `progress`, `total`, `message`). */
export interface ToolProgress {
  /** Seconds elapsed. */
  progress: number
  /** The time limit in seconds, if known. */
  total: number | null
  /** A line for a human watching, if the profile sends one. */
  message: string | null
}

/** A tool call's log notice, as its profile sends it (MCP's `notifications/message`). */
export interface ToolLog {
  level: 'debug' | 'info' | 'warning' | 'error'
  message: string
}

/** What `callTool` takes; any other option is refused (`invalid_arguments`, rule `unknown_field`). */
export interface CallToolOptions {
  /** Aborting cancels the wait; the profile decides what a cancelled call returns. */
  signal?: AbortSignal
  /** The profile's progress notices, as its original tool sends them. */
  onProgress?: (progress: ToolProgress) => void
  /** The profile's log notices (a refusal's before the promise rejects). */
  onLog?: (log: ToolLog) => void
  /** Overrides the profile's ceiling on the time limit. */
  maxWaitCeilingMs?: number
  /** The server's own tools, for profiles that probe them (AURA's `wait_for`); returns the tool's text. */
  tools?: (name: string, args: Record<string, unknown>, ctx: { budgetMs: number }) => ProbeValue | Promise<ProbeValue>
  /** What built-in probes and tools may reach: nothing by default. */
  grants?: Grants
}

/**
 * Calls a profile's tool with the agent's arguments; resolves with output
 * valid against the tool's `outputSchema`.
 *
 * @example
 * const out = await callTool('aura/wait_for', { probe: { tool: 'status' }, until: { matches: 'up' } }, { tools })
 */
export declare function callTool(name: string, args: Record<string, unknown> | string, options?: CallToolOptions): Promise<any>

/** Runs one shared test vector on virtual time. */
export declare function simulate(vector: object | string): {
  result: WaitResult
  call_starts_ms: number[]
  progress: Progress[]
  output?: unknown
  tool_error?: { code: string; message: string; field?: string; rule?: string }
}

/** Keys a host sent to a tmux pane with `send-keys`. */
export interface SentKeys {
  /** `tmux -L` socket name; absent or empty for the default server. */
  socketName?: string | null
  /** The pane's id, `%N`. */
  paneId: string
  /** The `send-keys` arguments: text with `literal`, otherwise tmux key names. */
  keys: string | string[]
  /** `send-keys -l`. */
  literal?: boolean
  /** A final Enter was sent. */
  enter?: boolean
  /**
   * Whether `socketName` may be a path (`tmuxSocketPaths`); without it a
   * path, a NUL or a name over 103 bytes throws `invalid_arguments` on
   * `socketName`, as the `wait_for_text` profiles refuse it.
   */
  grants?: Grants
}

/**
 * Records, now, keys this process sent to a pane, so every pane wait of
 * this process discounts their echo. Throws `WaitforError`
 * (`invalid_arguments`) on a malformed record.
 *
 * @example
 * recordSendKeys({ socketName: 'work', paneId: '%1', keys: 'make test', literal: true, enter: true })
 */
export declare function recordSendKeys(sent: SentKeys): void

/** The JSON Schema of a spec. */
export declare const SPEC_SCHEMA: Readonly<Record<string, unknown>>
/** The JSON Schema of a result. */
export declare const RESULT_SCHEMA: Readonly<Record<string, unknown>>
/**
 * What a `tools` function throws (as an Error's message) for a tool the
 * server does not have: `aura/wait_for` then fails as AURA does, "probe
 * tool 'NAME' is not exposed by any connected MCP server".
 */
export declare const UNKNOWN_TOOL: string

/** Every refusal of the package, with a stable `code`. */
export declare class WaitforError extends Error {
  /** `invalid_spec`, `invalid_arguments`, `unknown_profile`, `runtime`, `too_many_calls`, `probe_error`, `invalid_wait`, `bad_cursor`, `source_replaced`, `io`, `internal`. */
  readonly code: string
  /** The offending field, for `invalid_spec` and `invalid_arguments`; otherwise `null`. */
  readonly field: string | null
  /** The rule it broke (stable snake_case), for `invalid_spec` and `invalid_arguments`; otherwise `null`. */
  readonly rule: string | null
  /** Every broken rule, for `invalid_wait`. */
  readonly errors?: string[]
}
