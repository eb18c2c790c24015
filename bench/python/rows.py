"""Rows of the common results table that ``make bench`` gathers into
bench/RESULTS.md: the columns of ``TABLE_HEADER`` in bench/src/lib.rs.
bench.py and bench/pane/run.sh print them.

>>> print(row("CPU per sample", 2.0, "polling2", 8.0, lambda v: f"{v:.2f} µs", goal="<= 1/10", met=False))
| CPU per sample | 2.00 µs | polling2: 8.00 µs | 0.25 | lower | <= 1/10 | ✗ |
"""

from __future__ import annotations

import math
from collections.abc import Callable

HEADER = (
    "| measure | libwaitfor | peer or floor, same run | libwaitfor ÷ peer | better | goal | met |\n"
    "|---|---|---|---|---|---|---|"
)


def ratio(ours: float, peer: float) -> str:
    """``ours ÷ peer``: two significant digits below 1, two decimals up to
    100, none beyond; a dash when the peer is zero.

    >>> [ratio(1, 4), ratio(5, 10_000), ratio(2, 1.2), ratio(2000, 1), ratio(1, 0)]
    ['0.25', '0.00050', '1.67', '2000', '—']
    """
    if peer == 0 or not math.isfinite(ours / peer):
        return "—"
    r = ours / peer
    if r == 0:
        return "0"
    if r >= 100:
        return f"{r:.0f}"
    if r >= 1:
        return f"{r:.2f}"
    return f"{r:.{max(2, 1 - math.floor(math.log10(r)))}f}"


def row(
    measure: str,
    ours: float,
    peer_name: str,
    peer: float,
    show: Callable[[float], str],
    *,
    better: str = "lower",
    goal: str = "",
    met: bool | None = None,
) -> str:
    """One row: ``ours`` and ``peer`` are the same measure in the same unit,
    shown by ``show``; ``better`` is "lower" or "higher"; ``met`` is None
    when there is no goal."""
    mark = {True: "✓", False: "✗", None: ""}[met]
    return f"| {measure} | {show(ours)} | {peer_name}: {show(peer)} | {ratio(ours, peer)} | {better} | {goal} | {mark} |"
