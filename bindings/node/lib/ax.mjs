// ESM entry point of `libwaitfor/ax`: the same objects as lib/ax.js.
import cjs from './ax.js'

export const {
  waitFor,
  wait,
  isWait,
  validateWait,
  waitText,
  waitExit,
  DEFAULT_WAIT_EXITS,
  WAIT_STATES,
  WAIT_VERSION,
  WAIT_FLAGS,
  parseDuration,
  formatDuration,
  readEvents,
  eventsEndCursor,
  eventMatcher,
  WaitforError,
} = cjs
export default cjs
