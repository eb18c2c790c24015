"""A consumer of the whole public API, checked with ``mypy --strict``
(and run by test_typing.py, so it stays true)."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import waitfor
import waitfor.mcp


def probe(ctx: waitfor.ProbeContext) -> waitfor.Observation:
    ctx.wait_cancelled(0.0)
    return waitfor.Observation(f"sample {ctx.sample}", exit_code=0, gone=False, json={"n": ctx.sample})


async def async_probe() -> dict[str, Any]:
    return {"ready": True}


def on_progress(progress: waitfor.Progress) -> None:
    print(progress.samples, progress.elapsed_ms, progress.last_line, progress.to_dict())


def on_tool_progress(progress: waitfor.ToolProgress) -> None:
    print(progress.progress, progress.total, progress.message, progress.to_dict())
    notice: tuple[float, float | None, str | None] = waitfor.mcp.progress_notice(progress)
    print(notice)


def on_log(level: str, message: str) -> None:
    print(level, message)


def tools(name: str, arguments: dict[str, Any]) -> str:
    return f"{name} {arguments} Running"


async def async_tools(name: str, arguments: dict[str, Any]) -> bytes:
    return b"Running"


def blocking() -> None:
    policy = waitfor.Policy(max_wait_ceiling=10.0, output_cap=4096)
    result: waitfor.WaitResult = waitfor.wait(
        {"until": {"matches": "sample 2"}, "interval_ms": 10}, probe, on_progress=on_progress, policy=policy
    )
    outcome: waitfor.Outcome = result.outcome
    tail: waitfor.Tail = result.tail
    accounting: waitfor.ProbeAccounting = result.probe
    index: int | None = result.matched_index
    print(outcome, tail.lines, tail.truncated, accounting.errors, accounting.abandoned, accounting.last_error, index)
    print(result.ok, result.to_dict(), result.last_observation, result.probe_exception, result.resume)
    result.raise_for_probe_error()
    handle: waitfor.WaitHandle = waitfor.start('{"until": {"matches": "x"}}', lambda: "x", stream=False)
    handle.wake()
    handle.cancel()
    print(handle.done(), handle.result(timeout=10).samples)
    out: dict[str, Any] = waitfor.call_tool(
        "aura/wait_for",
        {"probe": {"tool": "status", "args": {}}, "until": {"matches": "Running"}},
        tools=tools,
        on_progress=on_tool_progress,
        on_log=on_log,
        max_wait_ceiling=datetime.timedelta(seconds=5),
    )
    print(out, waitfor.profiles(), waitfor.tool_definitions(), waitfor.tool_definition("aura/wait_for"))
    previous: int = waitfor.set_max_tool_calls(4096)
    cap: int = waitfor.max_tool_calls()
    print(cap, waitfor.set_max_tool_calls(previous))
    vector: dict[str, Any] = {"spec": {"until": {"matches": "x"}}, "script": {"steps": [{"text": "x"}]}}
    print(waitfor.simulate(vector), waitfor.parse_duration("2m"), waitfor.format_duration(120_000))
    print(waitfor.RESULT_SCHEMA["type"], waitfor.SPEC_SCHEMA["type"])


async def nonblocking() -> None:
    result = await waitfor.wait_async({"until": {"json": {"pointer": "/ready", "equals": True}}}, async_probe)
    out = await waitfor.call_tool_async(
        "aura/wait_for", {"probe": {"tool": "status", "args": {}}, "until": {"matches": "Running"}}, tools=async_tools
    )
    print(result.samples, out["reason"])


def mcp_tools() -> None:
    from mcp.server.lowlevel import Server

    names: list[str] = waitfor.mcp.register(
        Server("typed"), ["aura/wait_for", "ouro/wait"], tools=["status"], grants=waitfor.Grants(file_roots=["/tmp"]),
        max_wait_ceiling=datetime.timedelta(seconds=60),
    )
    print(names)


def errors() -> None:
    try:
        waitfor.wait({"until": {}}, lambda: "")
    except waitfor.SpecError as err:
        field: str = err.field
        rule: str = err.rule
        print(field, rule, err.code)
    except (waitfor.ProbeError, waitfor.ToolError, waitfor.InternalError) as err:
        print(err.code, err.__cause__)
    except waitfor.WaitforError as err:
        print(err.code)


if __name__ == "__main__":
    blocking()
    asyncio.run(nonblocking())
    mcp_tools()
    errors()
