"""asyncio: waits resolve on the caller's loop, coroutine probes run there,
cancelling the awaiting task cancels the wait, the loop is never blocked."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from typing import Any

import waitfor

FAST = {"interval_ms": 10, "max_wait_ms": 20000}


def test_wait_async_with_plain_probe() -> None:
    polls = iter(["a", "b", "ready"])

    async def main() -> waitfor.WaitResult:
        return await waitfor.wait_async({**FAST, "until": {"matches": "ready"}}, lambda: next(polls))

    r = asyncio.run(main())
    assert (r.outcome, r.samples) == ("matched", 3)


def test_coroutine_probe_runs_on_the_callers_loop() -> None:
    threads: set[int] = set()

    async def probe(ctx: waitfor.ProbeContext) -> dict[str, Any]:
        threads.add(threading.get_ident())
        await asyncio.sleep(0.001)
        return {"ready": ctx.sample >= 3}

    async def main() -> waitfor.WaitResult:
        return await waitfor.wait_async({**FAST, "until": {"json": {"pointer": "/ready", "equals": True}}}, probe)

    r = asyncio.run(main())
    assert r.outcome == "matched" and r.samples == 3
    assert threads == {threading.get_ident()}


def test_async_probe_exception_is_kept() -> None:
    async def probe() -> str:
        raise LookupError("no pod")

    async def main() -> waitfor.WaitResult:
        return await waitfor.wait_async({**FAST, "until": {"matches": "x"}}, probe)

    r = asyncio.run(main())
    assert r.outcome == "probe_error" and isinstance(r.probe_exception, LookupError)


def test_cancelling_the_task_cancels_the_wait_and_its_probe() -> None:
    entered = asyncio.Event()
    probe_cancelled: list[bool] = []

    async def probe() -> str:
        entered.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            probe_cancelled.append(True)
            raise
        return ""

    async def main() -> None:
        task = asyncio.create_task(waitfor.wait_async({**FAST, "until": {"matches": "x"}}, probe))
        await asyncio.wait_for(entered.wait(), 20)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        else:
            raise AssertionError("the task was not cancelled")
        deadline = time.monotonic() + 20
        while not probe_cancelled and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    asyncio.run(main())
    assert probe_cancelled == [True]


def test_deadline_cancels_a_hung_coroutine_probe() -> None:
    cancelled: list[bool] = []

    async def probe() -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return ""

    async def main() -> waitfor.WaitResult:
        r = await waitfor.wait_async({"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 150}, probe)
        deadline = time.monotonic() + 20
        while not cancelled and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        return r

    r = asyncio.run(main())
    assert r.probe.abandoned == 1 and cancelled == [True]


def test_progress_callbacks_run_on_the_loop_and_may_be_async() -> None:
    seen: list[tuple[int, int]] = []

    async def report(progress: waitfor.Progress) -> None:
        seen.append((threading.get_ident(), progress.samples))

    async def main() -> waitfor.WaitResult:
        r = await waitfor.wait_async(
            {"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 300, "progress_every_ms": 10},
            lambda: "busy",
            on_progress=report,
        )
        await asyncio.sleep(0.05)
        return r

    r = asyncio.run(main())
    assert r.outcome == "timeout" and seen
    assert {t for t, _ in seen} == {threading.get_ident()}


def test_hundred_concurrent_waits_keep_the_loop_responsive() -> None:
    """Loop lag stays low while 100 waits run (a generous bound: 10 ms at
    the median of ticks, 50 ms at the worst, on a loaded machine)."""
    lags: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.005)
            lags.append(time.perf_counter() - before - 0.005)

    async def main() -> list[waitfor.WaitResult]:
        stop = asyncio.Event()
        tick = asyncio.create_task(ticker(stop))
        counters = [0] * 100

        def probe_for(i: int) -> Any:
            def probe() -> str:
                counters[i] += 1
                return "done" if counters[i] >= 10 else "waiting"

            return probe

        results = await asyncio.gather(
            *(waitfor.wait_async({**FAST, "until": {"matches": "done"}}, probe_for(i)) for i in range(100))
        )
        stop.set()
        await tick
        return results

    results = asyncio.run(main())
    assert all(r.outcome == "matched" for r in results)
    assert len(lags) > 10
    assert statistics.median(lags) < 0.010, statistics.median(lags)
    assert max(lags) < 0.050, max(lags)


def test_call_tool_async_with_async_tools_and_cancel() -> None:
    async def tools(name: str, arguments: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return f"{name} {arguments['n']} Running"

    async def main() -> dict[str, Any]:
        return await waitfor.call_tool_async(
            "aura/wait_for",
            {"probe": {"tool": "status", "args": {"n": 1}}, "until": {"matches": "Running"}, "max_wait_sec": 10},
            tools=tools,
        )

    out = asyncio.run(main())
    assert out["reason"] == "matched" and out["last_observation"] == "status 1 Running"
