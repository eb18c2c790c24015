'use strict'
/**
 * One `abort` listener per AbortSignal however many waits share it: with one per wait,
 * Node warns of a leak (MaxListenersExceededWarning) once eleven waits share a signal.
 * @module
 */

/** @type {WeakMap<AbortSignal, {listener: () => void, callbacks: Set<() => void>}>} */
const watched = new WeakMap()

/**
 * Calls `callback` once when `signal` aborts (at once if it has); returns a
 * function that forgets it (`handle.result.finally(forget)`). The listener goes with the last one forgotten.
 */
function onAbort(signal, callback) {
  if (signal.aborted) {
    callback()
    return () => {}
  }
  let watch = watched.get(signal)
  if (watch === undefined) {
    const callbacks = new Set()
    const listener = () => {
      watched.delete(signal)
      // Every callback runs even when one throws; the first error is thrown after.
      let failed = null
      for (const call of callbacks) {
        try {
          call()
        } catch (error) {
          failed ??= { error }
        }
      }
      if (failed) throw failed.error
    }
    // Kept only once listened to: a throwing addEventListener leaves nothing behind.
    signal.addEventListener('abort', listener, { once: true })
    watched.set(signal, (watch = { listener, callbacks }))
  }
  const entry = () => callback() // its own entry: a callback given twice is called twice
  watch.callbacks.add(entry)
  return () => {
    if (!watch.callbacks.delete(entry) || watch.callbacks.size > 0 || watched.get(signal) !== watch) return
    watched.delete(signal)
    try {
      signal.removeEventListener('abort', watch.listener)
    } catch {} // one that cannot be removed stays, with nothing to call
  }
}

module.exports = { onAbort }
