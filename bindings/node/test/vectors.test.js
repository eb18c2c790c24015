'use strict'
// The shared test vectors (tests/vectors/*.json, see its README), run
// through the package's public API: each vector's whole answer, as
// canonical JSON, must equal its `answer` byte for byte. The Ouro envelope
// and duration vectors are @libwaitfor/ax's (bindings/node-ax/test).
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { simulate, checkSpec, checkArguments, findProfile, parsePaneId, WaitforError } = require('..')
const { repo, canonical } = require('./helpers.js')

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
      default:
        throw new Error(`unknown vector kind ${vector.kind}`)
    }
  } catch (err) {
    if (!(err instanceof WaitforError)) throw err
    return { error: { code: err.code, field: err.field, rule: err.rule, message: err.message } }
  }
}

const AX_KINDS = ['envelope', 'duration']
const dir = path.join(repo, 'tests/vectors')
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
const docs = files.map((file) => [file, JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'))])

test('the shared vectors directory has at least 250 vectors', () => {
  assert.ok(docs.reduce((n, [, doc]) => n + doc.vectors.length, 0) >= 250)
})

for (const [file, doc] of docs) {
  test(`vectors: ${file}`, () => {
    const failures = []
    for (const vector of doc.vectors.filter((v) => !AX_KINDS.includes(v.kind))) {
      const got = canonical(answer(vector))
      const want = canonical(vector.answer)
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
