'use strict'
/**
 * Core's shared surface, the same in every language: finding a profile by
 * profile id or tool name, checking a tool call without running it, parsing
 * a tmux pane id.
 * @module
 */

const binding = require('./native.js')
const { native, toJson } = require('./errors.js')
const { grantsJson } = require('./grants.js')

/**
 * A profile, `{profile, tool}`, by its id (`aura/wait_for`) or by a tool
 * name only one profile has (`wait_for`); throws a `WaitforError`
 * (`unknown_profile`) otherwise.
 *
 * @param {string} name
 * @returns {{profile: string, tool: object}}
 * @example
 * findProfile('wait_for').profile // 'aura/wait_for'
 */
function findProfile(name) {
  return native(() => binding.findProfile(String(name)))
}

/**
 * The profile id of a tool call `callTool` would accept; throws what it
 * would refuse before running (`invalid_arguments` with `field` and
 * `rule`, `unknown_profile`).
 *
 * @param {string} name a profile id or a unique tool name
 * @param {object|string} args the tool's arguments
 * @param {{grants?: object}} [options] as for `callTool`
 * @returns {string}
 * @example
 * checkArguments('wait_for', { probe: { tool: 't', args: {} }, until: { matches: 'x' } }) // 'aura/wait_for'
 */
function checkArguments(name, args, options = {}) {
  const text = toJson('arguments', args)
  const granted = grantsJson(options && options.grants)
  return native(() => binding.checkArguments(String(name), text, granted))
}

/**
 * The number of a tmux pane id, `%` then digits; throws a `WaitforError`
 * (`invalid_arguments`, field `pane_id`, rule `invalid_pane_id`) for
 * anything else.
 *
 * @param {string} paneId
 * @returns {number}
 * @example
 * parsePaneId('%12') // 12
 */
function parsePaneId(paneId) {
  return native(() => binding.parsePaneId(String(paneId)))
}

module.exports = { findProfile, checkArguments, parsePaneId }
