'use strict'
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

/** A fresh temporary folder, removed when the process exits. */
function tempDir(prefix = 'waitfor-node-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Polls `check` until it is truthy or a generous deadline passes. */
async function eventually(check, { timeoutMs = 10000, everyMs = 10 } = {}) {
  const end = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > end) throw new Error('condition not reached in time')
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

module.exports = { tempDir, eventually, root: path.resolve(__dirname, '..'), repo: path.resolve(__dirname, '../../..') }
