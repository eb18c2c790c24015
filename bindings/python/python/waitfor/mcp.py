"""libwaitfor's wait tools on an MCP server, in one line.

:func:`register` adds profiles (``aura/wait_for``, ``ouro/wait``,
``libtmux-mcp/wait_for_text``, ...; see :func:`waitfor.profiles`) as tools
of a server built on the ``fastmcp`` package (``FastMCP``) or on the
official ``mcp`` SDK (its high-level ``MCPServer`` or its low-level
``Server``)::

    from fastmcp import FastMCP
    import waitfor
    import waitfor.mcp

    server = FastMCP("builds")

    @server.tool()
    def build_status() -> str:
        return open("/srv/build/status").read()

    # wait_for may poll build_status, no other tool; wait_for_event may
    # read event files under /srv/events, nothing else.
    waitfor.mcp.register(server, ["aura/wait_for", "ouro/wait"], tools=["build_status"],
                         grants=waitfor.Grants(file_roots=["/srv/events"]))
    server.run()

Each tool is the profile's own: its exact ``inputSchema`` and
``outputSchema``, title, description and annotations. While a wait runs it
sends the profile's progress as ``notifications/progress`` when the client
asked for progress (gave a progress token), with the ``total`` and
``message`` the profile's original tool sends, and its log warnings as
``notifications/message`` through the framework's logging;
``notifications/cancelled`` cancels the wait and the probe call in flight. Refused arguments and waits that could not finish are the
framework's tool errors (FastMCP's ``ToolError``, which error masking lets
through; the SDK's ``isError`` result), their text ``"code: message"``, so
the agent reads why; so is an answer over ``ANSWER_LIMIT`` (4 MiB) of JSON.

``aura/wait_for`` probes the server's own tools named in ``tools`` (none
by default), called as a client's call would be, in the request of the
wait; without ``tools`` its built-in ``run_command`` and ``read_file``
reach only what ``grants`` allow. ``grants`` (:class:`waitfor.Grants`) is what the profiles' own
readers may reach (``wait_for_event``'s files, tmux sockets given as
paths): nothing by default. See SECURITY.md.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import waitfor
from waitfor import _native

__all__ = ["progress_notice", "register", "wait_for_annotations"]

AURA = "aura/wait_for"

Report = Callable[[float, float | None, str | None], Awaitable[None]]
"""``report_progress(progress, total, message)`` of the framework's request."""
Log = Callable[[str, str], Awaitable[None]]
"""Sends a log notice (level, message) as the framework's request logs."""
OwnTool = Callable[[str, dict[str, Any]], Awaitable[str]]
"""Calls one of the server's tools and gives its text."""


def register(
    server: Any,
    profiles: Sequence[str],
    *,
    tools: Sequence[str] = (),
    tools_read_only: bool = False,
    grants: waitfor.Grants | None = None,
    max_wait_ceiling: float | datetime.timedelta | None = None,
) -> list[str]:
    """Adds each profile's tool to ``server`` (a ``fastmcp.FastMCP``, an
    ``mcp.server.mcpserver.MCPServer`` or an ``mcp.server.lowlevel.Server``)
    and gives the tool names. ``tools`` names the server's tools that
    ``aura/wait_for`` may probe (none by default: a tool probed again and
    again should only observe); ``wait_for``'s annotations follow what it
    can do: it is marked destructive when it probes lent tools, unless
    ``tools_read_only`` says they only read, or when ``grants`` lets its
    built-in ``run_command`` run programs. ``grants`` bounds the profiles' own
    readers (nothing by default); ``max_wait_ceiling`` (seconds) overrides
    the profiles' own ceilings on a wait's time limit.

    An unknown profile raises :class:`waitfor.ToolError`; two profiles of
    the same tool name (``libtmux-mcp/wait_for_text`` and
    ``libtmux-cxx/wait_for_text``) raise ``ValueError``.

    >>> from mcp.server.lowlevel import Server
    >>> import waitfor.mcp
    >>> waitfor.mcp.register(Server("demo"), ["aura/wait_for", "ouro/wait"])
    ['wait_for', 'wait_for_event']
    """
    waits = _Waits(profiles, tools, grants, max_wait_ceiling)
    if AURA in waits.profiles.values():
        name = waitfor.tool_definition(AURA)["name"]
        waits.definitions[name] = {
            **waits.definitions[name],
            "annotations": wait_for_annotations(tools, tools_read_only, grants),
        }
    if _is(server, "fastmcp.server.server", "FastMCP"):
        _on_fastmcp(server, waits)
    elif _is(server, "mcp.server.mcpserver.server", "MCPServer"):
        _on_mcpserver(server, waits)
    elif _is(server, "mcp.server.lowlevel.server", "Server"):
        _on_lowlevel(server, waits)
    else:
        raise TypeError(
            f"cannot register tools on a {type(server).__name__}: expected fastmcp.FastMCP, "
            "mcp.server.mcpserver.MCPServer or mcp.server.lowlevel.Server"
        )
    return list(waits.definitions)


def progress_notice(progress: waitfor.ToolProgress) -> tuple[float, float | None, str | None]:
    """The ``notifications/progress`` fields (``progress``, ``total``,
    ``message``) for a profile's progress notice, as its original tool
    sends them.

    >>> import waitfor, waitfor.mcp
    >>> reports = []
    >>> out = waitfor.call_tool("aura/wait_for",
    ...     {"probe": {"tool": "status", "args": {}}, "until": {"matches": "ready"}, "poll_sec": 1, "max_wait_sec": 5},
    ...     tools=lambda name, args: "ready" if reports else "starting",
    ...     on_progress=lambda p: reports.append(waitfor.mcp.progress_notice(p)))
    >>> reports[0][1:]  # AURA sends seconds elapsed of the bound, no message
    (5.0, None)
    """
    return progress.progress, progress.total, progress.message


def wait_for_annotations(
    tools: Sequence[str], tools_read_only: bool, grants: waitfor.Grants | None
) -> dict[str, Any]:
    """``aura/wait_for``'s annotations for what it can do: it calls the lent
    ``tools`` again and again (read-only only if the host says they are),
    or else its built-in tools within ``grants`` (``run_command`` runs
    programs; ``read_file`` only reads).

    >>> import waitfor.mcp
    >>> waitfor.mcp.wait_for_annotations(["delete_marker"], False, None)["destructiveHint"]
    True
    >>> waitfor.mcp.wait_for_annotations(["build_status"], True, None)["readOnlyHint"]
    True
    """
    annotations = dict(waitfor.tool_definition(AURA)["annotations"])
    runs_programs = grants is not None and bool(grants.commands)
    read_only = tools_read_only if tools else not runs_programs
    annotations.update(readOnlyHint=read_only, destructiveHint=not read_only)
    return annotations


def _is(server: Any, module: str, name: str) -> bool:
    """Whether ``server`` is a ``module.name``; an instance's module is
    already imported, so nothing is imported here."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(server, getattr(loaded, name))


def _refusal(err: waitfor.WaitforError) -> str:
    return f"{err.code}: {err}"


def _text(content: Iterable[Any], is_error: bool | None) -> str:
    """A tool result's text blocks; an error result raises its text.

    An error's text is joined only as far as a probe error keeps it
    (``_native.MAX_ERROR_BYTES``, and one character to know it was cut):
    a huge error result is not copied whole under the interpreter lock."""
    texts = (block.text for block in content if isinstance(getattr(block, "text", None), str))
    if not is_error:
        return "\n".join(texts)
    limit = _native.MAX_ERROR_BYTES + 1
    head: list[str] = []
    size = 0
    for text in texts:
        head.append(text[: limit - size])
        size += len(head[-1]) + 1
        if size > limit:
            break
    raise RuntimeError("\n".join(head)[:limit] or "the tool failed")


class _Waits:
    """The profiles registered on one server and what their waits may reach."""

    def __init__(
        self,
        profiles: Sequence[str],
        tools: Sequence[str],
        grants: waitfor.Grants | None,
        max_wait_ceiling: float | datetime.timedelta | None,
    ) -> None:
        if isinstance(profiles, str) or isinstance(tools, str):
            raise TypeError("profiles and tools are lists of names, not a str")
        self.definitions: dict[str, dict[str, Any]] = {}
        self.profiles: dict[str, str] = {}
        for profile in profiles:
            definition = waitfor.tool_definition(profile)
            name = definition["name"]
            if name in self.definitions:
                raise ValueError(
                    f"{self.profiles[name]} and {profile} are both tool `{name}`: register them on different servers"
                )
            self.definitions[name] = definition
            self.profiles[name] = profile
        lent = [tool for tool in tools if tool in self.definitions]
        if lent:
            raise ValueError(f"`{lent[0]}` is a wait tool: wait_for may not probe it")
        self.tools = list(tools)
        self.grants = grants
        # Checked now: a bad ceiling fails the registration, not every call.
        waitfor._seconds(max_wait_ceiling)
        self.max_wait_ceiling = max_wait_ceiling

    async def answer(
        self, name: str, arguments: dict[str, Any], own_tool: OwnTool, report: Report, log: Log
    ) -> dict[str, Any]:
        """Runs tool ``name``'s wait; ``own_tool`` lends the server's tools
        to ``aura/wait_for``, ``report`` sends progress, ``log`` log notices."""

        async def probe_tool(tool: str, tool_arguments: dict[str, Any]) -> str:
            if tool not in self.tools:
                raise LookupError(f"wait_for may not probe `{tool}`; it may probe: {', '.join(self.tools)}")
            return await own_tool(tool, tool_arguments)

        async def on_progress(progress: waitfor.ToolProgress) -> None:
            await report(*progress_notice(progress))

        profile = self.profiles[name]
        output = await waitfor.call_tool_async(
            profile,
            arguments,
            tools=probe_tool if profile == AURA and self.tools else None,
            grants=self.grants,
            on_progress=on_progress,
            on_log=log,
            max_wait_ceiling=self.max_wait_ceiling,
        )
        size = _answer_size(output)
        if size > ANSWER_LIMIT:
            raise waitfor.ToolError(
                f"the answer was not sent: it is {size} bytes of JSON, over the limit of {ANSWER_LIMIT}; "
                "ask for less (shorter arguments, a narrower filter)"
            )
        return output


ANSWER_LIMIT = 4 << 20
"""The most bytes of JSON a wait's answer (its ``tools/call`` result) may
take. An answer carries its output twice (text and ``structuredContent``),
and ``wait_for_event`` repeats its arguments in it (``for``, ``target``, and
the whole call in ``resume``): 4 MB of arguments made a 17 MB message, and
the TypeScript SDK's stdio client reads at most 10 MiB, then closes the
session with every call in it. Past this bound the answer is a tool error
(code ``runtime``) that gives its size."""


def _answer_size(output: dict[str, Any]) -> int:
    """Bytes of JSON of the answer that carries ``output``, as sent."""
    answer = {"content": [{"type": "text", "text": json.dumps(output)}], "structuredContent": output}
    return len(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode())


def _on_fastmcp(server: Any, waits: _Waits) -> None:
    from fastmcp.exceptions import ToolError
    from fastmcp.server.dependencies import get_context
    from fastmcp.tools import Tool, ToolResult
    from mcp_types import ToolAnnotations

    async def own_tool(name: str, arguments: dict[str, Any]) -> str:
        result = await server.call_tool(name, arguments)
        return _text(result.content, result.is_error)

    class WaitTool(Tool):
        """A profile's tool: its schemas as they are, answered by libwaitfor."""

        async def run(self, arguments: dict[str, Any]) -> ToolResult:
            ctx = get_context()

            async def log(level: str, message: str) -> None:
                await ctx.log(message, level=level)  # type: ignore[arg-type]

            try:
                output = await waits.answer(self.name, arguments, own_tool, ctx.report_progress, log)
            except waitfor.WaitforError as err:
                raise ToolError(_refusal(err)) from err
            return ToolResult(content=json.dumps(output), structured_content=output)

    for name, definition in waits.definitions.items():
        server.add_tool(
            WaitTool(
                name=name,
                title=definition.get("title"),
                description=definition["description"],
                parameters=definition["inputSchema"],
                output_schema=definition["outputSchema"],
                annotations=ToolAnnotations.model_validate(definition["annotations"]),
            )
        )


def _on_mcpserver(server: Any, waits: _Waits) -> None:
    from mcp.server.mcpserver.context import Context
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.func_metadata import func_metadata
    from mcp_types import CallToolResult, TextContent, ToolAnnotations

    class WaitTool(Tool):
        """A profile's tool: its schemas as they are, answered by libwaitfor."""

        output: dict[str, Any]

        @property  # the profile's schema, not one made from a function's return type
        def output_schema(self) -> dict[str, Any] | None:
            return self.output

        async def run(self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False) -> Any:
            async def own_tool(name: str, tool_arguments: dict[str, Any]) -> str:
                # As the SDK calls a tool from another: same request, no multi-round input of its own.
                result = await context.mcp_server.call_tool(name, tool_arguments, context._nested_invocation())
                return _text(getattr(result, "content", ()), getattr(result, "is_error", True))

            async def log(level: str, message: str) -> None:
                await context.log(level, message, logger_name="waitfor")  # type: ignore[arg-type]

            try:
                output = await waits.answer(self.name, arguments, own_tool, context.report_progress, log)
            except waitfor.WaitforError as err:
                raise ToolError(_refusal(err)) from err
            if not convert_result:
                return output
            return CallToolResult(content=[TextContent(text=json.dumps(output))], structured_content=output)

    async def answered_by_run() -> None:
        """Stands for the tool's function, which ``WaitTool.run`` replaces."""

    tools = server._tool_manager  # MCPServer adds only functions through its public API
    for name, definition in waits.definitions.items():
        if tools.get_tool(name) is not None:
            raise ValueError(f"the server already has a tool `{name}`")
        tools._tools[name] = WaitTool(
            fn=answered_by_run,
            name=name,
            title=definition.get("title"),
            description=definition["description"],
            parameters=definition["inputSchema"],
            output=definition["outputSchema"],
            fn_metadata=func_metadata(answered_by_run),
            is_async=True,
            context_kwarg=None,
            annotations=ToolAnnotations.model_validate(definition["annotations"]),
        )


def _on_lowlevel(server: Any, waits: _Waits) -> None:
    from mcp_types import (
        CallToolRequestParams,
        CallToolResult,
        ListToolsResult,
        PaginatedRequestParams,
        TextContent,
        Tool,
    )

    listed = server.get_request_handler("tools/list")
    called = server.get_request_handler("tools/call")
    ours = [Tool.model_validate(definition) for definition in waits.definitions.values()]

    async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        result = await listed.handler(ctx, params) if listed else ListToolsResult(tools=[])
        if result.next_cursor is None:  # the last page
            result = result.model_copy(update={"tools": [*result.tools, *ours]})
        return result

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> Any:
        if params.name not in waits.definitions:
            if called is None:
                return CallToolResult(content=[TextContent(text=f"unknown tool `{params.name}`")], is_error=True)
            return await called.handler(ctx, params)

        async def own_tool(name: str, arguments: dict[str, Any]) -> str:
            if called is None:
                raise LookupError(f"unknown tool `{name}`")
            result = await called.handler(ctx, CallToolRequestParams(name=name, arguments=arguments))
            return _text(getattr(result, "content", ()), getattr(result, "is_error", True))

        async def log(level: str, message: str) -> None:
            await ctx.session.send_log_message(level, message, logger="waitfor", related_request_id=ctx.request_id)

        try:
            output = await waits.answer(params.name, params.arguments or {}, own_tool, ctx.session.report_progress, log)
        except waitfor.WaitforError as err:
            return CallToolResult(content=[TextContent(text=_refusal(err))], is_error=True)
        return CallToolResult(content=[TextContent(text=json.dumps(output))], structured_content=output)

    server.add_request_handler("tools/list", PaginatedRequestParams, list_tools)
    server.add_request_handler("tools/call", CallToolRequestParams, call_tool)
    schema_of = server.get_tool_input_schema
    if schema_of is not None:
        server.get_tool_input_schema = lambda name: (
            waits.definitions[name]["inputSchema"] if name in waits.definitions else schema_of(name)
        )
