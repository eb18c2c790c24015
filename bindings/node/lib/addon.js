'use strict'
/**
 * Loads a package's native add-on (libwaitfor's, @libwaitfor/ax's) through napi-rs's generated loader; when none loads, an
 * error with code `ERR_LIBWAITFOR_NO_ADDON` names this host, the prebuilt platforms and what to do (test/loader.test.js).
 */

/** Why no add-on of package `name` (sources in `dir`) loaded on `host`; `prebuilt` is empty in a source checkout. */
function noAddonMessage(name, dir, host, prebuilt) {
  if (prebuilt.length === 0) {
    return `${name}: no native add-on for this host (${host}) in this source checkout: build it with a Rust toolchain (\`npm ci && npm run build\` in ${dir})`
  }
  if (prebuilt.includes(host)) {
    return `${name}: the native add-on for this host (${host}) is in the package ${name}-${host}, which did not load. npm installs it as an optional dependency: ` +
      `reinstall ${name} without --omit=optional (or --no-optional), on the platform that runs it, and see the cause below`
  }
  return `${name}: no prebuilt native add-on for this host (${host}); there are prebuilt add-ons for ${prebuilt.join(', ')}. Elsewhere, build it from the ` +
    `${name} sources with a Rust toolchain: in ${dir}, \`npm ci && npm run build\`, then install that folder (\`npm install path/to/${dir}\`)`
}

/**
 * The add-on that `load` (a call of the package's generated loader) returns,
 * for the package whose package.json is `pkg` and whose sources are in the
 * repository's folder `dir`; napi-rs's error is the `cause` of its own.
 */
function loadAddon(load, pkg, dir) {
  try {
    return load()
  } catch (cause) {
    const prebuilt = Object.keys(pkg.optionalDependencies || {}).map((name) => name.slice(pkg.name.length + 1))
    // The platform package's suffix for this host (`linux-x64-gnu`).
    const { platform, arch } = process
    const libc = platform === 'linux' ? (process.report?.getReport().header?.glibcVersionRuntime ? '-gnu' : '-musl') : ''
    const error = new Error(noAddonMessage(pkg.name, dir, `${platform}-${arch}${libc}`, prebuilt), { cause })
    error.code = 'ERR_LIBWAITFOR_NO_ADDON'
    throw error
  }
}

module.exports = { loadAddon }
