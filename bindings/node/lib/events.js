'use strict'
/**
 * Reads the events `WaitChannel.takeEvents` hands over: numbers and one
 * text, in the form `src/events.rs` documents. A result is built with one
 * object literal, field for field the result's JSON form: 3-8 times
 * cheaper than parsing JSON for 10,000 results.
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

module.exports = { readEvents, DONE, RESULT }
