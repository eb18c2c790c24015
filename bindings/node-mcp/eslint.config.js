'use strict'
// ESLint's recommended rules on the package's JavaScript and its tests (`npm run lint`).
const js = require('@eslint/js')
const globals = require('globals')

module.exports = [
  { ignores: ['node_modules/'] },
  js.configs.recommended,
  {
    languageOptions: { sourceType: 'commonjs', globals: globals.node },
    // Leaving fields out of a copy by destructuring them is an idiom.
    rules: { 'no-unused-vars': ['error', { ignoreRestSiblings: true }] },
  },
]
