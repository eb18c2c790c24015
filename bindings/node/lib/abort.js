'use strict'
/**
 * One `abort` listener per AbortSignal, however many waits share it. With a
 * listener per wait, Node warns of a leak (MaxListenersExceededWarning) once
 * eleven waits share a signal, as when a server aborts all its waits with
 * one controller.
 * @module
 */

/** @type {WeakMap<AbortSignal, {listener: () => void, callbacks: Set<() => void>}>} */
const watched = new WeakMap()

/**
 * Calls `callback` once when `signal` aborts (at once if it has). Returns a
 * function that forgets the callback; the signal's listener goes with the
 * last one forgotten.
 *
 * @example
 * const forget = onAbort(controller.signal, () => handle.cancel())
 * handle.result.finally(forget)
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
      // Every wait on the signal hears, even when a callback before it
      // throws; the first error is thrown after all have run.
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
    watch = { listener, callbacks }
    // Kept only once listened to: an addEventListener that throws leaves
    // nothing behind for the next wait on the signal to trust.
    signal.addEventListener('abort', listener, { once: true })
    watched.set(signal, watch)
  }
  // Its own entry: the same callback given twice is called twice.
  const entry = () => callback()
  watch.callbacks.add(entry)
  return () => {
    watch.callbacks.delete(entry)
    if (watch.callbacks.size === 0 && watched.get(signal) === watch) {
      watched.delete(signal)
      try {
        signal.removeEventListener('abort', watch.listener)
      } catch {
        // A listener that cannot be removed stays, with no callback left to call.
      }
    }
  }
}

module.exports = { onAbort }
