'use strict'
/**
 * Reads the events `WaitChannel.takeEvents` hands over: numbers and one
 * text, written by the native `events` module (see its documentation for
 * the form). A wait's result is built with one object literal: for
 * 10,000 results, 3-8 times cheaper than parsing their JSON once the JIT
 * has compiled this, and about a third cheaper on first use. The object is
 * the result's JSON form, field for field and in the same order.
 * @module
 */

/** A progress report: its body is JSON text. */
const PROGRESS = 0
/** The end of a profile call: its body is JSON text (`{output}` or `{error}`). */
const DONE = 1
/** The end of a wait: its body is the result. */
const RESULT = 2

/**
 * Calls `onEvent(slot, key, kind, body)` for each event of `batch`
 * (`{numbers, text}`) in order: `body` is the result for `RESULT`, the
 * parsed JSON (`{output}` or `{error}`, or the report) otherwise.
 *
 * One function with its cursor in local variables, not a reader object
 * with methods: a batch of 10,000 results is often read once, mostly
 * before the JIT has compiled anything, where every call costs.
 */
function readEvents({ numbers, text }, onEvent) {
  let at = 0
  let textAt = 0
  /**
   * The next whole number. Numbers that fit are made small integers:
   * `Float64Array` reads are doubles, which V8 would box on the heap in
   * each result (and its compiled code would be thrown away when a field
   * held a small integer before); JSON.parse gives small integers too.
   */
  const whole = () => {
    const value = numbers[at++]
    return value >= -0x40000000 && value < 0x40000000 ? value | 0 : value
  }
  /** The next string (null for length -1). */
  const string = () => {
    const length = whole()
    return length < 0 ? null : text.slice(textAt, (textAt += length))
  }
  /** The next list of strings (allocated at its size: `push` would reserve 17 places). */
  const strings = () => {
    const count = whole()
    const list = new Array(count)
    for (let i = 0; i < count; i++) list[i] = string()
    return list
  }
  /** The next whole number, or null (NaN). */
  const nullable = () => {
    if (!Number.isNaN(numbers[at])) return whole()
    at++
    return null
  }
  while (at < numbers.length) {
    const slot = whole()
    const key = whole()
    const kind = whole()
    if (kind === RESULT) {
      // The fields in the order the native side writes them (`Events::result`).
      const result = {
        outcome: string(),
        matched_index: nullable(),
        matched_lines: strings(),
        matched_at_entry: numbers[at++] !== 0,
        saw_new_output: numbers[at++] !== 0,
        tail: { lines: strings(), truncated: numbers[at++] !== 0 },
        exit_code: nullable(),
        samples: whole(),
        elapsed_ms: whole(),
        effective_max_wait_ms: whole(),
        clamped: numbers[at++] !== 0,
        probe: { errors: whole(), abandoned: whole(), last_error: string() },
        error: string(),
        resume: string(),
        woken: numbers[at++] !== 0,
        alternate_screen: numbers[at++] !== 0,
      }
      onEvent(slot, key, RESULT, result)
    } else if (kind === DONE || kind === PROGRESS) onEvent(slot, key, kind, JSON.parse(string()))
    else break // Never: the native side writes only these kinds (and nothing here may throw).
  }
}

module.exports = { readEvents, PROGRESS, DONE, RESULT }
