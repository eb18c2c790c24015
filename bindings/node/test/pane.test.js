'use strict'
// Pane waits and echo recording on a real tmux server (private socket).
const test = require('node:test')
const assert = require('node:assert/strict')
const { start, callTool, checkArguments, recordSendKeys, parsePaneId, WaitforError } = require('..')
const { TmuxServer } = require('./tmux.js')
const { eventually } = require('./helpers.js')

/** Sends keys the way a host's send_keys tool does: record, then send. */
function send(server, text) {
  recordSendKeys({ socketName: server.socketName, paneId: server.pane, keys: [text], literal: true, enter: true })
  server.type(text)
}

/**
 * Starts a pane wait; `sampled` resolves once the probe took its entry
 * snapshot (the first progress report follows the first sample), so that
 * keys sent after it are fresh.
 */
function paneWait(server, pattern, maxWaitMs) {
  let sampled
  const first = new Promise((resolve) => (sampled = resolve))
  const handle = start(
    {
      probe: { tmux: { pane_id: server.pane, socket_name: server.socketName } },
      until: { matches: pattern },
      interval_ms: 50,
      max_wait_ms: maxWaitMs,
    },
    null,
    { onProgress: () => sampled() },
  )
  return { result: handle.result, sampled: first }
}

test('text the host recorded as typed does not match; the real output does', async (t) => {
  const server = await TmuxServer.start()
  t.after(() => server.kill())
  // `echo ZZ-` is only on the typed command line; the output is `ZZ-42`.
  const echoOnly = paneWait(server, 'echo ZZ-', 1500)
  const output = paneWait(server, 'ZZ-42', 15000)
  await Promise.all([echoOnly.sampled, output.sampled])
  send(server, 'sleep 0.3; echo ZZ-$((6*7))')
  const out = await output.result
  assert.equal(out.outcome, 'matched')
  assert.deepEqual(out.matched_lines, ['ZZ-42'])
  const echo = await echoOnly.result
  assert.equal(echo.outcome, 'timeout', `matched the echo: ${JSON.stringify(echo.matched_lines)}`)
  assert.ok(server.screen().includes('echo ZZ-'), 'the typed line is on screen')
})

test('without a record, the typed line is new output and matches', async (t) => {
  const server = await TmuxServer.start()
  t.after(() => server.kill())
  const typed = paneWait(server, 'echo YY-', 15000)
  await typed.sampled
  server.type('echo YY-$((6*7))')
  const out = await typed.result
  assert.equal(out.outcome, 'matched')
  assert.match(out.matched_lines[0], /echo YY-/)
})

test('the libtmux-mcp wait_for_text profile sees output, not the recorded echo', async (t) => {
  const server = await TmuxServer.start()
  t.after(() => server.kill())
  send(server, 'sleep 0.5; echo sent-first')
  await eventually(() => server.screen().includes('echo sent-first'))
  const out = await callTool('libtmux-mcp/wait_for_text', {
    pane_id: server.pane, socket_name: server.socketName, patterns: ['sent-first'], timeout: 10,
  })
  assert.equal(out.outcome, 'matched')
  assert.deepEqual(out.matched_lines, ['sent-first'])
  assert.equal(out.pane_id, server.pane)
})

test('the libtmux-cxx profile waits on the pane of the current tmux server', async (t) => {
  const server = await TmuxServer.start()
  t.after(() => server.kill())
  // The C++ seed talks to the server of $TMUX (it has no socket argument).
  const saved = process.env.TMUX
  process.env.TMUX = `${server.run('display-message', '-p', '#{socket_path}').trim()},0,0`
  t.after(() => (saved === undefined ? delete process.env.TMUX : (process.env.TMUX = saved)))
  const call = callTool('libtmux-cxx/wait_for_text', { target: server.pane, text: 'cxx-done', timeout_ms: 15000 })
  send(server, 'sleep 0.3; echo cxx-$((1))-done; echo cxx-done')
  const out = await call
  assert.equal(out.matched, true, JSON.stringify(out))
  assert.equal(out.timed_out, false)
})

test('a malformed record is a typed error naming the field', () => {
  for (const [sent, field] of [
    [{ paneId: '1', keys: ['x'] }, 'paneId'],
    [{ paneId: '%1', keys: [1] }, 'keys'],
    [{ paneId: '%1', keys: 'x', literal: 'yes' }, 'literal'],
    [{ paneId: '%1', keys: 'x', socketName: 5 }, 'socketName'],
    [null, 'sent'],
  ]) {
    assert.throws(() => recordSendKeys(sent), (e) => e instanceof WaitforError && e.code === 'invalid_arguments' && e.field === field)
  }
})

test('a pane id is refused as the C door refuses it: core checks it, after the socket', () => {
  for (const paneId of ['1', '%', '%1 ', '%-1', '%4294967296']) {
    const parsed = (() => {
      try {
        parsePaneId(paneId)
      } catch (e) {
        return e
      }
    })()
    assert.throws(
      () => recordSendKeys({ paneId, keys: 'x' }),
      (e) => e instanceof WaitforError && e.code === 'invalid_arguments' && e.field === 'paneId' &&
        e.rule === 'invalid_pane_id' && e.message === parsed.message.replace(/^pane_id: /, 'paneId: '),
      paneId,
    )
  }
  // The socket first, as in C.
  assert.throws(() => recordSendKeys({ socketName: '/tmp/x', paneId: '1', keys: 'x' }), (e) => e.field === 'socketName')
})

test('an empty socket name is the default socket, as in C: with grants or without', () => {
  recordSendKeys({ socketName: '', paneId: '%99999', keys: 'x' })
  recordSendKeys({ socketName: '', paneId: '%99999', keys: 'x', grants: { tmuxSocketPaths: true } })
  const args = { pane_id: '%1', patterns: ['x'], socket_name: '' }
  assert.equal(checkArguments('libtmux-mcp/wait_for_text', args), 'libtmux-mcp/wait_for_text')
})

test('a socket name is refused as wait_for_text refuses it: a path unless granted, NUL, too long', () => {
  // A path used to reach any tmux server the host can connect to.
  for (const [socketName, rule] of [
    ['../../tmp/other.sock', 'not_granted'],
    ['/tmp/other.sock', 'not_granted'],
    ['w\0rk', 'contains_nul'],
    ['s'.repeat(104), 'out_of_range'],
  ]) {
    assert.throws(
      () => recordSendKeys({ socketName, paneId: '%99999', keys: 'x' }),
      (e) => e instanceof WaitforError && e.code === 'invalid_arguments' && e.field === 'socketName' && e.rule === rule,
      socketName,
    )
  }
  const paths = { grants: { tmuxSocketPaths: true } }
  recordSendKeys({ socketName: '/tmp/waitfor-no-such.sock', paneId: '%99999', keys: 'x', ...paths })
})

test('libtmux-mcp notices: progress at every poll with its message, the no-match and invalid-regex warnings', async (t) => {
  // libtmux-mcp's wait_for_text: ctx.report_progress(elapsed, effective_timeout,
  // "Waiting on pane %N: Xs elapsed, Ys left") before each poll, ctx.warning
  // "No match in pane %N before Ts timeout" when not found, and ctx.warning
  // "Invalid regex pattern: ..." before it refuses a pattern.
  const server = await TmuxServer.start()
  t.after(() => server.kill())
  const progress = []
  const logs = []
  const out = await callTool('libtmux-mcp/wait_for_text', {
    pane_id: server.pane, socket_name: server.socketName, patterns: ['never'], timeout: 0.5,
  }, { onProgress: (p) => progress.push(p), onLog: (l) => logs.push(l) })
  assert.equal(out.outcome, 'timeout')
  assert.ok(progress.length >= 2, JSON.stringify(progress))
  for (const p of progress) {
    assert.equal(p.total, 0.5)
    assert.match(p.message, new RegExp(`^Waiting on pane ${server.pane}: \\d+\\.\\ds elapsed, \\d+\\.\\ds left$`))
  }
  assert.deepEqual(logs, [{ level: 'warning', message: `No match in pane ${server.pane} before 0.5s timeout` }])

  const refused = []
  await assert.rejects(
    callTool('libtmux-mcp/wait_for_text', { pane_id: server.pane, patterns: ['('], regex: true }, { onLog: (l) => refused.push(l) }),
    (e) => e.code === 'invalid_arguments' && e.message.includes('Invalid regex pattern: '),
  )
  assert.equal(refused.length, 1)
  assert.equal(refused[0].level, 'warning')
  assert.ok(refused[0].message.startsWith('Invalid regex pattern: '), refused[0].message)
})
