'use strict'
/**
 * Reads the events `WaitChannel.takeEvents` hands over: numbers and one
 * text, in the form `src/events.rs` documents. A result is built with one
 * object literal, field for field the result's JSON form: 3-8 times
 * cheaper than parsing JSON for 10,000 results. `rehearse` has V8 compile
 * this reader before thousands of real results come at once.
 * @module
 */

/** A progress report: its body is JSON text. */
const PROGRESS = 0
/** The end of a profile call: its body is JSON text (`{output}` or `{error}`). */
const DONE = 1
/** The end of a wait: its body is the result. */
const RESULT = 2

/**
 * The batch being read and where in it: module state, so the readers
 * are small functions made once (a closure per batch cost V8 100 ms of
 * compiling when 10,000 waits ended together). Nothing read here calls
 * back into `readEvents`, so one cursor is enough.
 */
let numbers = null
let text = ''
let at = 0
let textAt = 0

/** The next whole number, a small integer when it fits (as JSON.parse gives; a double would be boxed in each result). */
function whole() {
  const value = numbers[at++]
  return value >= -0x40000000 && value < 0x40000000 ? value | 0 : value
}

/** Fields whose strings repeat from one result to the next: each keeps the last one read. */
const OUTCOME = 0
const LINE = 1
const MESSAGE = 2
/** The last string read for each of those fields in this batch. */
const recent = ['', '', '']

/**
 * The next string (null for length -1). One equal to the last read for
 * the same `field` is that string again: results ending together mostly
 * repeat them, and each string less is one less for the collector to copy.
 */
function string(field) {
  const length = whole()
  if (length < 0) return null
  const start = textAt
  textAt += length
  const last = recent[field]
  if (last.length === length && text.startsWith(last, start)) return last
  return (recent[field] = text.slice(start, textAt))
}

/** The next list of strings (allocated at its size: `push` would reserve 17 places). */
function strings() {
  const count = whole()
  const list = new Array(count)
  for (let i = 0; i < count; i++) list[i] = string(LINE)
  return list
}

/** The next whole number, or null (NaN). */
function nullable() {
  if (!Number.isNaN(numbers[at])) return whole()
  at++
  return null
}

/** The next boolean. */
function flag() {
  return numbers[at++] !== 0
}

/** The next result: its fields in the order the native side writes them (`Events::result`). */
function result() {
  const read = {
    outcome: string(OUTCOME),
    matched_index: nullable(),
    matched_lines: strings(),
    matched_at_entry: flag(),
    saw_new_output: flag(),
    tail: { lines: strings(), truncated: flag() },
    exit_code: nullable(),
    samples: whole(),
    elapsed_ms: whole(),
    effective_max_wait_ms: whole(),
    clamped: flag(),
    probe: { errors: whole(), abandoned: whole(), last_error: string(MESSAGE) },
    error: string(MESSAGE),
    resume: string(MESSAGE),
    woken: flag(),
    alternate_screen: flag(),
  }
  // Absent when empty, as in the engine's JSON form.
  const notices = strings()
  if (notices.length > 0) read.notices = notices
  return read
}

/** Calls `onEvent(slot, key, kind, body)` for each event in the first `count` numbers and the text, in order. */
function readEvents(eventNumbers, count, eventText, onEvent) {
  numbers = eventNumbers
  text = eventText
  at = 0
  textAt = 0
  while (at < count) {
    const slot = whole()
    const key = whole()
    const kind = whole()
    const read = BODIES[kind]
    if (read === undefined) break // Never: the native side writes only these kinds (and nothing here may throw).
    onEvent(slot, key, kind, read())
  }
  // The batch is not kept alive until the next one (a long string read is a slice of it).
  numbers = null
  text = ''
  recent.fill('')
}

/** The next body that is JSON text. */
function json() {
  return JSON.parse(string(MESSAGE))
}

/** How each kind's body is read, by kind. */
const BODIES = []
BODIES[PROGRESS] = json
BODIES[DONE] = json
BODIES[RESULT] = result

/** Made-up events that get V8 ready before real ones come; no wait has key 0. */
const MADE_UP = {
  /** The end of a profile call whose body is `{}`. */
  done: [[0, 0, DONE, 2], '{}'],
  /** `matched`, each number that may be null left null: lines ["yes"], tail ["yes"], 1 sample. */
  matched: [[0, 0, RESULT, 7, NaN, 1, 3, 0, 0, 1, 3, 0, NaN, 1, 3, 120000, 0, 0, 0, -1, -1, -1, 0, 0, 0], 'matchedyesyes'],
  /** `timeout` with every field set: index 0, no line, tail ["no"] truncated, exit code 1, probe error, error, resume, notices ["note"]. */
  timeout: [[0, 0, RESULT, 7, 0, 0, 0, 1, 1, 2, 1, 1, 2, 1000, 1000, 1, 1, 1, 4, 4, 5, 1, 1, 1, 4], 'timeoutnoboomlatewf1.xnote'],
}

/** `count` made-up events, taking `events` in turn: `{numbers, text}` as `readEvents` reads them. */
function madeUp(events, count) {
  const numbers = []
  let text = ''
  for (let i = 0; i < count; i++) {
    const [fields, texts] = events[i % events.length]
    numbers.push(...fields)
    text += texts
  }
  return { numbers: new Float64Array(numbers), text }
}

/** Where made-up events go: nowhere. Two functions, for the seeding below. */
function ignore() {}
function discard() {}

/*
 * Both calls in `readEvents` see two functions before any real event, so
 * V8 inlines neither: `result` is compiled once on its own, and `deliver`
 * is never inlined from made-up events (its code would be thrown away at
 * the first real one).
 */
{
  const { numbers, text } = madeUp([MADE_UP.done, MADE_UP.matched], 2)
  for (let i = 0; i < 64; i++) readEvents(numbers, numbers.length, text, i % 2 === 0 ? ignore : discard)
}

/** Made-up results `rehearse` reads per turn of the event loop (`matched` and `timeout` in turn), and turns. */
const REHEARSAL_BATCH = 250
const REHEARSAL_TURNS = 16
let rehearsing = false
let rehearsed = 0

/**
 * Once per process, reads 4,000 made-up results of two shapes, 250 per
 * turn of the event loop, delivering them nowhere: V8 then has `result`
 * compiled before 10,000 waits end together (without it the last result
 * came 30-40 ms later). Later calls do nothing.
 */
function rehearse() {
  if (rehearsing) return
  rehearsing = true
  const { numbers, text } = madeUp([MADE_UP.matched, MADE_UP.timeout], REHEARSAL_BATCH)
  let turns = REHEARSAL_TURNS
  const turn = () => {
    readEvents(numbers, numbers.length, text, ignore)
    rehearsed += REHEARSAL_BATCH
    if (--turns > 0) setImmediate(turn)
  }
  setImmediate(turn)
}

/** How many made-up results `rehearse` has read so far (for tests). */
function rehearsedResults() {
  return rehearsed
}

module.exports = { readEvents, rehearse, rehearsedResults, DONE, RESULT }
