'use strict'
/**
 * A real tmux server on a private socket (`tmux -L <unique> -f /dev/null`)
 * with one `sh` pane, for pane tests. Killed when the process exits.
 */
const { execFileSync } = require('node:child_process')
const { eventually } = require('./helpers.js')

let next = 0

class TmuxServer {
  /** Starts a server with one 60x10 `sh` pane whose prompt is `$ `. */
  static async start() {
    const server = new TmuxServer(`waitfor-node-${process.pid}-${next++}`)
    server.run('new-session', '-d', '-s', 'main', '-x', '60', '-y', '10', "env PS1='$ ' sh")
    server.pane = server.run('display-message', '-p', '-t', 'main', '#{pane_id}').trim()
    process.on('exit', () => server.kill())
    await eventually(() => server.screen().includes('$'))
    return server
  }

  constructor(socketName) {
    this.socketName = socketName
    this.pane = ''
  }

  /** Runs one tmux command on this server and returns its stdout. */
  run(...args) {
    return execFileSync('tmux', ['-L', this.socketName, '-f', '/dev/null', ...args], { encoding: 'utf8' })
  }

  /** The visible screen. */
  screen() {
    return this.run('capture-pane', '-p', '-t', this.pane)
  }

  /** Types `text` and Enter without recording it (a user typing). */
  type(text) {
    this.run('send-keys', '-t', this.pane, '-l', text)
    this.run('send-keys', '-t', this.pane, 'Enter')
  }

  kill() {
    try {
      this.run('kill-server')
    } catch {
      // already gone
    }
  }
}

module.exports = { TmuxServer }
