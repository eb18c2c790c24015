/**
 * `@libwaitfor/ax`: the Ouro AX typed wait under the seed's names. Switch from
 * the seed by changing the import:
 *
 * @example
 * import { waitFor, waitText, waitExit, DEFAULT_WAIT_EXITS } from '@libwaitfor/ax'
 */

export { WaitforError } from 'libwaitfor'

/** A reference the agent already holds (opaque JSON). */
export type AxRef = unknown

/** One thing that happened, with the cursor that resumes after it. */
export interface AxEvent {
  cursor: string
  type: string
  at: string
  by: string
  target: AxRef | null
  summary: string
  data?: Record<string, unknown>
}

/** How current the source is, so an agent can tell "nothing happened" from "nothing was seen". */
export interface Fresh {
  state: string
  asOf: string | null
}

/** A command the agent can run next. */
export interface NextStep {
  command: string
  description?: string
}

export declare const WAIT_VERSION: 'wait/1'
/** How a wait ended. */
export declare const WAIT_STATES: readonly ['satisfied', 'waiting', 'timed-out', 'gone']
export type WaitState = (typeof WAIT_STATES)[number]

/** The envelope a wait returns. */
export interface Wait {
  ax: typeof WAIT_VERSION
  for: string
  target: AxRef | null
  state: WaitState
  since: string
  until: string | null
  cursor: string | null
  events: AxEvent[]
  fresh: Fresh | null
  resume: NextStep | null
  reason: string | null
  callback: string | null
  next: NextStep[]
}

/** What `wait` takes. */
export type WaitFields = Pick<Wait, 'for' | 'state' | 'since'> & Partial<Omit<Wait, 'ax' | 'for' | 'state' | 'since'>>

/** Exit code names by wait state, in the tool's table. */
export type WaitExits = Readonly<Record<WaitState, string>>
/** Exit codes by name. */
export type ExitTable = Readonly<Record<string, number>>

export interface Validation {
  ok: boolean
  errors: string[]
}

/** The default: a satisfied or open wait exits ok; a wait that timed out or can no longer happen exits error. */
export declare const DEFAULT_WAIT_EXITS: WaitExits

/** The flags a wait command takes, shaped as ax-command flags. */
export declare const WAIT_FLAGS: Readonly<{
  readonly timeout: { readonly type: 'string'; readonly placeholder: '<duration>'; readonly description: string }
  readonly cursor: { readonly type: 'string'; readonly placeholder: '<cursor>'; readonly description: string }
}>

/**
 * Builds a wait; a timed-out or waiting wait needs resume, which
 * validateWait checks (wait itself checks nothing).
 *
 * @example
 * wait({ for: 'deploy', state: 'gone', since: new Date().toISOString() })
 */
export declare function wait(fields: WaitFields): Wait
/** Whether a value is a wait of this version (its shape only). */
export declare function isWait(v: unknown): v is Wait
/** Checks a wait: one that can go on names how to resume it, and a satisfied one carries what happened. */
export declare function validateWait(v: unknown): Validation
/** The wait as text: what happened (one line per event), or that nothing did, then how to resume. */
export declare function waitText(w: Wait): string
/** The exit code a wait gives, by its state's name in the tool's table. */
export declare function waitExit(w: Wait, exits: ExitTable, names?: WaitExits): number
/** "90s", "2m", "1h", "500ms" or a bare number of seconds, as milliseconds (at most 2^53 - 1); null when it is none of these. */
export declare function parseDuration(text: string): number | null
/**
 * Milliseconds as the shortest exact duration parseDuration reads back, by the rule every
 * language follows (Python's format_duration, C's waitfor_duration_format_number): a fraction is
 * rounded to the nearest millisecond, a half upwards. NaN, a negative value, an infinity, more
 * than 2^53 - 1 or no number at all throws a WaitforError (`invalid_arguments`, field `duration`).
 *
 * @example
 * formatDuration(1.5) // '2ms'
 */
export declare function formatDuration(ms: number): string

/** What one read of the source returns. */
export interface WaitRead {
  events: AxEvent[]
  cursor: string | null
  fresh?: Fresh | null
  gone?: string | null
  /** The read stopped short of the end of the source (at its most events or bytes): the next read comes at once, not after the interval. */
  more?: boolean
}

/** What waitFor takes. */
export interface WaitForOptions {
  for: string
  target: AxRef | null
  cursor?: string | null
  timeoutMs: number
  read(cursor: string | null): Promise<WaitRead>
  match?(event: AxEvent): boolean
  resume(cursor: string | null): NextStep
  next?(events: readonly AxEvent[]): NextStep[]
  callback?: string | null
  intervalMs?: number
  /** The clock, in ms since the epoch (default `Date.now`). */
  now?(): number
  /** Sleeps `ms` on that clock (default a timer); with it a read is awaited, not abandoned at the limit. */
  sleep?(ms: number): Promise<void>
  signal?: AbortSignal
}

/**
 * Waits on a reference until a matching event, a time limit or the target
 * is gone, and returns the typed wait: core's wait, run step by step on
 * `now` and `sleep` (by default `Date.now` and a timer). An aborted
 * `signal` ends it `timed-out` (reason `cancelled before a matching
 * event`), `next` is called only when it is satisfied, `resume` is set
 * unless the target is gone, `since` is `now()` at the start and `until`
 * when it ended (at most the limit).
 *
 * @example
 * const w = await waitFor({ for: 'build 7', target: null, timeoutMs: 60_000,
 *   read: (c) => readEvents('events.jsonl', c, { grants: { fileRoots: ['.'] } }), match: eventMatcher({ type: 'build.done' }),
 *   resume: (c) => ({ command: `ax wait --cursor ${c}` }) })
 */
export declare function waitFor(options: WaitForOptions): Promise<Wait>

/** A read of a JSON Lines log, with the lines that were not events. */
export interface JsonlRead extends WaitRead {
  cursor: string
  fresh: Fresh
  gone: string | null
  /** The lines that were not events: the first 100 at most (all are consumed). */
  malformed: { line: number; offset: number; reason: string }[]
}

/** What an event read may reach: regular files inside `fileRoots` (nothing by default). */
export interface EventsReadOptions {
  grants?: import('libwaitfor').Grants
}

/**
 * Reads a JSON Lines event log after `cursor` (the core's source), off the
 * event loop and only inside `options.grants.fileRoots`: at most 1,000
 * events and 512 KiB a read (`more` says it stopped short; `waitFor` reads on
 * at once then).
 *
 * @example
 * const read = await readEvents('/srv/ci/events.jsonl', null, { grants: { fileRoots: ['/srv/ci'] } })
 */
export declare function readEvents(path: string, cursor?: string | null, options?: EventsReadOptions & { terminalTypes?: string[] }): Promise<JsonlRead>
/**
 * The cursor at the end of a JSON Lines event log, read as `readEvents` reads.
 *
 * @example
 * const end = await eventsEndCursor('/srv/ci/events.jsonl', { grants: { fileRoots: ['/srv/ci'] } })
 */
export declare function eventsEndCursor(path: string, options?: EventsReadOptions): Promise<string>

/** A declarative event match. */
export interface EventMatchSpec {
  type?: string
  by?: string
  target?: AxRef | null
  summary?: string
  summaryRegex?: boolean
  ignoreCase?: boolean
  data?: ({ pointer: string; equals: unknown } | { pointer: string; exists: boolean })[]
}

/** A `match` function from a declarative spec (the core's matcher). */
export declare function eventMatcher(spec: EventMatchSpec): (event: AxEvent) => boolean
