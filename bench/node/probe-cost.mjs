// Cost of one JavaScript probe call through the engine on an idle loop:
// a wait whose probe answers `CALLS` times before the condition holds,
// woken after each sample so no interval is waited; reported per probe
// call, next to a plain `await` loop over the same function.
//
// Then throughput: `WAITS` waits (default 2,000) polling a JavaScript
// probe every 10 ms, i.e. 200,000 calls a second asked for: the calls a
// second served and the process CPU per call (all threads).
import { start } from 'libwaitfor'

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

const WAITS = Number(process.env.WAITS ?? 2000)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

async function polling(waits, holdMs = 2000) {
  let calls = 0
  const spec = { until: { matches: 'never' }, interval_ms: 10, max_wait_ms: 600000 }
  const handles = Array.from({ length: waits }, () =>
    start(spec, () => {
      calls++
      return 'no'
    }),
  )
  await sleep(500) // every wait is polling
  const [c0, cpu0, t0] = [calls, process.cpuUsage(), performance.now()]
  await sleep(holdMs)
  const [cpu, seconds, served] = [process.cpuUsage(cpu0), (performance.now() - t0) / 1e3, calls - c0]
  handles.forEach((h) => h.cancel())
  await Promise.all(handles.map((h) => h.result))
  return { perSec: served / seconds, asked: waits * 100, cpuUsPerCall: (cpu.user + cpu.system) / served }
}

await throughEngine() // warm up
const engine = await throughEngine()
const plain = await plainAwait()
const many = await polling(WAITS)
console.log(`probe call through the engine: ${engine.perCallUs.toFixed(1)} µs per call (${engine.samples} calls; goal <= 50 µs)`)
console.log(`plain await of the same probe:  ${plain.toFixed(2)} µs per call; ratio ${(engine.perCallUs / plain).toFixed(0)}x`)
console.log(
  `${WAITS} waits polling every 10 ms: ${(many.perSec / 1e3).toFixed(0)}k of ${(many.asked / 1e3).toFixed(0)}k calls/s served, ${many.cpuUsPerCall.toFixed(2)} µs CPU per call`,
)
