"""`waitfor.mcp.register` on FastMCP and on the official SDK's high-level
and low-level servers (tests/mcp_server.py), each launched as MCP clients
launch servers (the SDK's default environment) and driven with the
official client over stdio."""

from __future__ import annotations

import asyncio
import doctest
import json
import math
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import PYTHON, cancel_once_probing
from mcp.client.session import ClientSession
from mcp.client.stdio import (
    StdioServerParameters,
    get_default_environment,
    stdio_client,
)
from test_panes import send

import waitfor
import waitfor.mcp

SERVER = Path(__file__).with_name("mcp_server.py")
FRAMEWORKS = ["fastmcp", "mcpserver", "lowlevel"]
Tools = dict[str, dict[str, Any]]


@asynccontextmanager
async def connected(
    framework: str, *options: str, tmux_tmpdir: str | None = None, logs: list[Any] | None = None
) -> AsyncIterator[tuple[ClientSession, Tools]]:
    """The server on `framework`, launched with the SDK's default
    environment (plus, for `tmux_tmpdir`, where the test's private tmux
    server listens), and its listed tools; log notifications go to `logs`."""

    async def on_log(params: Any) -> None:
        if logs is not None:
            logs.append(params)

    env = get_default_environment()
    if tmux_tmpdir is not None:
        env["TMUX_TMPDIR"] = tmux_tmpdir
    params = StdioServerParameters(command=PYTHON, args=[str(SERVER), framework, *options], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log) as session:
            await session.initialize()
            tools = {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in (await session.list_tools()).tools}
            yield session, tools


async def call(session: ClientSession, tools: Tools, name: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = await session.call_tool(name, arguments, **kw)
    assert not result.is_error, result.content
    out = result.structured_content
    assert isinstance(out, dict), result
    jsonschema.validate(out, tools[name]["outputSchema"])
    return out


async def refusal(session: ClientSession, name: str, arguments: dict[str, Any]) -> str:
    result = await session.call_tool(name, arguments)
    assert result.is_error, result
    return "\n".join(getattr(block, "text", "") for block in result.content)


def test_docstring_examples() -> None:
    assert doctest.testmod(waitfor.mcp).failed == 0


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_tools_list_gives_each_profiles_exact_definition(framework: str) -> None:
    async def main() -> Tools:
        async with connected(framework) as (_, tools):
            return tools

    tools = asyncio.run(main())
    registered = [p["profile"] for p in waitfor.profiles() if p["profile"] != "libtmux-cxx/wait_for_text"]
    assert set(tools) == {"status", "hang"} | {waitfor.tool_definition(p)["name"] for p in registered}
    for profile in registered:
        definition = waitfor.tool_definition(profile)
        listed = tools[definition["name"]]
        for key in ("title", "description", "inputSchema", "outputSchema"):
            assert listed[key] == definition[key], (profile, key)
        if profile == "aura/wait_for":
            # It probes the lent tools, which the server says only read.
            assert listed["annotations"] == {**definition["annotations"], "readOnlyHint": True, "destructiveHint": False}
        else:
            assert listed["annotations"] == definition["annotations"], profile


def test_wait_for_is_annotated_by_what_it_can_do() -> None:
    from mcp.server.lowlevel import Server

    def annotations(**options: Any) -> dict[str, Any]:
        server = Server("s")
        waitfor.mcp.register(server, ["aura/wait_for"], **options)
        return dict(waitfor.mcp.wait_for_annotations(options.get("tools", ()), options.get("tools_read_only", False),
                                                      options.get("grants")))

    # Lending a tool that may change things makes wait_for destructive.
    assert annotations(tools=["delete_marker"])["destructiveHint"] is True
    assert annotations(tools=["status"], tools_read_only=True)["readOnlyHint"] is True
    # Its built-in tools: run_command runs programs only when granted.
    assert annotations()["readOnlyHint"] is True
    assert annotations(grants=waitfor.Grants(commands=["make"]))["destructiveHint"] is True


def test_register_refuses_what_it_cannot_register() -> None:
    from mcp.server.lowlevel import Server

    with pytest.raises(waitfor.ToolError):
        waitfor.mcp.register(Server("s"), ["no/such"])
    if "libtmux-cxx/wait_for_text" in {p["profile"] for p in waitfor.profiles()}:
        with pytest.raises(ValueError, match="both tool `wait_for_text`"):
            waitfor.mcp.register(Server("s"), ["libtmux-mcp/wait_for_text", "libtmux-cxx/wait_for_text"])
    with pytest.raises(TypeError, match="cannot register tools on a dict"):
        waitfor.mcp.register({}, ["aura/wait_for"])
    with pytest.raises(TypeError, match="not a str"):
        waitfor.mcp.register(Server("s"), "aura/wait_for")
    # A bad ceiling fails the registration, not each later call.
    with pytest.raises(ValueError, match="^max_wait_ceiling must be a number of seconds above 0"):
        waitfor.mcp.register(Server("s"), ["ouro/wait"], max_wait_ceiling=math.nan)
    with pytest.raises(TypeError, match="^max_wait_ceiling must be a number of seconds, not bool"):
        waitfor.mcp.register(Server("s"), ["ouro/wait"], max_wait_ceiling=True)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_wait_for_probes_a_server_tool_and_sends_progress(framework: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.write_text("starting\n")
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))
        if len(progress) == 2:
            state.write_text("Running\n")

    async def main() -> dict[str, Any]:
        async with connected(framework) as (session, tools):
            return await call(session, tools, "wait_for",
                              {"probe": {"tool": "status", "args": {"path": str(state)}}, "until": {"matches": "Running"},
                               "poll_sec": 1, "max_wait_sec": 60},
                              progress_callback=on_progress)

    out = asyncio.run(main())
    assert out["reason"] == "matched" and out["last_observation"] == "Running\n", out
    # AURA's notices: seconds elapsed of the bound (60 s), no message.
    assert len(progress) >= 2 and progress[0][1:] == (60.0, None), progress
    assert [v for v, _, _ in progress] == sorted(v for v, _, _ in progress)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_wait_for_event_reads_only_granted_files(framework: str, tmp_path: Path) -> None:
    root = tmp_path / "events"
    root.mkdir()
    event = {"type": "build.done", "at": "2026-11-29T12:00:00Z", "by": "ci", "summary": "build 7 passed"}
    for folder in (root, tmp_path):
        (folder / "log.jsonl").write_text(json.dumps(event) + "\n")

    def arguments(folder: Path) -> dict[str, Any]:
        return {"path": str(folder / "log.jsonl"), "type": "build.done", "timeout": "10s"}

    async def main() -> tuple[dict[str, Any], str, str]:
        async with connected(framework, "--root", str(root)) as (session, tools):
            out = await call(session, tools, "wait_for_event", arguments(root))
            outside = await refusal(session, "wait_for_event", arguments(tmp_path))
            return out, outside, await refusal(session, "wait_for_event", {"path": ""})

    out, outside, bad = asyncio.run(main())
    assert out["state"] == "satisfied" and out["events"][0]["summary"] == "build 7 passed", out
    # The agent reads why, with FastMCP's error masking on too.
    assert outside.startswith("invalid_arguments: path:"), outside
    assert "outside the directories the host lets waits read" in outside, outside
    assert bad.startswith("invalid_arguments: path:") and "empty" in bad, bad


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_answer_over_the_bound_is_a_tool_error_giving_its_size(framework: str, tmp_path: Path) -> None:
    # wait_for_event repeats its arguments (`for`, and in `resume` the
    # whole call): 4 MB of them made a 17 MB message, which the TypeScript
    # SDK's stdio client does not read (it closes the session).
    log = tmp_path / "log.jsonl"
    log.write_text("")
    arguments = {"path": str(log), "for": "x" * 4_000_000, "cursor": "end", "timeout": 100}

    async def main() -> tuple[str, dict[str, Any]]:
        async with connected(framework, "--root", str(tmp_path)) as (session, tools):
            too_large = await refusal(session, "wait_for_event", arguments)
            small = await call(session, tools, "wait_for_event", {**arguments, "for": "x"})
            return too_large, small

    too_large, small = asyncio.run(main())
    assert too_large.startswith("runtime: the answer was not sent: it is "), too_large[:200]
    assert f"bytes of JSON, over the limit of {4 << 20}; " in too_large, too_large[:200]
    assert small["state"] == "timed-out", small


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_wait_for_probes_only_the_tools_lent_to_it(framework: str) -> None:
    async def main() -> str:
        async with connected(framework) as (session, _):
            return await refusal(session, "wait_for", {"probe": {"tool": "wait_for", "args": {}}, "until": {"matches": "x"},
                                                       "max_wait_sec": 5})

    text = asyncio.run(main())
    assert text.startswith("runtime:") and "wait_for may not probe `wait_for`; it may probe: status, hang" in text, text


def test_a_wait_tool_cannot_be_lent_and_tools_is_a_list() -> None:
    from mcp.server.lowlevel import Server

    with pytest.raises(ValueError, match="wait tool"):
        waitfor.mcp.register(Server("s"), ["aura/wait_for"], tools=["wait_for"])
    with pytest.raises(TypeError):
        waitfor.mcp.register(Server("s"), ["aura/wait_for"], tools="status")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_cancelled_notification_ends_the_wait_and_its_probing(framework: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.write_text("starting\n")
    calls = tmp_path / "state.calls"

    def count() -> int:
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    async def main() -> None:
        async with connected(framework) as (session, tools):
            await cancel_once_probing(session.call_tool(
                "wait_for", {"probe": {"tool": "status", "args": {"path": str(state)}}, "until": {"matches": "never"},
                             "poll_sec": 1, "max_wait_sec": 120}), count)
            # The server still answers.
            out = await session.call_tool("status", {"path": str(state)})
            assert not out.is_error, out

    asyncio.run(main())


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_cancelled_notification_cancels_the_probe_call_in_flight(framework: str, tmp_path: Path) -> None:
    marker = tmp_path / "hang"

    async def holds(text: str) -> None:
        for _ in range(600):
            if marker.exists() and marker.read_text() == text:
                return
            await asyncio.sleep(0.05)
        pytest.fail(f"the probe call never read {text!r}")

    async def main() -> None:
        async with connected(framework) as (session, _):
            task = asyncio.create_task(session.call_tool(
                "wait_for", {"probe": {"tool": "hang", "args": {"path": str(marker)}}, "until": {"matches": "x"},
                             "max_wait_sec": 120}))
            await holds("started")
            task.cancel()  # the client sends notifications/cancelled
            with pytest.raises(asyncio.CancelledError):
                await task
            await holds("cancelled")

    asyncio.run(main())


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_wait_for_text_on_a_real_pane(framework: str, pane: str) -> None:  # noqa: F811
    # libtmux-mcp's notices: progress with the timeout as total and its
    # "Waiting on pane" message, and a warning logged for an invalid regex.
    logs: list[Any] = []
    reports: list[tuple[float, float | None, str | None]] = []

    async def main() -> dict[str, Any]:
        async with connected(framework, tmux_tmpdir=os.environ["TMUX_TMPDIR"], logs=logs) as (session, tools):
            sampled = asyncio.Event()

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                reports.append((value, total, message))
                sampled.set()

            wait = asyncio.create_task(call(session, tools, "wait_for_text",
                                            {"pane_id": pane, "patterns": ["MARK_7"], "timeout": 20, "interval": 0.05},
                                            progress_callback=on_progress))
            await asyncio.wait_for(sampled.wait(), 30)
            send(pane, "printf 'MARK_%s\\n' 7")
            out = await wait
            await refusal(session, "wait_for_text", {"pane_id": pane, "patterns": ["("], "regex": True})
            return out

    out = asyncio.run(main())
    assert out["found"] is True and out["outcome"] == "matched", out
    _, total, message = reports[0]
    assert total == 20 and message is not None and message.startswith(f"Waiting on pane {pane}: "), reports[0]
    warnings = [str(log.data) for log in logs if log.level == "warning"]
    assert any("Invalid regex pattern" in text for text in warnings), logs


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_libtmux_cxx_wait_for_text_is_registered_with_its_exact_definition(framework: str) -> None:
    async def main() -> Tools:
        async with connected(framework, "--profile", "libtmux-cxx/wait_for_text") as (_, tools):
            return tools

    tools = asyncio.run(main())
    definition = waitfor.tool_definition("libtmux-cxx/wait_for_text")
    assert set(tools) == {"status", "hang", "wait_for_text"}
    listed = tools["wait_for_text"]
    for key in ("title", "description", "inputSchema", "outputSchema", "annotations"):
        assert listed[key] == definition[key], key


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_libtmux_cxx_wait_for_text_on_a_real_pane(framework: str, pane: str) -> None:  # noqa: F811
    async def main() -> tuple[dict[str, Any], dict[str, Any], str]:
        async with connected(framework, "--profile", "libtmux-cxx/wait_for_text",
                             tmux_tmpdir=os.environ["TMUX_TMPDIR"]) as (session, tools):
            send(pane, "printf 'MARK_%s\\n' 9")
            found = await call(session, tools, "wait_for_text", {"target": pane, "text": "MARK_9", "timeout_ms": 20000})
            missing = await call(session, tools, "wait_for_text", {"target": pane, "text": "never-printed", "timeout_ms": 300})
            refused = await refusal(session, "wait_for_text", {"target": pane, "text": "x", "timeout_ms": 0})
            return found, missing, refused

    found, missing, refused = asyncio.run(main())
    assert found["matched"] is True and found["timed_out"] is False and found["pane_id"] == pane, found
    assert "MARK_9" in found["text"].splitlines(), found  # the pane's text, with the output line
    assert missing["matched"] is False and missing["timed_out"] is True, missing
    assert refused.startswith("invalid_arguments:") and "timeout_ms" in refused, refused


class _Block:
    def __init__(self, text: str) -> None:
        self.text = text


def test_a_lent_tools_error_result_is_joined_no_further_than_the_bound() -> None:
    """A lent tool's ``isError`` result raises its text; a huge one is
    joined only as far as a probe error keeps it (and a character more, so
    it is known to be cut), not copied whole."""
    limit = waitfor._native.MAX_ERROR_BYTES + 1
    with pytest.raises(RuntimeError) as caught:
        waitfor.mcp._text([_Block("x" * 50_000_000), _Block("y")], True)
    assert str(caught.value) == "x" * limit
    with pytest.raises(RuntimeError) as caught:
        waitfor.mcp._text([_Block("a" * (limit - 2)), _Block("b" * 10)], True)
    assert str(caught.value) == "a" * (limit - 2) + "\nb"
    with pytest.raises(RuntimeError) as caught:
        waitfor.mcp._text([_Block("no"), _Block("way")], True)
    assert str(caught.value) == "no\nway"
    with pytest.raises(RuntimeError, match="the tool failed"):
        waitfor.mcp._text([], True)
    assert waitfor.mcp._text([_Block("a" * limit), _Block("b")], False) == "a" * limit + "\nb"
