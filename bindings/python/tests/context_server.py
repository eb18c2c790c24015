"""An MCP server (stdio) whose tool waits with `waitfor.wait_async` and a
probe that uses the request's state: `ctx.report_progress`, `ctx.request_id`
and a `ContextVar` the tool set, as a tracing span would be.

Run: ``python context_server.py mcp`` (the official SDK's `MCPServer`) or
``python context_server.py fastmcp`` (the standalone `fastmcp` package,
whose probe finds the request with `get_context()`; there `wait_for`, the
`aura/wait_for` profile, also probes the server's own `status` tool, which
takes the request's `Context`).
"""

import contextvars
import sys
from typing import Any

import waitfor

SPAN: contextvars.ContextVar[str] = contextvars.ContextVar("span")
SPEC = {"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": 20000}


async def wait_ready(ctx: Any, polls: int, find_ctx: Any) -> dict[str, Any]:
    """Waits until the probe's `polls`th call; the probe reports each call
    as progress and records the request it found."""
    SPAN.set(f"span of {ctx.request_id}")
    seen: list[str] = []

    async def probe(call: waitfor.ProbeContext) -> str:
        request = find_ctx(ctx)
        await request.report_progress(call.sample, polls, f"sample {call.sample} in {SPAN.get()}")
        seen.append(f"{request.request_id} {SPAN.get()}")
        return "ready" if call.sample >= polls else "starting"

    result = await waitfor.wait_async(SPEC, probe)
    return {"outcome": result.outcome, "samples": result.samples, "request_id": ctx.request_id, "seen": seen}


def official() -> None:
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("context")

    @server.tool()
    async def wait(polls: int, ctx: Context) -> dict[str, Any]:
        return await wait_ready(ctx, polls, lambda captured: captured)

    server.run("stdio")


def standalone() -> None:
    from fastmcp import Context, FastMCP
    from fastmcp.server.dependencies import get_context

    server = FastMCP("context")

    @server.tool()
    async def wait(polls: int, ctx: Context) -> dict[str, Any]:
        return await wait_ready(ctx, polls, lambda _: get_context())

    @server.tool()
    async def status(ctx: Context) -> str:
        return f"Running in {ctx.request_id}"

    async def own_tool(name: str, arguments: dict[str, Any]) -> str:
        answer = await server.call_tool(name, arguments)
        return "".join(getattr(block, "text", "") for block in answer.content)

    @server.tool()
    async def wait_for(arguments: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return await waitfor.call_tool_async("aura/wait_for", arguments, tools=own_tool)

    server.run("stdio")


if __name__ == "__main__":
    {"mcp": official, "fastmcp": standalone}[sys.argv[1]]()
