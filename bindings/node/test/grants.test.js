'use strict'
// Built-in probes reach only what the host grants: nothing by default, for
// the spec API and for profile calls.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { wait, start, callTool } = require('..')
const { tempDir } = require('./helpers.js')

const shell = { probe: { command: { argv: ['sh', '-c', 'id'] } }, until: { matches: 'uid' }, max_wait_ms: 5000 }
const shadow = { probe: { file: { path: '/etc/shadow' } }, until: { matches: 'root' }, max_wait_ms: 5000 }
const aura = (tool, args) => ({ probe: { tool, args }, until: { matches: 'uid|root|ready' }, poll_sec: 1, max_wait_sec: 5 })
// A spec reaching beyond the grants is `invalid_spec`; a tool call's arguments, `invalid_arguments`.
const notGranted = (field, code = 'invalid_spec') => (e) => e.code === code && e.rule === 'not_granted' && e.field === field

test('the spec API runs no command and reads no file by default', async () => {
  await assert.rejects(wait(shell), notGranted('probe.command.argv'))
  await assert.rejects(wait(shadow), notGranted('probe.file.path'))
  await assert.rejects(start(shell).result, notGranted('probe.command.argv'))
  await assert.rejects(wait(shell, null, { grants: { commands: ['echo'] } }), notGranted('probe.command.argv'))
})

test("AURA's built-in run_command and read_file are off by default", async () => {
  await assert.rejects(callTool('aura/wait_for', aura('run_command', { argv: ['sh', '-c', 'id'] })), (e) =>
    notGranted('probe.args.argv', 'invalid_arguments')(e) && /has not granted/.test(e.message))
  await assert.rejects(callTool('aura/wait_for', aura('read_file', { path: '/etc/shadow' })), notGranted('probe.args.path', 'invalid_arguments'))
})

test('a grant opens exactly what it names', async () => {
  const dir = tempDir()
  const status = path.join(dir, 'status')
  fs.writeFileSync(status, 'service ready\n')
  const grants = { commands: ['echo'], fileRoots: [dir] }
  const read = await callTool('aura/wait_for', aura('read_file', { path: status }), { grants })
  assert.equal(read.last_observation, 'service ready\n')
  const ran = await callTool('aura/wait_for', aura('run_command', { argv: ['echo', 'ready'] }), { grants })
  assert.equal(ran.reason, 'matched')
  await assert.rejects(callTool('aura/wait_for', aura('read_file', { path: '/etc/shadow' }), { grants }), notGranted('probe.args.path', 'invalid_arguments'))
  await assert.rejects(callTool('aura/wait_for', aura('read_file', { path: dir }), { grants }), (e) => /a directory/.test(e.message))
  const r = await wait({ probe: { command: { argv: ['echo', 'ready'] } }, until: { matches: 'ready' }, max_wait_ms: 5000 }, null, { grants })
  assert.equal(r.outcome, 'matched')
  const all = await wait(shell, null, { grants: { commands: 'any' } })
  assert.equal(all.outcome, 'matched')
})

test('grants are checked field by field', async () => {
  const bad = [
    [{ commands: 'all' }, 'options.grants.commands'],
    [{ commands: ['sh', 1] }, 'options.grants.commands'],
    [{ fileRoots: '/tmp' }, 'options.grants.fileRoots'],
    [{ tmuxSocketPaths: 'yes' }, 'options.grants.tmuxSocketPaths'],
    [{ file_roots: [] }, 'options.grants.file_roots'],
    ['any', 'options.grants'],
  ]
  for (const [grants, field] of bad) {
    await assert.rejects(wait(shell, null, { grants }), (e) => e.code === 'invalid_arguments' && e.field === field, JSON.stringify(grants))
    await assert.rejects(callTool('aura/wait_for', aura('run_command', { argv: ['echo'] }), { grants }), (e) => e.field === field)
  }
})

test('a refused grants option names its field once, and an option too deep for JSON is named as options.grants', async () => {
  const spec = { until: { matches: 'x' }, max_wait_ms: 5000 }
  const refused = (field, message) => (e) => e.code === 'invalid_arguments' && e.field === field && e.message === message
  await assert.rejects(wait(spec, () => 'x', { grants: { fileRoots: 'x' } }), refused('options.grants.fileRoots', 'options.grants.fileRoots: must be a list of directory paths'))
  await assert.rejects(wait(spec, () => 'x', { grants: { tmuxSocketPaths: 1 } }), refused('options.grants.tmuxSocketPaths', 'options.grants.tmuxSocketPaths: must be true or false'))
  let deep = {}
  for (let i = 0; i < 200; i++) deep = { a: deep }
  await assert.rejects(wait(spec, () => 'x', { grants: deep }), (e) => e.code === 'invalid_arguments' && e.field === 'options.grants' && e.rule === 'invalid_json')
})
