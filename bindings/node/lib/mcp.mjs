// ESM entry point of `libwaitfor/mcp`: the same objects as lib/mcp.js.
import cjs from './mcp.js'

export const { registerWaitTools } = cjs
export default cjs
