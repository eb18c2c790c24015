'use strict'
// The shared test vectors (tests/vectors/*.json, see its README), run
// through the package's public API: each vector's whole answer, as
// canonical JSON, must equal its `answer` byte for byte.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { simulate, checkSpec, checkArguments, findProfile, parsePaneId, WaitforError } = require('..')
const { validateWait, formatDuration, parseDuration } = require('../lib/ax.js')
const { repo } = require('./helpers.js')

/** No whitespace, sorted keys (JavaScript numbers print whole values as integers already). */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort()
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/** The vector's whole answer, through the public API its kind names. */
function answer(vector) {
  try {
    switch (vector.kind) {
      case undefined:
        return simulate(vector)
      case 'spec':
        checkSpec(JSON.stringify(vector.spec))
        return { ok: true }
      case 'arguments':
        return { ok: checkArguments(vector.tool, JSON.stringify(vector.arguments)) }
      case 'profile': {
        const found = findProfile(vector.lookup)
        return { ok: { profile: found.profile, tool: found.tool.name } }
      }
      case 'pane_id':
        return { ok: parsePaneId(vector.pane_id) }
      case 'envelope':
        return validateWait(vector.envelope)
      case 'duration':
        // The seed's parseDuration answers null where the other languages raise (see `want`).
        if (vector.parse !== undefined) return { ok: parseDuration(vector.parse) }
        // "NaN", "Infinity" and "-Infinity" stand for the numbers JSON cannot hold.
        return { ok: formatDuration(typeof vector.format === 'string' ? Number(vector.format) : vector.format) }
      default:
        throw new Error(`unknown vector kind ${vector.kind}`)
    }
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
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
const docs = files.map((file) => [file, JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'))])

test('the shared vectors directory has at least 250 vectors', () => {
  assert.ok(docs.reduce((n, [, doc]) => n + doc.vectors.length, 0) >= 250)
})

for (const [file, doc] of docs) {
  test(`vectors: ${file}`, () => {
    const failures = []
    for (const vector of doc.vectors) {
      const got = canonical(answer(vector))
      const want = canonical(wanted(vector))
      if (got !== want) failures.push(`${vector.name}:\n  got  ${got}\n  want ${want}`)
    }
    assert.deepEqual(failures, [])
  })
}

test('canonical JSON sorts keys and writes whole numbers as integers', () => {
  assert.equal(canonical({ b: [2.0, 0.5, -3], a: { y: '\n', x: null } }), '{"a":{"x":null,"y":"\\n"},"b":[2,0.5,-3]}')
})

test('every error has the same shape: code, field, rule, message', () => {
  assert.throws(() => findProfile('wait_for_text'), (e) => e.code === 'unknown_profile' && e.field === null && e.rule === null)
  assert.throws(() => checkSpec({ until: {} }), (e) => e.code === 'invalid_spec' && e.field === 'until')
})
