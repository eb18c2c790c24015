'use strict'
/**
 * The `grants` option every entry point takes: what built-in probes and
 * event reads may reach.
 * @module
 */

const { WaitforError } = require('./errors.js')

function invalid(field, message, rule = 'wrong_type') {
  return new WaitforError({ code: 'invalid_arguments', message: `${field}: ${message}`, field, rule })
}

/**
 * The `grants` option as the JSON text the engine reads, checked: what
 * built-in probes may reach (nothing when absent).
 */
function grantsJson(grants) {
  if (grants === undefined || grants === null) return undefined
  const bad = (field, message) => invalid(`options.grants${field}`, message)
  if (typeof grants !== 'object' || Array.isArray(grants)) throw bad('', 'must be an object')
  const { commands = 'none', fileRoots = [], tmuxSocketPaths = false, ...rest } = grants
  const unknown = Object.keys(rest)
  if (unknown.length > 0) {
    throw invalid(`options.grants.${unknown[0]}`, 'unknown; grants take commands, fileRoots and tmuxSocketPaths', 'unknown_field')
  }
  const names = (value) => Array.isArray(value) && value.every((item) => typeof item === 'string' && item !== '')
  if (commands !== 'none' && commands !== 'any' && !names(commands)) {
    throw bad('.commands', "must be 'none', 'any' or an array of program names")
  }
  if (!names(fileRoots)) throw bad('.fileRoots', 'must be an array of directory paths')
  if (typeof tmuxSocketPaths !== 'boolean') throw bad('.tmuxSocketPaths', 'must be a boolean')
  return JSON.stringify({ commands, file_roots: fileRoots, tmux_socket_paths: tmuxSocketPaths })
}

module.exports = { grantsJson }
