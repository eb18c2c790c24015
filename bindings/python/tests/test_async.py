"""asyncio: waits resolve on the caller's loop, coroutine probes run there,
cancelling the awaiting task cancels the wait, the loop is never blocked."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import os
import statistics
import subprocess
import textwrap
import threading
import time
from typing import Any

from conftest import OUTPUT_CAP, PYTHON, bytes_read_over_the_cap, child_env, eventually

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


def test_reports_to_a_busy_loop_replace_each_other_and_end_with_their_wait() -> None:
    """While the loop is busy (here blocked past every deadline), each
    wait keeps at most its newest report for the loop, not one queued call
    per report, and a report still waiting when its wait ends is dropped:
    the loop hears at most one report a wait afterwards."""
    waits = 20
    heard: list[int] = []

    async def main() -> list[waitfor.WaitResult]:
        spec = {"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 1000, "progress_every_ms": 10}
        tasks = [
            asyncio.ensure_future(waitfor.wait_async(spec, lambda: "busy", on_progress=lambda p: heard.append(p.samples)))
            for _ in range(waits)
        ]
        await asyncio.sleep(0)
        time.sleep(2)  # the loop is busy while every wait reports, then ends
        before = len(heard)
        results = await asyncio.gather(*tasks)
        await asyncio.sleep(0.1)
        assert len(heard) - before <= waits, f"{len(heard) - before} reports reached the loop after it was free"
        return results

    assert {r.outcome for r in asyncio.run(main())} == {"timeout"}


def test_hundred_concurrent_waits_keep_the_loop_responsive() -> None:
    """The loop keeps running while 100 waits run: no wait can match
    before a ticker on the loop has ticked 20 times since they began, so
    a loop blocked by the waits ends them in a timeout, whatever the
    machine's load. Its lag stays low too (generous bounds for a loaded
    machine; a loop blocked by the waits shows whole seconds)."""
    ticks_needed = 20
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
                return "done" if counters[i] >= 10 and len(lags) >= ticks_needed else "waiting"

            return probe

        results = await asyncio.gather(
            *(waitfor.wait_async({**FAST, "until": {"matches": "done"}}, probe_for(i)) for i in range(100))
        )
        stop.set()
        await tick
        return results

    results = asyncio.run(main())
    assert all(r.outcome == "matched" for r in results), {r.outcome for r in results}
    assert all(r.samples >= 10 for r in results)
    assert len(lags) >= ticks_needed
    assert statistics.median(lags) < 0.05, statistics.median(lags)
    assert max(lags) < 1.0, max(lags)


def test_answers_over_the_cap_do_not_stall_the_loop() -> None:
    """A plain probe's answer (read on the loop), a coroutine probe's and
    an async host tool's, each far over the cap and made before the wait:
    only about the cap's worth is read, so the loop keeps ticking (a
    generous bound: reading them whole stalled it for seconds)."""
    huge_list = ["x" * 100] * 3_000_000  # 309 MB as JSON
    huge_str = "é" * 200_000_000  # 400 MB as UTF-8
    lags: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - before - 0.001)

    async def coroutine_probe() -> str:
        return huge_str

    async def tools(name: str, arguments: dict[str, Any]) -> list[str]:
        return huge_list

    async def main() -> tuple[list[waitfor.WaitResult], str]:
        stop = asyncio.Event()
        tick = asyncio.create_task(ticker(stop))
        await asyncio.sleep(0.05)
        results = [
            await waitfor.wait_async({**FAST, "until": {"matches": "never"}}, lambda: huge_list),
            await waitfor.wait_async({**FAST, "until": {"matches": "never"}}, coroutine_probe),
        ]
        try:
            await waitfor.call_tool_async(
                "aura/wait_for",
                {"probe": {"tool": "status", "args": {}}, "until": {"matches": "never"}, "max_wait_sec": 30},
                tools=tools,
            )
            refused = ""
        except waitfor.ToolError as err:
            refused = str(err)
        stop.set()
        await tick
        return results, refused

    results, refused = asyncio.run(main())
    for r in results:
        assert r.outcome == "error", r
        assert OUTPUT_CAP < bytes_read_over_the_cap(r.error) <= OUTPUT_CAP + 4
    assert f"returned {OUTPUT_CAP + 1} bytes on sample 1, over the {OUTPUT_CAP}-byte cap" in refused, refused
    assert max(lags) < 0.3, max(lags)


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


def test_waiting_coroutine_probes_hold_no_engine_thread() -> None:
    """200 waits whose coroutine probes all await at once: the engine keeps
    its usual few threads (a thread per waiting call would be 200), and
    cancelling the waits cancels every probe task. In a child process, so
    earlier tests' workers do not count."""
    code = """
        import asyncio, os, waitfor

        def engine_threads():
            names = []
            for task in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{task}/comm") as comm:
                    names.append(comm.read())
            return sum(name.startswith("waitfor") for name in names)

        async def main():
            entered, cancelled = [0], [0]
            all_in = asyncio.Event()

            async def probe():
                entered[0] += 1
                if entered[0] == 200:
                    all_in.set()
                try:
                    await asyncio.sleep(600)
                except asyncio.CancelledError:
                    cancelled[0] += 1
                    raise
                return ""

            spec = {"until": {"matches": "never"}, "max_wait_ms": 600000}
            waits = [asyncio.create_task(waitfor.wait_async(spec, probe)) for _ in range(200)]
            await asyncio.wait_for(all_in.wait(), 30)
            print(engine_threads(), flush=True)
            for wait in waits:
                wait.cancel()
            await asyncio.gather(*waits, return_exceptions=True)
            for _ in range(4000):
                if cancelled[0] == 200 and len(asyncio.all_tasks()) == 1:
                    break
                await asyncio.sleep(0.005)
            print(cancelled[0], len(asyncio.all_tasks()), flush=True)

        asyncio.run(main())
    """
    child = subprocess.run(
        [PYTHON, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=child_env(), timeout=120
    )
    assert child.returncode == 0, child.stderr
    threads, ended = child.stdout.splitlines()
    # The scheduler, two delivery lanes, two workers, room for a few more.
    assert int(threads) <= 8, f"{threads} engine threads"
    assert ended == "200 1", "probe tasks cancelled, tasks left"


def test_deadline_ends_every_coroutine_probe_still_running() -> None:
    entered, cancelled = [0], [0]

    async def probe() -> str:
        entered[0] += 1
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled[0] += 1
            raise
        return ""

    async def main() -> list[waitfor.WaitResult]:
        spec = {"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 300}
        results = await asyncio.gather(*(waitfor.wait_async(spec, probe) for _ in range(50)))
        deadline = time.monotonic() + 20
        while len(asyncio.all_tasks()) > 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        assert len(asyncio.all_tasks()) == 1, "a probe task outlived its wait"
        return results

    results = asyncio.run(main())
    # No sample completed: the outcome says the probe timed out.
    assert {(r.outcome, r.probe.abandoned) for r in results} == {("probe_error", 1)}
    assert entered[0] > 0 and cancelled[0] == entered[0]
    assert all(r.probe_exception is None for r in results)


def test_coroutine_probes_on_loops_of_two_threads_each_run_on_their_own() -> None:
    seen: dict[str, set[int]] = {"a": set(), "b": set()}
    gate = threading.Barrier(2, timeout=20)

    def run(name: str) -> str:
        async def probe(ctx: waitfor.ProbeContext) -> str:
            seen[name].add(threading.get_ident())
            await asyncio.sleep(0.001)
            return "ready" if ctx.sample >= 3 else "not yet"

        async def main() -> str:
            gate.wait()
            r = await waitfor.wait_async({**FAST, "until": {"matches": "ready"}}, probe)
            return f"{r.outcome} {r.samples} {seen[name] == {threading.get_ident()}}"

        return asyncio.run(main())

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(run, ["a", "b"]))
    assert answers == ["matched 3 True", "matched 3 True"]


def test_loops_run_one_after_another_leave_no_descriptors_behind() -> None:
    async def probe() -> str:
        return "ready"

    def once() -> None:
        r = asyncio.run(waitfor.wait_async({**FAST, "until": {"matches": "ready"}}, probe))
        assert r.outcome == "matched"

    once()
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(30):
        once()
    # The last loop's inbox (two descriptors) may be kept until another
    # loop comes; thirty kept would be sixty.
    assert len(os.listdir("/proc/self/fd")) - before <= 4


def test_loops_of_many_threads_starting_waits_at_once_all_get_their_inbox() -> None:
    """Eight threads each start coroutine-probe waits on loops of their own,
    one loop after another, with the closed loops still referenced: every
    wait starts (the per-loop inboxes are shared by the threads; thread
    switches are made frequent, in a child process, so that they interleave)."""
    code = """
        import asyncio, sys, threading, waitfor
        sys.setswitchinterval(1e-6)
        kept, errors = [], []

        async def probe():
            return "ready"

        def run():
            for _ in range(40):
                loop = asyncio.new_event_loop()
                try:
                    spec = {"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": 20000}
                    loop.run_until_complete(waitfor.wait_async(spec, probe))
                except Exception as e:
                    errors.append(repr(e))
                finally:
                    loop.close()
                kept.append(loop)

        threads = [threading.Thread(target=run) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(errors[:3])
    """
    child = subprocess.run(
        [PYTHON, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=child_env(), timeout=300
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "[]"


def test_loops_closed_while_their_waits_run_leave_no_descriptors_behind() -> None:
    """A loop closed with a wait still running, as `asyncio.run` closes
    one (the wait's task cancelled, the engine's wait still ending): the
    probe call queued for the loop is never begun, and the loop's inbox,
    its two descriptors and the probe go when the next loop lets go of the
    closed ones, not with the process."""

    async def probe() -> str:
        return "not yet"

    def once() -> None:
        loop = asyncio.new_event_loop()

        async def start() -> asyncio.Task[waitfor.WaitResult]:
            spec = {"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": 300}
            task = asyncio.ensure_future(waitfor.wait_async(spec, probe))
            await asyncio.sleep(0)
            return task

        task = loop.run_until_complete(start())
        task.cancel()
        loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
        loop.close()

    once()
    gc.collect()
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(30):
        once()

    async def ready() -> str:
        return "ready"

    def let_go() -> bool:
        # A loop's first wait lets go of the closed loops' inboxes.
        asyncio.run(waitfor.wait_async({**FAST, "until": {"matches": "ready"}}, ready))
        gc.collect()
        return len(os.listdir("/proc/self/fd")) - before <= 4

    eventually(let_go, what="the closed loops' descriptors to be let go")
