'use strict'
// Finished waits reach JavaScript as the engine's JSON form: every field
// of a result, in its order, including non-ASCII text, nulls and many
// results ending together; profile ends and progress reports beside them.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const Ajv = require('ajv/dist/2020')
const { start, callTool, RESULT_SCHEMA } = require('..')
const { eventually, tempDir } = require('./helpers.js')

const validResult = new Ajv({ strict: false }).compile(RESULT_SCHEMA)

/** Checks `r` against the result schema and its field order against the JSON form's. */
function wellFormed(r) {
  assert.ok(validResult(r), JSON.stringify(validResult.errors))
  assert.deepEqual(Object.keys(r), RESULT_SCHEMA.required)
}

test('every field of results ending together: text, numbers, nulls, non-ASCII', async () => {
  const dir = tempDir()
  const file = path.join(dir, 'log')
  fs.writeFileSync(file, 'old\n')
  // Polled once a minute: only the file's watch can wake it in time, so `woken` is known.
  const granted = { grants: { fileRoots: [dir], commands: ['sh'] } }
  // Its first sample sets where the file's new bytes start: the append below waits for it.
  let sampled = false
  const fileWait = start({ probe: { file: { path: file } }, until: { matches: 'new' }, interval_ms: 60000, progress_every_ms: 10, max_wait_ms: 120000 }, null, {
    ...granted,
    onProgress: () => (sampled = true),
  })
  const resumable = start({ probe: { file: { path: file } }, view: 'fresh', until: { matches: 'never' }, interval_ms: 10, max_wait_ms: 60000 }, null, granted)
  const [matched, failed, exited] = await Promise.all([
    start({ until: { patterns: ['nope', 'ready ✓'] }, interval_ms: 10, max_wait_ms: 400000 }, () => 'héllo ☃ 𝄞\nready ✓ 𝄞').result,
    start({ until: { matches: 'x' }, interval_ms: 10, max_wait_ms: 60000 }, () => {
      throw new Error('bøom 𝄞')
    }).result,
    start({ probe: { command: { argv: ['sh', '-c', 'echo ünï; exit 3'] } }, until: { exit_code: 3 }, interval_ms: 10, max_wait_ms: 60000 }, null, granted)
      .result,
  ])
  for (const r of [matched, failed, exited]) wellFormed(r)
  assert.equal(matched.outcome, 'matched')
  assert.equal(matched.matched_index, 1)
  assert.deepEqual(matched.matched_lines, ['ready ✓ 𝄞'])
  assert.deepEqual(matched.tail, { lines: ['héllo ☃ 𝄞', 'ready ✓ 𝄞'], truncated: false })
  assert.equal(matched.samples, 1)
  assert.equal(matched.effective_max_wait_ms, 300000)
  assert.equal(matched.clamped, true)
  assert.deepEqual(
    [matched.exit_code, matched.error, matched.resume, matched.probe.last_error, matched.woken, matched.alternate_screen],
    [null, null, null, null, false, false],
  )

  assert.equal(failed.outcome, 'probe_error')
  assert.deepEqual(failed.probe, { errors: 1, abandoned: 0, last_error: 'bøom 𝄞' })
  assert.equal(failed.error, 'probe failed: bøom 𝄞')
  assert.deepEqual([failed.matched_index, failed.matched_lines, failed.samples], [null, [], 0])

  assert.equal(exited.outcome, 'matched')
  assert.equal(exited.exit_code, 3)
  assert.deepEqual(exited.tail.lines, ['ünï'])

  await eventually(() => sampled)
  fs.appendFileSync(file, 'new ✓\n')
  const appended = await fileWait.result
  wellFormed(appended)
  assert.equal(appended.outcome, 'matched')
  assert.deepEqual(appended.matched_lines, ['new ✓'])
  assert.equal(appended.saw_new_output, true)
  assert.equal(appended.woken, true) // The file's watch woke it.
  resumable.cancel()
  const cancelled = await resumable.result
  wellFormed(cancelled)
  assert.equal(cancelled.outcome, 'cancelled')
  assert.match(cancelled.resume, /^wf1\./)
})

test('2,000 results of different lengths each keep their own fields', async () => {
  const N = 2000
  const results = await Promise.all(
    Array.from({ length: N }, (_, i) => {
      // Lines of 0 to 4 characters, some non-ASCII: each result keeps its own.
      const text = `${'é'.repeat(i % 5)}\nwait ${i} 𝄞 done`
      return start({ until: { matches: 'done' }, interval_ms: 10, max_wait_ms: 60000 }, () => text).result
    }),
  )
  results.forEach((r, i) => {
    assert.deepEqual(r.matched_lines, [`wait ${i} 𝄞 done`])
    assert.deepEqual(r.tail.lines, i % 5 === 0 ? ['', `wait ${i} 𝄞 done`] : ['é'.repeat(i % 5), `wait ${i} 𝄞 done`])
  })
  wellFormed(results[N - 1])
})

test('profile ends and progress reports arrive beside results', async () => {
  const progress = []
  const [output, result] = await Promise.all([
    callTool('aura/wait_for', { probe: { tool: 'status', args: {} }, until: { matches: 'up' }, poll_sec: 1, max_wait_sec: 5 }, { tools: () => 'service up ✓' }),
    start({ until: { matches: 'third' }, interval_ms: 10, max_wait_ms: 60000, progress_every_ms: 10 }, ({ sample }) => (sample < 3 ? `sample ${sample}` : 'third'), {
      onProgress: (p) => progress.push(p),
    }).result,
  ])
  assert.equal(output.reason, 'matched')
  assert.equal(result.outcome, 'matched')
  wellFormed(result)
  assert.ok(progress.length >= 1, 'no progress report arrived')
  assert.ok(progress.every((p) => typeof p.samples === 'number'), JSON.stringify(progress))
})
