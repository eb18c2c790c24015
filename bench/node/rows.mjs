// Rows of the common results table that `make bench` gathers into
// bench/RESULTS.md: the columns of TABLE_HEADER in bench/src/lib.rs.
//
//   row('CPU per call', 2, 'p-wait-for', 8, (v) => `${v} µs`, { goal: '<= 1 µs', met: false })
//   // '| CPU per call | 2 µs | p-wait-for: 8 µs | 0.25 | lower | <= 1 µs | ✗ |'

export const HEADER = '| measure | libwaitfor | peer or floor, same run | libwaitfor ÷ peer | better | goal | met |\n|---|---|---|---|---|---|---|'

/** `ours ÷ peer`: two significant digits below 1, two decimals up to 100, none beyond; a dash when the peer is zero. */
export function ratio(ours, peer) {
  const r = ours / peer
  if (!Number.isFinite(r)) return '—'
  if (r === 0) return '0'
  if (r >= 100) return r.toFixed(0)
  if (r >= 1) return r.toFixed(2)
  return r.toFixed(Math.max(2, 1 - Math.floor(Math.log10(r))))
}

/**
 * One row: `ours` and `peer` are the same measure in the same unit, shown
 * by `show`; `better` is 'lower' or 'higher'; `met` is undefined when there
 * is no goal.
 */
export function row(measure, ours, peerName, peer, show, { better = 'lower', goal = '', met } = {}) {
  const mark = met === undefined ? '' : met ? '✓' : '✗'
  return `| ${measure} | ${show(ours)} | ${peerName}: ${show(peer)} | ${ratio(ours, peer)} | ${better} | ${goal} | ${mark} |`
}
