'use strict'
/**
 * The native add-on, through napi-rs's generated loader (`index.js`); when
 * none loads, the error names this host and the platforms with a prebuilt
 * add-on, napi-rs's error as its `cause`.
 */

/** `linux-x64-gnu` for this host: the suffix of its platform package. */
function hostPlatform() {
  const { platform, arch } = process
  if (platform !== 'linux') return `${platform}-${arch}`
  const report = process.report && process.report.getReport()
  const libc = report && report.header && report.header.glibcVersionRuntime ? 'gnu' : 'musl'
  return `${platform}-${arch}-${libc}`
}

function load() {
  try {
    return require('../index.js')
  } catch (cause) {
    const pkg = require('../package.json')
    const prebuilt = Object.keys(pkg.optionalDependencies || {}).map((name) => name.slice(pkg.name.length + 1))
    const host = hostPlatform()
    const why = prebuilt.includes(host)
      ? `its package ${pkg.name}-${host} did not load: reinstall without --omit=optional (or --no-optional) and check that it is there`
      : `prebuilt add-ons exist for ${prebuilt.join(', ') || 'no platform (a source checkout: run `npm run build`)'}`
    const error = new Error(`${pkg.name}: no native add-on for ${host}; ${why}`)
    error.code = 'ERR_LIBWAITFOR_NO_ADDON'
    error.cause = cause
    throw error
  }
}

module.exports = load()
