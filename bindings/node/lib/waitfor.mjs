// ESM entry point: the same objects as the CommonJS one (lib/waitfor.js).
import cjs from './waitfor.js'

export const {
  wait,
  start,
  WaitHandle,
  checkSpec,
  callTool,
  toolDefinitions,
  profiles,
  simulate,
  recordSendKeys,
  findProfile,
  checkArguments,
  parsePaneId,
  SPEC_SCHEMA,
  RESULT_SCHEMA,
  WaitforError,
} = cjs
export default cjs
