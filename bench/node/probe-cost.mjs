// Cost of one JavaScript probe call through the engine on an idle loop:
// a wait whose probe answers `CALLS` times before the condition holds,
// woken after each sample so no interval is waited; reported per probe
// call, next to a plain `await` loop over the same function.
import { start } from 'waitfor'

const CALLS = Number(process.env.CALLS ?? 20000)

async function throughEngine() {
  let n = 0
  let handle
  const probe = () => {
    n++
    queueMicrotask(() => handle.wake())
    return n < CALLS ? 'no' : 'yes'
  }
  const began = process.hrtime.bigint()
  handle = start({ until: { matches: 'yes' }, interval_ms: 10, max_wait_ms: 600000 }, probe)
  const r = await handle.result
  const ns = Number(process.hrtime.bigint() - began)
  return { perCallUs: ns / 1e3 / r.samples, samples: r.samples }
}

async function plainAwait() {
  let n = 0
  const probe = async () => (++n < CALLS ? 'no' : 'yes')
  const began = process.hrtime.bigint()
  while ((await probe()) !== 'yes');
  return Number(process.hrtime.bigint() - began) / 1e3 / CALLS
}

await throughEngine() // warm up
const engine = await throughEngine()
const plain = await plainAwait()
console.log(`probe call through the engine: ${engine.perCallUs.toFixed(1)} µs per call (${engine.samples} calls; goal <= 50 µs)`)
console.log(`plain await of the same probe:  ${plain.toFixed(2)} µs per call; ratio ${(engine.perCallUs / plain).toFixed(0)}x`)
