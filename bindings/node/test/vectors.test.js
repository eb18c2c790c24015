'use strict'
// The shared test vectors (tests/vectors/*.json), run through the package:
// every binding must give each vector's expected answer (subset match).
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { simulate } = require('..')
const { repo } = require('./helpers.js')

/** Every field of `want` is in `got` with the same value; objects field by field. */
function contains(got, want, at, failures) {
  if (want !== null && typeof want === 'object' && !Array.isArray(want)) {
    if (got === null || typeof got !== 'object' || Array.isArray(got)) {
      failures.push(`${at}: got ${JSON.stringify(got)}, want an object`)
      return
    }
    for (const [key, value] of Object.entries(want)) {
      if (!(key in got)) failures.push(`${at}.${key}: missing, want ${JSON.stringify(value)}`)
      else contains(got[key], value, `${at}.${key}`, failures)
    }
  } else {
    try {
      assert.deepStrictEqual(got, want)
    } catch {
      failures.push(`${at}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`)
    }
  }
}

const dir = path.join(repo, 'tests/vectors')
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()

test('the shared vectors directory has vectors', () => {
  assert.ok(files.length > 0)
})

for (const file of files) {
  const doc = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'))
  test(`vectors: ${file}`, () => {
    const failures = []
    for (const vector of doc.vectors) {
      const answer = simulate(vector)
      contains(answer, vector.expect, vector.name, failures)
    }
    assert.deepEqual(failures, [])
    assert.ok(doc.vectors.length > 0)
  })
}
