'use strict'
// ESLint's recommended rules on the package's hand-written JavaScript and its
// tests (`npm run lint`); napi-rs's generated loader (index.js) is not ours.
const js = require('@eslint/js')
const globals = require('globals')

module.exports = [
  { ignores: ['index.js', 'node_modules/', 'npm/'] },
  js.configs.recommended,
  {
    languageOptions: { sourceType: 'commonjs', globals: globals.node },
    // Leaving fields out of a copy by destructuring them is an idiom.
    rules: { 'no-unused-vars': ['error', { ignoreRestSiblings: true }] },
  },
]
