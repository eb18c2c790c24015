'use strict'
// waitFor on a careless host's clock: `now` (Date.now by default) may be
// set back while a wait runs.

const test = require('node:test')
const assert = require('node:assert/strict')
const ax = require('@libwaitfor/ax')

const HOUR = 3600e3

test('waitFor: a clock set back an hour mid-wait neither sleeps the hour nor stops the reads', { timeout: 20000 }, async () => {
  let readings = 0
  let reads = 0
  const started = Date.now()
  // The default sleep (a timer), on a clock set back after its first reading.
  const now = () => (readings++ === 0 ? Date.now() : Date.now() - HOUR)
  const w = await ax.waitFor({
    for: 'x', target: null, cursor: 'c0', timeoutMs: 300, intervalMs: 50, now,
    read: async (cursor) => (reads++, { events: [], cursor }),
    resume: (cursor) => ({ command: `again ${cursor}` }),
  })
  const took = Date.now() - started
  assert.equal(w.state, 'timed-out')
  // Within the limit and a generous margin, not an hour; reads went on.
  assert.ok(took < 300 + 5000, `the wait took ${took} ms`)
  assert.ok(reads >= 2, `${reads} reads`)
  assert.equal(Date.parse(w.until) - Date.parse(w.since), 300)
})
