'use strict'
// Once 1,000 waits are pending, the package reads 4,000 made-up results
// over a few turns of the event loop, so that V8 compiles its result
// reader before thousands of real results come at once (`rehearse` in
// lib/events.js). Its own process: the count is per process.
const test = require('node:test')
const assert = require('node:assert/strict')
const { start } = require('..')
const { rehearsedResults } = require('../lib/events.js')
const { eventually } = require('./helpers.js')

/** Lets `count` turns of the event loop go by. */
async function turns(count) {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve))
}

const SPEC = { until: { matches: 'ready' }, interval_ms: 60000, max_wait_ms: 120000 }
const notYet = () => 'not yet'

test('the 1,000th pending wait starts the one rehearsal; its made-up results reach no wait', async () => {
  const waits = Array.from({ length: 999 }, () => start(SPEC, notYet))
  let ended = 0
  const counted = (wait) => wait.result.finally(() => ended++)
  const results = waits.map(counted)
  await turns(20)
  assert.equal(rehearsedResults(), 0, '999 pending waits rehearse nothing')

  const thousandth = start(SPEC, notYet)
  results.push(counted(thousandth))
  waits.push(thousandth)
  await eventually(() => rehearsedResults() === 4000)
  // More waits later start no second rehearsal.
  const more = Array.from({ length: 1000 }, () => start(SPEC, notYet))
  results.push(...more.map(counted))
  waits.push(...more)
  await turns(20)
  assert.equal(rehearsedResults(), 4000)
  assert.equal(ended, 0, 'a made-up result ended a wait')

  for (const wait of waits) wait.cancel()
  for (const result of await Promise.all(results)) {
    assert.equal(result.outcome, 'cancelled')
    assert.deepEqual(result.matched_lines, [])
  }
})
