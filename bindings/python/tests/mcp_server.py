"""An MCP server (stdio) whose wait tools come from `waitfor.mcp.register`,
on one of three frameworks: `fastmcp` (the standalone package, with error
masking on), `mcpserver` (the official SDK's high-level server) or
`lowlevel` (the official SDK's low-level `Server`).

Besides the waits (`wait_for`, `wait_for_event`, `wait_for_text`) it has
tools of its own: `status`, which gives a file's text and appends a line
to `PATH.calls` on each call (so a test can count the probe calls of
`wait_for`), and `hang`, which writes `started` to `PATH`, never answers,
and writes `cancelled` there when its call is cancelled. Event files may be read under `--root DIR` only.
`--profile ID` (repeatable) registers those profiles instead of the
default ones (every profile but libtmux-cxx/wait_for_text, whose tool name
libtmux-mcp's takes).

Run: ``python mcp_server.py FRAMEWORK [--root DIR]... [--profile ID]...``.
"""

import argparse
import asyncio
from pathlib import Path
from typing import Any

import waitfor
import waitfor.mcp

PROFILES = ["aura/wait_for", "ouro/wait", *(p for p in ["libtmux-mcp/wait_for_text"] if p in {q["profile"] for q in waitfor.profiles()})]


def status(path: str) -> str:
    with open(f"{path}.calls", "a") as calls:
        calls.write(".\n")
    return Path(path).read_text()


async def hang(path: str) -> str:
    Path(path).write_text("started")
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        Path(path).write_text("cancelled")
        raise
    return ""


def fastmcp(grants: waitfor.Grants, profiles: list[str]) -> None:
    from fastmcp import Context, FastMCP

    server = FastMCP("waits", mask_error_details=True)

    @server.tool(name="status")
    async def status_tool(path: str, ctx: Context) -> str:
        assert ctx.request_id  # probed in the request of the wait
        return status(path)

    server.tool(hang)
    waitfor.mcp.register(server, profiles, tools=["status", "hang"], tools_read_only=True, grants=grants)
    server.run("stdio", show_banner=False)


def mcpserver(grants: waitfor.Grants, profiles: list[str]) -> None:
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("waits")

    @server.tool(name="status")
    async def status_tool(path: str, ctx: Context) -> str:
        assert ctx.request_id
        return status(path)

    server.tool()(hang)
    waitfor.mcp.register(server, profiles, tools=["status", "hang"], tools_read_only=True, grants=grants)
    server.run("stdio")


def lowlevel(grants: waitfor.Grants, profiles: list[str]) -> None:
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    schema = {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=name, input_schema=schema) for name in ("status", "hang")])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in ("status", "hang"):
            return types.CallToolResult(content=[types.TextContent(text=f"unknown tool `{params.name}`")], is_error=True)
        path = str((params.arguments or {})["path"])
        text = await hang(path) if params.name == "hang" else status(path)
        return types.CallToolResult(content=[types.TextContent(text=text)])

    server: Server[Any] = Server("waits", on_list_tools=list_tools, on_call_tool=call_tool)
    waitfor.mcp.register(server, profiles, tools=["status", "hang"], tools_read_only=True, grants=grants)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    asyncio.run(main())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("framework", choices=["fastmcp", "mcpserver", "lowlevel"])
    parser.add_argument("--root", action="append", default=[])
    parser.add_argument("--profile", action="append", default=[])
    options = parser.parse_args()
    {"fastmcp": fastmcp, "mcpserver": mcpserver, "lowlevel": lowlevel}[options.framework](
        waitfor.Grants(file_roots=options.root), options.profile or PROFILES
    )
