'use strict'
/** This package's native add-on, or the clear error of lib/addon.js when none loads. */
module.exports = require('./addon.js').loadAddon(() => require('../index.js'), require('../package.json'), 'bindings/node')
