"""Benchmarks of the waitfor wheel, side by side with peers in one run.

1. Probe call cost: CPU time per sample beyond the probe's own time, with
   the interpreter idle (the main thread blocked), waitfor against
   polling2 and tenacity threads doing the same polls.
2. 1,000 concurrent waits at a 50 ms interval, each ready at a random
   moment: p50/p99 reaction (ready -> caller resumes) and CPU as % of one
   core, for waitfor.wait_async, a plain asyncio loop, tenacity (threads)
   and polling2 (threads).
3. Async probes: 1,000 concurrent waits whose probe is an ``async def``
   awaiting 10 ms (a request) before it answers: p50/p99 reaction, CPU
   and the most threads started, for waitfor.wait_async and a
   plain asyncio loop awaiting the same probe.
4. A busy host: 200 waits with probes every 20 ms while the main thread
   runs Python code the whole time: the most threads the waits used (the
   engine's, named ``waitfor-*``, against the threads polling2 started)
   and the share of planned samples taken, for waitfor (blocking waits)
   and polling2 (a thread per wait). It runs right after part 1, before
   parts 2 and 3 grow the engine's workers for their 1,000 waits (extra
   workers leave after 10 s idle).

Each figure is printed as a row of the common results table (rows.py):
waitfor's figure, the peer's from the same run, waitfor ÷ peer, which way
is better, the goal and whether it is met.

Run: python bench/python/bench.py [--waits 1000] [--interval 0.05] [--only cost|reaction|async|busy]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import polling2
import tenacity
from rows import HEADER, row

import waitfor

READY = re.compile("ready")


def make_probe(ready_at: float) -> Callable[[], str]:
    def probe() -> str:
        return "ready" if time.monotonic() >= ready_at else "waiting"

    return probe


def make_async_probe(ready_at: float, latency: float) -> Callable[[], Awaitable[str]]:
    async def probe() -> str:
        await asyncio.sleep(latency)
        return "ready" if time.monotonic() >= ready_at else "waiting"

    return probe


def own_cost(calls: int = 200_000) -> float:
    """Seconds of CPU one probe call costs when called directly."""
    probe = make_probe(float("inf"))
    start = time.process_time()
    for _ in range(calls):
        READY.search(probe())
    return (time.process_time() - start) / calls


def probe_call_cost(waits: int, seconds: float) -> dict[str, float]:
    """CPU per sample beyond the probe, for `waits` never-ending waits at
    10 ms polled for `seconds`."""
    results: dict[str, float] = {}
    base = own_cost()

    def measure(name: str, run: Callable[[], int]) -> None:
        start = time.process_time()
        samples = run()
        cpu = time.process_time() - start
        results[name] = (cpu / samples - base) * 1e6

    def with_waitfor() -> int:
        spec = {"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": int(seconds * 1000)}
        handles = [waitfor.start(spec, make_probe(float("inf"))) for _ in range(waits)]
        return sum(h.result().samples for h in handles)

    def with_threads(poll: Callable[[Callable[[], str]], None]) -> int:
        counts = [0] * waits

        def run(i: int) -> None:
            inner = make_probe(float("inf"))

            def counted() -> str:
                counts[i] += 1
                return inner()

            poll(counted)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(waits)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(counts)

    def polling2_poll(probe: Callable[[], str]) -> None:
        try:
            polling2.poll(probe, step=0.01, timeout=seconds, check_success=lambda s: READY.search(s) is not None)
        except polling2.TimeoutException:
            pass

    def tenacity_poll(probe: Callable[[], str]) -> None:
        retrying = tenacity.Retrying(
            wait=tenacity.wait_fixed(0.01),
            stop=tenacity.stop_after_delay(seconds),
            retry=tenacity.retry_if_result(lambda s: READY.search(s) is None),
            retry_error_callback=lambda state: None,
        )
        retrying(probe)

    measure("waitfor", with_waitfor)
    measure("polling2 (threads)", lambda: with_threads(polling2_poll))
    measure("tenacity (threads)", lambda: with_threads(tenacity_poll))
    results["probe's own cost"] = base * 1e6
    return results


Reactions = tuple[float, float, float, int]


def reactions(times: list[float], run: Callable[[list[float]], list[float]]) -> Reactions:
    """(p50 ms, p99 ms, CPU % of one core, most threads the process had
    beyond those at the start) of `run`, which gives when each wait, ready
    at `times`, resumed its caller. Threads are counted every 20 ms, by a
    thread of its own in every row; engine workers left idle by an earlier
    row are not counted against the next."""

    def threads() -> int:
        return len(os.listdir("/proc/self/task"))

    before, stop = threads(), threading.Event()
    most = [before]

    def count_threads() -> None:
        while not stop.wait(0.02):
            most[0] = max(most[0], threads())

    counter = threading.Thread(target=count_threads)
    counter.start()
    cpu0, wall0 = time.process_time(), time.monotonic()
    reacted = run(times)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    stop.set()
    counter.join()
    lags = sorted((r - t) * 1000 for r, t in zip(reacted, times, strict=True))
    return statistics.median(lags), lags[int(len(lags) * 0.99) - 1], 100 * cpu / wall, most[0] - before


def gathered(one: Callable[[float], Awaitable[float]]) -> Callable[[list[float]], list[float]]:
    """Runs `one(t)` for every ready time at once on a fresh loop."""

    async def main(times: list[float]) -> list[float]:
        return list(await asyncio.gather(*(one(t) for t in times)))

    return lambda times: asyncio.run(main(times))


def ready_times(rng: random.Random, waits: int) -> list[float]:
    now = time.monotonic()
    return [now + 0.5 + rng.random() * 2.0 for _ in range(waits)]


def reaction(waits: int, interval: float) -> dict[str, Reactions]:
    """name -> reactions, for probes that answer at once."""
    out: dict[str, Reactions] = {}
    rng = random.Random(7)

    def record(name: str, run: Callable[[list[float]], list[float]]) -> None:
        out[name] = reactions(ready_times(rng, waits), run)

    spec = {"until": {"matches": "ready"}, "interval_ms": int(interval * 1000), "max_wait_ms": 30000}

    async def with_waitfor(t: float) -> float:
        r = await waitfor.wait_async(spec, make_probe(t))
        assert r.outcome == "matched"
        return time.monotonic()

    async def with_asyncio(t: float) -> float:
        probe = make_probe(t)
        while READY.search(probe()) is None:
            await asyncio.sleep(interval)
        return time.monotonic()

    def with_threads(poll: Callable[[Callable[[], str]], Any]) -> Callable[[list[float]], list[float]]:
        def run(times: list[float]) -> list[float]:
            reacted = [0.0] * len(times)

            def one(i: int) -> None:
                poll(make_probe(times[i]))
                reacted[i] = time.monotonic()

            threads = [threading.Thread(target=one, args=(i,)) for i in range(len(times))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return reacted

        return run

    record("waitfor.wait_async", gathered(with_waitfor))
    record("asyncio loop", gathered(with_asyncio))
    record(
        "tenacity (threads)",
        with_threads(
            lambda p: tenacity.Retrying(
                wait=tenacity.wait_fixed(interval), retry=tenacity.retry_if_result(lambda s: READY.search(s) is None)
            )(p)
        ),
    )
    record(
        "polling2 (threads)",
        with_threads(lambda p: polling2.poll(p, step=interval, timeout=30, check_success=lambda s: READY.search(s) is not None)),
    )
    return out


def async_probes(waits: int, interval: float, latency: float) -> dict[str, Reactions]:
    """name -> reactions, for ``async def`` probes that await `latency`
    seconds (a request to a service) before they answer."""
    rng = random.Random(7)
    spec = {"until": {"matches": "ready"}, "interval_ms": int(interval * 1000), "max_wait_ms": 30000}

    async def with_waitfor(t: float) -> float:
        r = await waitfor.wait_async(spec, make_async_probe(t, latency))
        assert r.outcome == "matched"
        return time.monotonic()

    async def with_asyncio(t: float) -> float:
        probe = make_async_probe(t, latency)
        while READY.search(await probe()) is None:
            await asyncio.sleep(interval)
        return time.monotonic()

    return {
        "waitfor.wait_async": reactions(ready_times(rng, waits), gathered(with_waitfor)),
        "asyncio loop": reactions(ready_times(rng, waits), gathered(with_asyncio)),
    }


def busy_host(waits: int, interval: float, seconds: float) -> dict[str, tuple[int, float]]:
    """name -> (most threads the waits used, share of planned samples taken)
    while the main thread runs Python code from start to end."""
    out: dict[str, tuple[int, float]] = {}
    planned = waits * round(seconds / interval)

    def engine_threads() -> int:
        names = []
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/comm") as comm:
                    names.append(comm.read())
            except FileNotFoundError:  # the thread left meanwhile
                pass
        return sum(name.startswith("waitfor-") for name in names)

    def all_threads() -> int:
        return len(os.listdir("/proc/self/task"))

    def keep_busy(until: float, count: Callable[[], int]) -> int:
        most, spins = 0, 0
        while time.monotonic() < until:
            spins += 1
            if spins % 20_000 == 0:
                most = max(most, count())
        return most

    spec = {"until": {"matches": "ready"}, "interval_ms": round(interval * 1000), "max_wait_ms": round(seconds * 1000)}
    handles = [waitfor.start(spec, make_probe(float("inf"))) for _ in range(waits)]
    most = keep_busy(time.monotonic() + seconds + 0.2, engine_threads)
    out["waitfor"] = (most, sum(h.result().samples for h in handles) / planned)

    counts = [0] * waits

    def poll(i: int) -> None:
        def counted() -> str:
            counts[i] += 1
            return "waiting"

        try:
            polling2.poll(counted, step=interval, timeout=seconds, check_success=lambda s: READY.search(s) is not None)
        except polling2.TimeoutException:
            pass

    before = all_threads()
    pollers = [threading.Thread(target=poll, args=(i,)) for i in range(waits)]
    for t in pollers:
        t.start()
    most = keep_busy(time.monotonic() + seconds + 0.2, lambda: all_threads() - before)
    for t in pollers:
        t.join()
    out["polling2 (threads)"] = (most, sum(counts) / planned)
    return out


def print_busy(waits: int, interval: float, seconds: float) -> None:
    busy = busy_host(waits, interval, seconds)
    what = f"Python, busy host (main thread running Python), {waits} waits at {interval * 1000:.0f} ms for {seconds:.0f} s"
    (threads, share), (peer_threads, peer_share) = busy["waitfor"], busy["polling2 (threads)"]
    print(row(f"{what}: threads the waits used", threads, "polling2 (threads)", peer_threads, str, goal="<= 8", met=threads <= 8))
    print(
        row(
            f"{what}: samples taken, of planned",
            100 * share,
            "polling2 (threads)",
            100 * peer_share,
            lambda v: f"{v:.1f}%",
            better="higher",
            goal=">= 99%",
            met=share >= 0.99,
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--waits", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--cost-waits", type=int, default=50)
    parser.add_argument("--cost-seconds", type=float, default=3.0)
    parser.add_argument("--only", choices=("cost", "reaction", "async", "busy"), help="run one part only")
    args = parser.parse_args()
    print(HEADER)

    if args.only in (None, "cost"):
        print_cost(args.cost_waits, args.cost_seconds)
    if args.only in (None, "busy"):
        print_busy(200, 0.02, 5.0)
    if args.only in (None, "reaction"):
        print_reaction(args.waits, args.interval)
    if args.only in (None, "async"):
        print_async(args.waits, args.interval, 0.01)


def print_cost(waits: int, seconds: float) -> None:
    cost = probe_call_cost(waits, seconds)
    own = cost["probe's own cost"]
    what = f"Python, {waits} waits at 10 ms, interpreter idle: CPU per sample beyond the probe (the probe itself: {own:.2f} µs)"
    ours, us = cost["waitfor"], (lambda v: f"{v:.2f} µs")
    peer = cost["polling2 (threads)"]
    print(row(what, ours, "polling2 (threads)", peer, us, goal="<= 1/10 of polling2's", met=ours * 10 <= peer))
    print(row(what, ours, "tenacity (threads)", cost["tenacity (threads)"], us))


def print_reactions(what: str, react: dict[str, Reactions]) -> None:
    """Rows of waitfor.wait_async beside each other way, measure by measure."""
    ours = react["waitfor.wait_async"]
    peers = [name for name in react if name != "waitfor.wait_async"]
    measures: list[tuple[str, Callable[[float], str]]] = [
        ("reaction p50", lambda v: f"{v:.1f} ms"),
        ("reaction p99", lambda v: f"{v:.1f} ms"),
        ("CPU", lambda v: f"{v:.1f}% of a core"),
        ("most threads started", lambda v: f"{v:.0f}"),
    ]
    for i, (measure, show) in enumerate(measures):
        for name in peers:
            print(row(f"{what}: {measure}", ours[i], name, react[name][i], show))


def print_reaction(waits: int, interval: float) -> None:
    what = f"Python, {waits:,} waits at {interval * 1000:.0f} ms, waitfor.wait_async"
    print_reactions(what, reaction(waits, interval))


def print_async(waits: int, interval: float, latency: float) -> None:
    what = f"Python, {waits:,} waits at {interval * 1000:.0f} ms, async def probes awaiting {latency * 1000:.0f} ms, waitfor.wait_async"
    print_reactions(what, async_probes(waits, interval, latency))


if __name__ == "__main__":
    main()
