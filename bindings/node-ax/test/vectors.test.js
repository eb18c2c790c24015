'use strict'
// The shared test vectors of the Ouro envelope and of durations
// (tests/vectors/*.json, kinds `envelope` and `duration`), through the
// package's API: each answer, as canonical JSON, must equal the vector's.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { validateWait, formatDuration, parseDuration, WaitforError } = require('@libwaitfor/ax')
const { repo, canonical } = require('../../node/test/helpers.js')

function answer(vector) {
  try {
    if (vector.kind === 'envelope') return validateWait(vector.envelope)
    // The seed's parseDuration answers null where the other languages raise (see `wanted`).
    if (vector.parse !== undefined) return { ok: parseDuration(vector.parse) }
    // "NaN", "Infinity" and "-Infinity" stand for the numbers JSON cannot hold.
    return { ok: formatDuration(typeof vector.format === 'string' ? Number(vector.format) : vector.format) }
  } catch (err) {
    if (!(err instanceof WaitforError)) throw err
    return { error: { code: err.code, field: err.field, rule: err.rule, message: err.message } }
  }
}

/**
 * The answer Node gives: the vector's own, except where the seed's contract is Node's API:
 * `parseDuration` answers `null` ("null when it is none of these") for a text the other
 * languages refuse with an error.
 */
function wanted(vector) {
  if (vector.kind === 'duration' && vector.parse !== undefined && vector.answer.error !== undefined) return { ok: null }
  return vector.answer
}

const dir = path.join(repo, 'tests/vectors')
const vectors = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
  .flatMap((file) => JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')).vectors)
  .filter((v) => v.kind === 'envelope' || v.kind === 'duration')

test('the envelope and duration vectors', () => {
  assert.ok(vectors.some((v) => v.kind === 'envelope') && vectors.some((v) => v.kind === 'duration'))
  const failures = vectors
    .map((vector) => [vector, canonical(answer(vector)), canonical(wanted(vector))])
    .filter(([, got, want]) => got !== want)
    .map(([vector, got, want]) => `${vector.name}:\n  got  ${got}\n  want ${want}`)
  assert.deepEqual(failures, [])
})
