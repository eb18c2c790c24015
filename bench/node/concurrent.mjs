// 10,000 concurrent waits at a 50 ms interval, side by side: the engine
// with JavaScript probes, the engine with its built-in file probe (probes
// that never enter JavaScript), p-wait-for and async-wait-until. Each
// scenario runs in its own process: the waits poll a condition that stays
// false for HOLD_MS, then becomes true for all of them.
//
// The reaction is what a user waits through: from the instant the
// condition becomes true to each Promise settling. The condition changes
// outside the waits, as a real one does: a thread of its own (the
// flipper, a worker) sets a shared flag, which the JavaScript probes read,
// and appends to the file the file probe reads, at the planned instant,
// whether or not the main thread is free then; the reaction runs from the
// time the flipper noted just before. (A flip by a timer on the main
// thread would favour a loop saturated by polls: the timer runs late,
// right before a batch of overdue polls, and the loop's lag drops out of
// the figure.)
//
// Where the flip falls within the 50 ms interval decides a reaction: waits
// started in one tick poll together, so a flip just before their poll is
// seen at once and one just after it a whole interval late. Each run
// flips at another phase, spread evenly over the interval (run i of N at
// (i + 1/2) / N of it), and the table gives the medians.
//
// Printed per scenario: extra RSS once the waits run, CPU per waiting
// second (user+system during the hold), the polls each wait really made
// per second (probe calls over the waits' lives, start to settle; asked:
// 1000 / interval), how busy the event loop was during the hold (the share
// of time the JavaScript thread was not idle), the p50/p99 reaction (goal
// p99 <= interval + 10 ms), the share of the machine's CPU time the host
// stole from this virtual machine from the flip to the last settle (Linux,
// in 10 ms ticks; a reaction measured under much steal says little), then
// the rows of the common results table (rows.mjs): each engine scenario
// beside each peer, with its goal: p99 <= interval + 10 ms; memory and CPU
// below both peers and at most 0.2x p-wait-for's; p50 and p99 at most
// p-wait-for's.
//
// Read the reaction beside the polls and the loop: a loop near 100% busy
// polls less often than asked, so at any moment many waits are overdue;
// once the condition holds, the loop runs through those as fast as it can
// (a poll that succeeds is cheaper than one that sleeps again), which can
// beat half an interval, while the application's own timers and I/O wait
// behind the polls.
//
//   node concurrent.mjs                 # every scenario, WAITS=10000, RUNS=5
//   WAITS=1000 node concurrent.mjs      # another count
//   ROUNDS=3 node concurrent.mjs        # the last of 3 rounds in each process
//                                       # (its code compiled by the first ones)
//   RUNS=10 node concurrent.mjs         # 10 processes per scenario, taking
//                                       # turns, each flipping at its own
//                                       # phase; medians, and each run's p99
//   SCENARIOS=engine-js,p-wait-for node concurrent.mjs   # only these
//   THREADS=1 node concurrent.mjs       # also CPU ms per thread group from the
//                                       # flip to the last settle (Linux /proc)
//   node concurrent.mjs engine-js 1000  # one scenario (child mode)
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { start } from 'libwaitfor'
import pWaitFor from 'p-wait-for'
import { waitUntil } from 'async-wait-until'
import { HEADER, row as tableRow } from './rows.mjs'

const INTERVAL_MS = 50
const HOLD_MS = Number(process.env.HOLD_MS ?? 3000)
const ROUNDS = Number(process.env.ROUNDS ?? 1)
const LIMIT_MS = 120_000

/** The condition of the JavaScript probes: the flag the flipper sets; counts its calls. */
function isOn(flag) {
  flag.polls++
  return Atomics.load(flag.on, 0) === 1
}

/**
 * The flipper: a thread of its own that, at a given `process.hrtime`
 * instant, notes the time, sets the shared flag and appends `yes` to the
 * flag file, on time however busy the waits keep the main thread.
 */
const FLIPPER = `
const { parentPort, workerData } = require('node:worker_threads')
const fs = require('node:fs')
const on = new Int32Array(workerData, 0, 1)
const flippedNs = new Float64Array(workerData, 8, 1)
parentPort.on('message', ({ atNs, file }) => {
  setTimeout(() => {
    flippedNs[0] = Number(process.hrtime.bigint())
    Atomics.store(on, 0, 1)
    fs.appendFileSync(file, 'yes\\n')
  }, Math.max(0, (atNs - Number(process.hrtime.bigint())) / 1e6))
})`

const SCENARIOS = {
  /** The engine calling a JavaScript probe per wait. */
  'engine-js': (n, flag) =>
    Array.from({ length: n }, () => start({ until: { matches: 'yes' }, interval_ms: INTERVAL_MS, max_wait_ms: LIMIT_MS }, () => (isOn(flag) ? 'yes' : 'no')).result),
  /** The engine's built-in file probe: the flag is a file the flip writes. */
  'engine-file': (n, flag) =>
    Array.from({ length: n }, () =>
      start({ probe: { file: { path: flag.file } }, until: { matches: 'yes' }, interval_ms: INTERVAL_MS, max_wait_ms: LIMIT_MS }, undefined, {
        grants: { fileRoots: [path.dirname(flag.file)] },
      }).result,
    ),
  'p-wait-for': (n, flag) => Array.from({ length: n }, () => pWaitFor(() => isOn(flag), { interval: INTERVAL_MS, timeout: LIMIT_MS })),
  'async-wait-until': (n, flag) => Array.from({ length: n }, () => waitUntil(() => isOn(flag), { timeout: LIMIT_MS, intervalBetweenAttempts: INTERVAL_MS })),
}

/**
 * CPU time (ms) per thread group of this process so far, from
 * `/proc/self/task/<tid>/schedstat`: the JavaScript thread, V8's helper
 * threads (compiler, garbage collector) and each engine thread name.
 */
function threadCpu() {
  const groups = {}
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      const comm = fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim()
      const group = tid === String(process.pid) ? 'js' : comm === 'node' ? 'v8' : comm.replace('waitfor-', '')
      const ns = Number(fs.readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0])
      groups[group] = (groups[group] ?? 0) + ns / 1e6
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return groups
}

/**
 * The machine's CPU time counters (`/proc/stat`, in ticks): on a virtual
 * machine, `steal` is time its CPUs were ready to run but the host ran
 * something else, which no change in this package can win back. Null
 * where there is no `/proc/stat`.
 */
function cpuTicks() {
  try {
    const [user, nice, system, idle, iowait, irq, softirq, steal] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1).map(Number)
    return { total: user + nice + system + idle + iowait + irq + softirq + steal, steal }
  } catch {
    return null
  }
}

/** The share of the machine's CPU time stolen by the host between two `cpuTicks`, in percent. */
function stealPercent(before, after) {
  return before && after && after.total > before.total ? (100 * (after.steal - before.steal)) / (after.total - before.total) : null
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}

/**
 * Polls per wait per second: `polls` calls over the waits' lives (from
 * `started` to each settle), or for the file probe, which JavaScript does
 * not see, the samples each result counts over its elapsed time.
 */
function pollRate(results, polls, started, settled) {
  if (polls === 0) {
    const samples = results.reduce((sum, r) => sum + r.samples, 0)
    return (samples / results.reduce((sum, r) => sum + r.elapsed_ms, 0)) * 1e3
  }
  return (polls / settled.reduce((sum, t) => sum + (t - started), 0)) * 1e3
}

async function runOne(name, n, phaseMs) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'waitfor-bench-'))
  const shared = new SharedArrayBuffer(16)
  const flag = { on: new Int32Array(shared, 0, 1), polls: 0, file: path.join(dir, 'flag') }
  fs.writeFileSync(flag.file, '')
  const flipper = new Worker(FLIPPER, { eval: true, workerData: shared })
  flipper.once('error', (e) => {
    throw e
  })
  await new Promise((resolve) => flipper.once('online', resolve))
  // `performance.now()` and `process.hrtime` read one clock.
  const hrOffsetMs = Number(process.hrtime.bigint()) / 1e6 - performance.now()
  globalThis.gc?.()
  const rss0 = process.memoryUsage().rss
  const started = performance.now()
  const waits = SCENARIOS[name](n, flag)
  // Each wait's settle time and result, gathered by the handler it gets
  // now (Promise.all at the flip would cost 3-4 ms of the JavaScript
  // thread inside every scenario's reaction window).
  const settled = new Array(n)
  const results = new Array(n)
  let left = n
  const all = new Promise((resolve, reject) =>
    waits.forEach((p, i) =>
      p.then((result) => {
        settled[i] = performance.now()
        results[i] = result
        if (--left === 0) resolve()
      }, reject),
    ),
  )
  await new Promise((r) => setTimeout(r, 500)) // every wait is polling
  const cpu0 = process.cpuUsage()
  const loop0 = performance.eventLoopUtilization()
  const t0 = performance.now()
  flipper.postMessage({ atNs: (t0 + hrOffsetMs + HOLD_MS + phaseMs) * 1e6, file: flag.file })
  await new Promise((r) => setTimeout(r, HOLD_MS + phaseMs))
  const held = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  const loopBusy = performance.eventLoopUtilization(loop0).utilization
  const rss = process.memoryUsage().rss - rss0
  const threads0 = process.env.THREADS ? threadCpu() : null
  const ticks0 = cpuTicks()
  await all
  const threads = threads0 && Object.fromEntries(Object.entries(threadCpu()).map(([g, ms]) => [g, ms - (threads0[g] ?? 0)]))
  const stealPct = stealPercent(ticks0, cpuTicks())
  await flipper.terminate()
  const early = results.filter((r) => r && r.outcome && r.outcome !== 'matched').length
  const flipped = new Float64Array(shared, 8, 1)[0] / 1e6 - hrOffsetMs
  const reactions = settled.map((t) => t - flipped).sort((a, b) => a - b)
  fs.rmSync(dir, { recursive: true, force: true })
  return {
    name,
    waits: n,
    rssMiB: rss / 2 ** 20,
    cpuMsPerSec: ((cpu.user + cpu.system) / 1e3 / held) * 1e3,
    pollsPerSec: pollRate(results, flag.polls, started, settled),
    loopBusyPct: 100 * loopBusy,
    p50: percentile(reactions, 50),
    p99: percentile(reactions, 99),
    notMatched: early,
    stealPct,
    ...(threads && { threadsMs: threads }),
  }
}

function row(r) {
  const threads = r.threadsMs
    ? `  CPU after the flip: ${Object.entries(r.threadsMs)
        .filter(([, ms]) => ms >= 0.5)
        .map(([g, ms]) => `${g} ${ms.toFixed(0)}`)
        .join(', ')} ms`
    : ''
  const steal = r.stealPct === null ? '' : r.stealPct.toFixed(0)
  return `${r.name.padEnd(17)} ${String(r.waits).padStart(6)} ${r.rssMiB.toFixed(1).padStart(9)} ${r.cpuMsPerSec.toFixed(0).padStart(13)} ${r.pollsPerSec.toFixed(1).padStart(8)} ${r.loopBusyPct.toFixed(0).padStart(10)} ${r.p50
    .toFixed(1)
    .padStart(8)} ${r.p99.toFixed(1).padStart(8)} ${steal.padStart(9)}${r.notMatched ? `  (${r.notMatched} not matched)` : ''}${threads}`
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** One row for several runs of a scenario: the median of each figure (and of each thread group's CPU). */
function medianRow(runs) {
  const pick = (field) => median(runs.map((r) => r[field]))
  const steals = runs.map((r) => r.stealPct).filter((s) => s !== null)
  const groups = [...new Set(runs.flatMap((r) => Object.keys(r.threadsMs ?? {})))]
  return {
    name: runs[0].name,
    waits: runs[0].waits,
    rssMiB: pick('rssMiB'),
    cpuMsPerSec: pick('cpuMsPerSec'),
    pollsPerSec: pick('pollsPerSec'),
    loopBusyPct: pick('loopBusyPct'),
    p50: pick('p50'),
    p99: pick('p99'),
    notMatched: runs.reduce((sum, r) => sum + r.notMatched, 0),
    stealPct: steals.length ? median(steals) : null,
    ...(runs[0].threadsMs && { threadsMs: Object.fromEntries(groups.map((g) => [g, median(runs.map((r) => r.threadsMs?.[g] ?? 0))])) }),
  }
}

/** Each run's p99 with its steal, and how many runs met the goal (all of them, and those the host stole nothing from). */
function goalLine(runs, goal) {
  const met = (rs) => `${rs.filter((r) => r.p99 <= goal).length} of ${rs.length}`
  const quiet = runs.filter((r) => r.stealPct === 0)
  const each = runs.map((r) => `${r.p99.toFixed(1)}${r.stealPct ? ` (${r.stealPct.toFixed(0)}%)` : ''}`).join(', ')
  return `${runs[0].name.padEnd(17)} p99 <= ${goal} ms in ${met(runs)} runs, ${met(quiet)} with no steal: ${each}`
}

const [mode, count, phase] = process.argv.slice(2)
if (mode) {
  let last
  for (let round = 0; round < ROUNDS; round++) last = await runOne(mode, Number(count), Number(phase ?? 0))
  process.stdout.write(JSON.stringify(last))
} else {
  const n = Number(process.env.WAITS ?? 10_000)
  const runsEach = Number(process.env.RUNS ?? 5)
  const names = process.env.SCENARIOS ? process.env.SCENARIOS.split(',') : Object.keys(SCENARIOS)
  const unknown = names.filter((name) => !(name in SCENARIOS))
  const problems = [
    ...(unknown.length ? [`SCENARIOS: no scenario ${unknown.join(', ')} (there are ${Object.keys(SCENARIOS).join(', ')})`] : []),
    ...(Number.isInteger(runsEach) && runsEach >= 1 ? [] : [`RUNS: a whole number of at least 1, got ${process.env.RUNS}`]),
  ]
  if (problems.length) {
    console.error(problems.join('\n'))
    process.exit(2)
  }
  const me = fileURLToPath(import.meta.url)
  const phaseOf = (i) => ((i + 0.5) / runsEach) * INTERVAL_MS
  const child = (name, i) =>
    JSON.parse(execFileSync(process.execPath, ['--expose-gc', '--no-warnings', me, name, String(n), String(phaseOf(i))], { encoding: 'utf8', maxBuffer: 1 << 20 }))
  // Scenarios take turns, so a noisy minute of the machine falls on all of them.
  const runs = Object.fromEntries(names.map((name) => [name, []]))
  for (let i = 0; i < runsEach; i++) for (const name of names) runs[name].push(child(name, i))
  const rows = names.map((name) => (runsEach === 1 ? runs[name][0] : medianRow(runs[name])))
  const each = runsEach === 1 ? '' : `, median of ${runsEach} runs each, flipped at phases spread over the interval`
  console.log(`${n} concurrent waits, ${INTERVAL_MS} ms interval, ${HOLD_MS} ms held false, round ${ROUNDS} of ${ROUNDS}, ${os.cpus().length} CPUs${each}`)
  console.log('scenario           waits  RSS (MiB)  CPU ms per s  polls/s  loop busy  p50 (ms)  p99 (ms)  steal (%)')
  rows.forEach((r) => console.log(row(r)))
  if (runsEach > 1) names.forEach((name) => console.log(goalLine(runs[name], INTERVAL_MS + 10)))
  const by = Object.fromEntries(rows.map((r) => [r.name, r]))
  const goal = INTERVAL_MS + 10
  const medianNote = runsEach === 1 ? '' : `, median of ${runsEach} runs`
  const ms = (digits) => (v) => `${v.toFixed(digits)} ms`
  const measures = [
    ['extra RSS', 'rssMiB', (v) => `${v.toFixed(1)} MiB`],
    ['CPU per waiting second', 'cpuMsPerSec', ms(0)],
    ['reaction p50', 'p50', ms(1)],
    ['reaction p99', 'p99', ms(1)],
    ['polls per wait a second (asked 20)', 'pollsPerSec', (v) => v.toFixed(1)],
    ['event loop busy during the hold', 'loopBusyPct', (v) => `${v.toFixed(0)}%`],
  ]
  /** The goal of a row: memory and CPU below both peers and at most 0.2x p-wait-for's; p50 and p99 at most p-wait-for's; p99 <= interval + 10 ms. */
  const goalOf = (field, e, peer, p) => {
    const [ours, theirs] = [e[field], p[field]]
    // Context for the reactions, with no goal: a loop too busy to keep
    // its timers polls less often than asked.
    if (field === 'pollsPerSec') return { better: 'higher' }
    if (field === 'loopBusyPct') return {}
    if (field === 'rssMiB' || field === 'cpuMsPerSec') {
      return peer === 'p-wait-for' ? { goal: "<= 0.2x p-wait-for's", met: ours <= 0.2 * theirs } : { goal: 'below the peer', met: ours < theirs }
    }
    if (field === 'p50') return peer === 'p-wait-for' ? { goal: "<= p-wait-for's", met: ours <= theirs } : {}
    return peer === 'p-wait-for'
      ? { goal: `<= ${goal} ms and <= p-wait-for's`, met: ours <= goal && ours <= theirs }
      : { goal: `<= ${goal} ms`, met: ours <= goal }
  }
  const lines = []
  for (const [measure, field, show] of measures) {
    for (const engine of ['engine-js', 'engine-file']) {
      for (const peer of ['p-wait-for', 'async-wait-until']) {
        const [e, p] = [by[engine], by[peer]]
        if (!e || !p) continue
        const probes = engine === 'engine-js' ? 'JS probes' : 'built-in file probe'
        lines.push(tableRow(`Node, ${n.toLocaleString('en-US')} waits at ${INTERVAL_MS} ms, ${probes} (${engine}): ${measure}${medianNote}`, e[field], peer, p[field], show, goalOf(field, e, peer, p)))
      }
    }
  }
  console.log(`polls/s: each wait's, asked ${1000 / INTERVAL_MS}; loop busy: % of the hold the JavaScript thread was not idle`)
  if (lines.length) console.log([HEADER, ...lines].join('\n'))
}
