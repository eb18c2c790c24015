// Cost of one JavaScript probe call through the engine on an idle loop:
// a wait whose probe answers `CALLS` times before the condition holds,
// woken after each sample so no interval is waited; reported per probe
// call, next to a plain `await` loop over the same function.
//
// Then throughput: `WAITS` waits (default 2,000) polling a JavaScript
// probe every 10 ms, i.e. 200,000 calls a second asked for: the calls a
// second served and the process CPU per call (all threads). Printed as rows
// of the common results table (rows.mjs).
import { start } from 'libwaitfor'
import { HEADER, row } from './rows.mjs'

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
const us = (digits) => (v) => `${v.toFixed(digits)} µs`
console.log(HEADER)
console.log(
  row(`Node, one JS probe call through the engine, idle loop (${engine.samples} calls)`, engine.perCallUs, 'plain await of the same function', plain, us(2), {
    goal: '<= 50 µs',
    met: engine.perCallUs <= 50,
  }),
)
console.log(
  row(
    `Node, ${WAITS.toLocaleString('en-US')} waits polling a JS probe every 10 ms: calls served a second (${many.cpuUsPerCall.toFixed(2)} µs CPU per call)`,
    many.perSec,
    'calls asked for',
    many.asked,
    (v) => `${(v / 1e3).toFixed(0)}k`,
    { better: 'higher' },
  ),
)
