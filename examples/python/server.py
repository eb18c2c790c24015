"""An MCP server (official `mcp` SDK, low-level API, stdio) whose wait
tools run on libwaitfor.

Tools:

- ``run_command`` / ``read_file``: ordinary tools of this server.
- ``wait_for`` (profile ``aura/wait_for``): polls another tool of this same
  server (``run_command``, ``read_file``) until a condition holds.
- ``wait_for_text`` (profile ``libtmux-mcp/wait_for_text``) and
  ``send_keys``: wait for fresh output in a real tmux pane; keys this server
  types are recorded so their echo is not mistaken for output. Offered when
  the installed ``waitfor`` has the pane profiles.

While a wait runs the server sends ``notifications/progress`` (when the
client asked for progress), and ``notifications/cancelled`` cancels the
handler task, which cancels the wait and its probe call.

Run: ``python examples/python/server.py`` (speaks MCP on stdin/stdout).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import mcp_types as types
import waitfor
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PANE_PROFILE = "libtmux-mcp/wait_for_text"
Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


async def run_command(arguments: dict[str, Any]) -> dict[str, Any]:
    """Runs ``argv`` (no shell) and gives its output and exit status."""
    argv = arguments.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("run_command needs `argv`, a non-empty list of strings")
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=arguments.get("cwd"),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        output, _ = await process.communicate()
    except asyncio.CancelledError:
        process.kill()
        await process.wait()
        raise
    return {"output": output.decode("utf-8", "replace"), "exit_code": process.returncode}


async def read_file(arguments: dict[str, Any]) -> dict[str, Any]:
    """Reads a text file."""
    path = arguments.get("path")
    if not isinstance(path, str):
        raise ValueError("read_file needs `path`, a string")
    return {"text": await asyncio.to_thread(Path(path).read_text, errors="replace")}


async def send_keys(arguments: dict[str, Any]) -> dict[str, Any]:
    """Types keys into a tmux pane and records them as this server's echo."""
    target = arguments["pane_id"]
    keys = arguments["keys"]
    literal = bool(arguments.get("literal", True))
    enter = bool(arguments.get("enter", True))
    socket = arguments.get("socket_name")
    # Recorded before the keys go out: a wait sampling the pane in between
    # must never see an unrecorded echo. A record for keys that then fail
    # to send just expires.
    waitfor.record_send_keys(target, [keys], socket_name=socket, literal=literal, enter=enter)
    argv = ["tmux", *(["-L", socket] if socket else []), "send-keys", "-t", target]
    argv += (["-l"] if literal else []) + [keys]
    result = await run_command({"argv": argv})
    if enter and result["exit_code"] == 0:
        result = await run_command({"argv": argv[: argv.index("-t") + 2] + ["Enter"]})
    if result["exit_code"] != 0:
        raise RuntimeError(f"tmux send-keys failed: {result['output'].strip()}")
    return {"sent": True}


TOOLS: dict[str, tuple[types.Tool, Handler]] = {
    "run_command": (
        types.Tool(
            name="run_command",
            description="Run a program (argv, no shell); returns its output and exit code.",
            input_schema={
                "type": "object",
                "required": ["argv"],
                "properties": {"argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                               "cwd": {"type": "string"}},
            },
            output_schema={
                "type": "object",
                "required": ["output", "exit_code"],
                "properties": {"output": {"type": "string"}, "exit_code": {"type": ["integer", "null"]}},
            },
        ),
        run_command,
    ),
    "read_file": (
        types.Tool(
            name="read_file",
            description="Read a text file.",
            input_schema={"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}},
            output_schema={"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}},
        ),
        read_file,
    ),
}

if PANE_PROFILE in waitfor.profiles():
    TOOLS["send_keys"] = (
        types.Tool(
            name="send_keys",
            description="Type keys into a tmux pane (recorded, so wait_for_text ignores their echo).",
            input_schema={
                "type": "object",
                "required": ["pane_id", "keys"],
                "properties": {
                    "pane_id": {"type": "string"},
                    "keys": {"type": "string"},
                    "literal": {"type": "boolean", "default": True},
                    "enter": {"type": "boolean", "default": True},
                    "socket_name": {"type": "string"},
                },
            },
            output_schema={"type": "object", "required": ["sent"], "properties": {"sent": {"const": True}}},
        ),
        send_keys,
    )


async def probe_tool(name: str, arguments: dict[str, Any]) -> str:
    """The ``wait_for`` probe: one of this server's own tools, as text."""
    entry = TOOLS.get(name)
    if entry is None or name.startswith("wait_for"):
        raise LookupError(f"wait_for cannot probe `{name}`; tools: {', '.join(TOOLS)}")
    answer = await entry[1](arguments)
    return str(answer.get("output", answer.get("text", json.dumps(answer))))


def wait_tool(profile: str) -> tuple[types.Tool, Callable[[ServerRequestContext[Any], dict[str, Any]], Awaitable[dict[str, Any]]]]:
    """A profile's tool, answered by ``waitfor.call_tool_async``."""
    definition = waitfor.tool_definition(profile)

    async def handle(ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> dict[str, Any]:
        async def report(progress: waitfor.Progress) -> None:
            await ctx.session.report_progress(progress.samples, None, progress.last_line)

        return await waitfor.call_tool_async(
            profile, arguments, tools=probe_tool if profile == "aura/wait_for" else None, on_progress=report
        )

    return types.Tool.model_validate(definition), handle


WAITS = {tool.name: (tool, handle) for tool, handle in
         (wait_tool(p) for p in ("aura/wait_for", PANE_PROFILE) if p in waitfor.profiles())}


async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[tool for tool, _ in [*TOOLS.values(), *WAITS.values()]])


def answer(output: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(output))], structured_content=output
    )


def failure(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    try:
        if params.name in WAITS:
            return answer(await WAITS[params.name][1](ctx, arguments))
        if params.name in TOOLS:
            return answer(await TOOLS[params.name][1](arguments))
    except waitfor.WaitforError as err:
        return failure(f"{err.code}: {err}")
    except (ValueError, LookupError, OSError, RuntimeError) as err:
        return failure(str(err))
    return failure(f"unknown tool `{params.name}`")


server = Server("waitfor-example", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(main())
