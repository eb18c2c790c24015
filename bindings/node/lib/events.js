'use strict'
/**
 * Reads the events `WaitChannel.takeEvents` hands over: numbers and one
 * text, written by the native `events` module (see its documentation for
 * the form). A wait's result is built with one object literal: for
 * 10,000 results, 3-8 times cheaper than parsing their JSON once the JIT
 * has compiled this, and about a third cheaper on first use. The object is
 * the result's JSON form, field for field and in the same order.
 *
 * When 10,000 waits end together, each result's objects are copied by
 * the garbage collector while they are young: a string equal to the one
 * read before it for the same field is reused, not copied (see `string`).
 * And the first time in a process, V8 would not have compiled this reader
 * yet: `rehearse` has it compiled beforehand.
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
 * below are plain functions made once. Closures made per batch, with the
 * whole result built inside one function, cost V8 a big function to
 * compile three times (on-stack, then whole, then again once the result
 * fields' types settled): on a 2-core machine, 100 ms of compiling beside
 * the JavaScript thread when 10,000 waits end together. Nothing read here
 * calls back into `readEvents` (a report callback cannot reach it), so
 * one cursor is enough.
 */
let numbers = null
let text = ''
let at = 0
let textAt = 0

/**
 * The next whole number. Numbers that fit are made small integers:
 * `Float64Array` reads are doubles, which V8 would box on the heap in
 * each result (and its compiled code would be thrown away when a field
 * held a small integer before); JSON.parse gives small integers too.
 */
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
 * the same `field` is that string again, not a copy: when thousands of
 * waits end together their outcomes and lines mostly repeat, and each
 * string less is one object less for the garbage collector to copy while
 * the results are still young.
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
  return {
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
}

/**
 * Calls `onEvent(slot, key, kind, body)` for each event written as the
 * first `count` numbers of `eventNumbers` and `eventText`, in order:
 * `body` is the result for `RESULT`, the parsed JSON (`{output}` or
 * `{error}`, or the report) otherwise.
 */
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

/**
 * Made-up events, numbers and text, that get V8 ready before real ones
 * come (the seeding below and `rehearse`). Slot 0 and key 0: no wait has
 * key 0, so none could be reached even if one were delivered.
 */
const MADE_UP = {
  /** The end of a profile call whose body is `{}`. */
  done: [[0, 0, DONE, 2], '{}'],
  /** `matched`, each number that may be null left null: lines ["yes"], tail ["yes"], 1 sample. */
  matched: [[0, 0, RESULT, 7, NaN, 1, 3, 0, 0, 1, 3, 0, NaN, 1, 3, 120000, 0, 0, 0, -1, -1, -1, 0, 0], 'matchedyesyes'],
  /** `timeout` with every field set: index 0, no line, tail ["no"] truncated, exit code 1, probe error, error, resume. */
  timeout: [[0, 0, RESULT, 7, 0, 0, 0, 1, 1, 2, 1, 1, 2, 1000, 1000, 1, 1, 1, 4, 4, 5, 1, 1], 'timeoutnoboomlatewf1.x'],
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
 * Before any real event, both calls in `readEvents` have seen two
 * functions (V8 records call targets from a function's ninth call or so
 * on, hence the loop), so V8 inlines neither there:
 * - `read()` has seen both readers: compiled apart, `result` is compiled
 *   once, not again inside `readEvents` on its stack and then whole
 *   (compiling it three times cost 100 ms of a core beside the JavaScript
 *   thread when 10,000 waits ended together);
 * - `onEvent` has seen `ignore` and `discard`: the package's `deliver` is
 *   never inlined from made-up events (`rehearse` compiles `readEvents`),
 *   which would throw the compiled code away at the first real one.
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
 * Once per process, reads 4,000 made-up results, 250 per turn of the
 * event loop (about 1 ms each; up to 5 with a garbage collection),
 * delivering them nowhere: about what V8 needs to compile `result` and
 * `readEvents`. Without it, the first time 10,000 waits ended together
 * their results were read by the interpreter while the compiler worked
 * beside it, and the last of them came 30-40 ms later (p99 of
 * `bench/node/concurrent.mjs`). Two shapes of result, so V8 has seen
 * each field's kinds of value: a field that held only null and then a
 * number would cost compiled code.
 *
 * The package calls this once enough waits are pending that they may end
 * together; later calls do nothing.
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

module.exports = { readEvents, rehearse, rehearsedResults, PROGRESS, DONE, RESULT }
