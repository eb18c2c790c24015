"""Probes, host tools, progress and completion callbacks run in a copy of
the `contextvars` context of the call that started the wait: a server
framework's request state is there, and what they set stays their own."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON
from mcp.client.session import ClientSession
from mcp.client.stdio import (
    StdioServerParameters,
    get_default_environment,
    stdio_client,
)

import waitfor
from waitfor import _native

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request")
FAST = {"interval_ms": 10, "max_wait_ms": 20000, "progress_every_ms": 10}


@pytest.fixture
def request_set() -> Iterator[None]:
    """`REQUEST` set in the test's own context, as a framework sets it."""
    token = REQUEST.set("req-1")
    yield
    REQUEST.reset(token)


def seen() -> str:
    return REQUEST.get("unset")


def ready_on_third(saw: list[str]) -> Any:
    """A probe that records what it sees, sets `REQUEST` itself, and reads
    ready on its third call."""

    def probe(ctx: waitfor.ProbeContext) -> str:
        saw.append(seen())
        REQUEST.set("set by the probe")
        return "ready" if ctx.sample >= 3 else "starting"

    return probe


@pytest.mark.usefixtures("request_set")
def test_wait_runs_the_probe_and_progress_in_the_callers_context() -> None:
    saw: list[str] = []
    reports: list[str] = []
    r = waitfor.wait({**FAST, "until": {"matches": "ready"}}, ready_on_third(saw),
                     on_progress=lambda _: reports.append(seen()))
    assert r.outcome == "matched"
    # Each call sees the caller's value, not what an earlier call set.
    assert saw == ["req-1"] * 3
    assert reports and set(reports) == {"req-1"}
    assert seen() == "req-1"


@pytest.mark.usefixtures("request_set")
def test_start_runs_the_probe_and_progress_in_the_callers_context() -> None:
    saw: list[str] = []
    reports: list[str] = []
    handle = waitfor.start({**FAST, "until": {"matches": "ready"}}, ready_on_third(saw),
                           on_progress=lambda _: reports.append(seen()))
    REQUEST.set("changed by the caller after the start")
    assert handle.result(timeout=20).outcome == "matched"
    assert saw == ["req-1"] * 3 and set(reports) == {"req-1"}


def test_wait_async_runs_probes_and_progress_in_the_callers_context() -> None:
    saw: list[str] = []
    reports: list[str] = []

    async def probe(ctx: waitfor.ProbeContext) -> str:
        await asyncio.sleep(0)
        saw.append(seen())
        REQUEST.set("set by the probe")
        return "ready" if ctx.sample >= 3 else "starting"

    async def report(_: waitfor.Progress) -> None:
        reports.append(seen())
        REQUEST.set("set by the progress callback")

    async def main() -> list[str]:
        REQUEST.set("req-async")
        r = await waitfor.wait_async({**FAST, "until": {"matches": "ready"}}, probe, on_progress=report)
        assert r.outcome == "matched"
        sync_saw: list[str] = []
        r = await waitfor.wait_async({**FAST, "until": {"matches": "ready"}}, ready_on_third(sync_saw),
                                     on_progress=lambda _: reports.append(seen()))
        assert r.outcome == "matched"
        return sync_saw + [seen()]

    after = asyncio.run(main())
    assert saw == ["req-async"] * 3
    assert after == ["req-async"] * 4
    assert reports and set(reports) == {"req-async"}


def test_completion_callback_runs_in_the_callers_context() -> None:
    async def main() -> str:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[str] = loop.create_future()
        REQUEST.set("req-done")
        _native.start({"until": {"matches": "x"}}, lambda: "x",
                      on_done=lambda: done.set_result(seen()), event_loop=loop)
        return await asyncio.wait_for(done, 20)

    assert asyncio.run(main()) == "req-done"


@pytest.mark.usefixtures("request_set")
def test_call_tool_runs_host_tools_in_the_callers_context() -> None:
    saw: list[str] = []

    def tools(name: str, arguments: dict[str, Any]) -> str:
        saw.append(seen())
        REQUEST.set("set by the tool")
        return "Running" if len(saw) >= 2 else "Pending"

    out = waitfor.call_tool("aura/wait_for", {"probe": {"tool": "status", "args": {}}, "until": {"matches": "Running"},
                                              "poll_sec": 1, "max_wait_sec": 30}, tools=tools)
    assert out["reason"] == "matched" and saw == ["req-1", "req-1"]
    assert seen() == "req-1"


def test_call_tool_async_runs_host_tools_in_the_callers_context() -> None:
    async def tools(name: str, arguments: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return f"{seen()} Running"

    async def main() -> dict[str, Any]:
        REQUEST.set("req-tool")
        return await waitfor.call_tool_async(
            "aura/wait_for", {"probe": {"tool": "status", "args": {}}, "until": {"matches": "Running"}, "max_wait_sec": 30},
            tools=tools)

    out = asyncio.run(main())
    assert out["reason"] == "matched" and out["last_observation"] == "req-tool Running"


def test_a_hung_probe_still_in_its_context_does_not_stop_the_wait_ending() -> None:
    """The probe call abandoned at the deadline is still running (in its
    copy of the context) when the wait's completion runs in another."""
    release = threading.Event()

    def probe() -> str:
        release.wait(60)
        return ""

    async def main() -> waitfor.WaitResult:
        REQUEST.set("req-hung")
        return await asyncio.wait_for(
            waitfor.wait_async({"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 200}, probe), 30)

    try:
        r = asyncio.run(main())
    finally:
        release.set()
    assert r.outcome in ("timeout", "probe_error") and r.probe.abandoned == 1


SERVER = Path(__file__).with_name("context_server.py")


async def call_server_tool(
    framework: str, tool: str, arguments: dict[str, Any], polls: int = 0
) -> tuple[dict[str, Any], list[tuple[float, float | None, str | None]]]:
    """Calls `tool` of `context_server.py FRAMEWORK`, launched as MCP
    clients launch servers, asking for progress (`polls` reports)."""
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    params = StdioServerParameters(command=PYTHON, args=[str(SERVER), framework], env=get_default_environment())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(tool, arguments, progress_callback=on_progress)
            assert not result.is_error, result.content
            out = result.structured_content
            assert isinstance(out, dict), result
            for _ in range(2000):  # notifications sent before the answer may be handled after it
                if len(progress) >= polls:
                    break
                await asyncio.sleep(0.005)
            return out, progress


def check_wait_tool(out: dict[str, Any], progress: list[tuple[float, float | None, str | None]]) -> None:
    request_id = out["request_id"]
    assert (out["outcome"], out["samples"]) == ("matched", 3)
    assert out["seen"] == [f"{request_id} span of {request_id}"] * 3
    assert progress == [(n, 3, f"sample {n} in span of {request_id}") for n in (1, 2, 3)]


def test_official_sdk_server_probe_reports_progress_in_its_request() -> None:
    check_wait_tool(*asyncio.run(call_server_tool("mcp", "wait", {"polls": 3}, polls=3)))


def test_fastmcp_server_probe_reports_progress_in_its_request() -> None:
    check_wait_tool(*asyncio.run(call_server_tool("fastmcp", "wait", {"polls": 3}, polls=3)))


def test_fastmcp_aura_wait_for_probes_a_tool_that_takes_the_request_context() -> None:
    arguments = {"probe": {"tool": "status", "args": {}}, "until": {"matches": "Running"}, "max_wait_sec": 30}
    out, _ = asyncio.run(call_server_tool("fastmcp", "wait_for", {"arguments": arguments}))
    assert out["reason"] == "matched", out
    assert out["last_observation"].startswith("Running in "), out
