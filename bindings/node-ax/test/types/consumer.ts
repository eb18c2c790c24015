// A strict TypeScript consumer of the package: compiled with `tsc --noEmit`.
import { type Grants } from 'libwaitfor'
import { waitFor, wait as envelope, isWait, validateWait, waitText, waitExit, parseDuration, formatDuration, DEFAULT_WAIT_EXITS, WAIT_STATES, WAIT_VERSION, WAIT_FLAGS, readEvents, eventsEndCursor, eventMatcher, WaitforError, type Wait, type WaitState } from '@libwaitfor/ax'

async function main(): Promise<void> {
  const granted: Grants = { fileRoots: ['/var/log/app'] }
  const end: string = await eventsEndCursor('/var/log/app/events.jsonl', { grants: granted })
  const w: Wait = await waitFor({
    for: 'build', target: null, cursor: end, timeoutMs: parseDuration('90s') ?? 90000,
    read: (cursor) => readEvents('/var/log/app/events.jsonl', cursor, { grants: granted }),
    match: eventMatcher({ type: 'build.done' }),
    resume: (cursor) => ({ command: `ax wait --cursor ${cursor ?? ''}` }),
  })
  const state: WaitState = w.state
  const built = envelope({ for: 'x', state: 'gone', since: new Date().toISOString() })
  try {
    formatDuration(-1)
  } catch (e) {
    if (e instanceof WaitforError) console.log(e.code, e.field, e.rule)
  }
  console.log(state, isWait(built), validateWait(built).ok, waitText(built), waitExit(built, { ok: 0, error: 1 }, DEFAULT_WAIT_EXITS),
    formatDuration(1000), WAIT_STATES[0], WAIT_VERSION, WAIT_FLAGS.timeout.placeholder)
}
void main()
