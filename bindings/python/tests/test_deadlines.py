"""Deadlines hold whatever the spec asks: patterns that take seconds to
compile never block the caller's loop, and any ``result(timeout=...)`` is
a number the handle accepts or a ``ValueError``."""

from __future__ import annotations

import asyncio
import math
import threading
import time

import pytest

import waitfor


def huge_patterns(regex: bool) -> list[str]:
    """60 patterns of about 60 KiB each: compiling them takes seconds."""
    if regex:
        return ["|".join(f"w{i}x{j}" for j in range(6000)) for i in range(60)]
    return [f"{i}:" + "word salad " * 5500 for i in range(60)]


@pytest.mark.parametrize("regex", [False, True])
def test_a_huge_pattern_list_ends_at_its_deadline_and_the_loop_keeps_ticking(regex: bool) -> None:
    spec = {"regex": regex, "until": {"patterns": huge_patterns(regex)}, "interval_ms": 10, "max_wait_ms": 50}
    gaps: list[float] = []

    async def tick(stop: asyncio.Event) -> None:
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.005)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    async def main() -> tuple[waitfor.WaitResult, float]:
        stop = asyncio.Event()
        ticker = asyncio.create_task(tick(stop))
        await asyncio.sleep(0.02)
        started = time.monotonic()
        result = await waitfor.wait_async(spec, lambda: "nothing")
        took = time.monotonic() - started
        stop.set()
        await ticker
        return result, took

    result, took = asyncio.run(main())
    # Generous bounds: compiling on the caller's thread took seconds.
    assert took < 2.0, took
    assert max(gaps) < 1.0, max(gaps)
    # Ended by its deadline while compiling, or refused as soon as one
    # pattern is over the limit for one (60 KiB of text in any case takes
    # more than 4 MiB compiled).
    assert result.outcome in ("timeout", "error") and "compiled" in (result.error or ""), result
    assert result.elapsed_ms < 2000
    assert result.outcome == "error" or result.elapsed_ms >= 50


def test_result_accepts_any_timeout_a_clock_cannot_hold() -> None:
    for timeout in (1e19, 1e300, math.inf):
        handle = waitfor.start({"until": {"matches": "ready"}}, lambda: "ready")
        assert handle.result(timeout=timeout).outcome == "matched"


@pytest.mark.parametrize("timeout", [-1.0, math.nan])
def test_result_refuses_a_timeout_that_is_no_duration(timeout: float) -> None:
    handle = waitfor.start({"until": {"matches": "ready"}}, lambda: "ready")
    with pytest.raises(ValueError):
        handle.result(timeout=timeout)
    assert handle.result(timeout=10).outcome == "matched"


def test_a_lent_tool_blocking_at_the_bound_does_not_hold_aura_wait_for() -> None:
    """AURA samples once more at its bound, with no time left: a lent tool
    that does not return then is abandoned, and the call still ends at
    the bound (it used to last as long as the tool, or forever). The call
    at the bound is abandoned at once, so on a loaded machine it may be
    abandoned before a thread began it: the test runs until one began."""
    for _ in range(10):
        # This run's own: a call at an earlier run's bound, begun before
        # that run ended, may still be running into this one.
        release = threading.Event()
        calls: list[str] = []

        def tool(
            name: str,
            arguments: dict[str, object],
            calls: list[str] = calls,
            release: threading.Event = release,
        ) -> str:
            calls.append(name)
            if len(calls) >= 3:
                release.wait(30)
            return "running"

        args = {"probe": {"tool": "status", "args": {}}, "until": {"matches": "done"}, "poll_sec": 1, "max_wait_sec": 2}
        started = time.monotonic()
        try:
            out = waitfor.call_tool("aura/wait_for", args, tools=tool)
        finally:
            release.set()
        took = time.monotonic() - started
        # Generous: the bound is 2 s.
        assert took < 4.0, took
        assert out["reason"] == "timeout" and out["samples"] == 2, out
        if len(calls) == 3:
            return
        assert len(calls) == 2
    pytest.fail("in 10 runs, no call at the bound began before it was abandoned")
