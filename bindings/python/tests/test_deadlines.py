"""Deadlines hold whatever the spec asks: patterns that take seconds to
compile never block the caller's loop, and any ``result(timeout=...)`` is
a number the handle accepts or a ``ValueError``."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from pathlib import Path

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
    for timeout in (1e19, 1e300, math.inf, 10**400):
        handle = waitfor.start({"until": {"matches": "ready"}}, lambda: "ready")
        assert handle.result(timeout=timeout).outcome == "matched"


# Timeouts that are no duration, and what each raises: the same for every
# public method taking a timeout in seconds.
BAD_TIMEOUTS = [
    (-1.0, ValueError, "timeout must be a number of seconds from 0 (inf: no limit), not -1.0"),
    (math.nan, ValueError, "timeout must be a number of seconds from 0 (inf: no limit), not nan"),
    (-math.inf, ValueError, "not -inf"),
    (-(10**400), ValueError, "not -100000000000000000000000000000000000000..."),
    (True, TypeError, "timeout must be a number of seconds, not bool"),
    ("1", TypeError, "timeout must be a number of seconds, not str"),
]


@pytest.mark.parametrize(("timeout", "error", "says"), BAD_TIMEOUTS)
def test_result_refuses_a_timeout_that_is_no_duration(timeout: object, error: type, says: str) -> None:
    """Before the wait ended and after (when the handle holds its result),
    naming ``timeout``: a bool was taken as 1 s, a huge negative int was an
    OverflowError, and a held result took any timeout."""
    handle = waitfor.start({"until": {"matches": "ready"}}, lambda: "ready")
    with pytest.raises(error) as caught:
        handle.result(timeout=timeout)  # type: ignore[arg-type]
    assert says in str(caught.value), caught.value
    assert handle.result(timeout=10).outcome == "matched"
    with pytest.raises(error, match="^timeout must be"):
        handle.result(timeout=timeout)  # type: ignore[arg-type]


@pytest.mark.parametrize(("timeout", "error", "says"), BAD_TIMEOUTS)
def test_wait_cancelled_refuses_a_timeout_that_is_no_duration(timeout: object, error: type, says: str) -> None:
    """As ``result`` does (NaN and negative timeouts returned at once, a
    bool slept 1 s)."""
    caught: list[BaseException] = []

    def probe(ctx: waitfor.ProbeContext) -> str:
        try:
            ctx.wait_cancelled(timeout)  # type: ignore[arg-type]
        except BaseException as err:
            caught.append(err)
        return "ready"

    assert waitfor.wait({"until": {"matches": "ready"}}, probe).outcome == "matched"
    assert len(caught) == 1 and type(caught[0]) is error, caught
    assert says in str(caught[0]), caught[0]


def test_wait_cancelled_takes_zero_and_no_limit() -> None:
    """0 looks without sleeping; ``inf`` (or more than a clock holds) sleeps
    until the call is cancelled, here by the wait's own cancel."""
    seen: list[bool] = []
    began = threading.Event()

    def probe(ctx: waitfor.ProbeContext) -> str:
        seen.append(ctx.wait_cancelled(0))
        began.set()
        seen.append(ctx.wait_cancelled(math.inf))
        return ""

    handle = waitfor.start({"until": {"matches": "never"}, "max_wait_ms": 60_000}, probe)
    assert began.wait(30)
    handle.cancel()
    assert handle.result(timeout=30).outcome == "cancelled"
    assert seen[0] is False


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


def test_a_blocked_progress_callback_holds_no_result() -> None:
    # Progress is reported on a thread of its own: a callback that blocks
    # held its own wait's result (a 20 s callback, a 1 s wait: 19 s late)
    # and the results of the waits sharing its delivery thread.
    release = threading.Event()
    began = threading.Event()

    def report(_: waitfor.Progress) -> None:
        began.set()
        release.wait(60)

    spec = {"until": {"matches": "never"}, "interval_ms": 10, "max_wait_ms": 300, "progress_every_ms": 10}
    try:
        reporting = waitfor.start(spec, lambda: "x", on_progress=report)
        assert began.wait(30), "no progress report"
        others = [waitfor.start(spec, lambda: "x") for _ in range(4)]
        for handle in [reporting, *others]:
            assert handle.result(timeout=30).outcome == "timeout"
        assert not release.is_set()
    finally:
        release.set()


def test_a_slow_async_progress_callback_does_not_hold_call_tool_async(tmp_path: Path) -> None:
    # The answer used to wait for every callback task: 19 s for a 1 s call
    # with a callback that awaits 20 s.
    log = tmp_path / "events.jsonl"
    log.write_text("")

    async def main() -> float:
        never = asyncio.Event()

        async def report(_: waitfor.ToolProgress) -> None:
            await never.wait()

        began = time.monotonic()
        call = waitfor.call_tool_async(
            "ouro/wait", {"path": str(log), "timeout": 1000}, on_progress=report, grants=waitfor.Grants(file_roots=[str(tmp_path)])
        )
        out = await asyncio.wait_for(call, 20)
        assert out["state"] == "timed-out", out
        return time.monotonic() - began

    # Generous for a loaded machine: held, it took until the test's end.
    assert asyncio.run(main()) < 10
