"""An MCP server (official `mcp` SDK, low-level API, stdio) whose wait
tools run on libwaitfor.

Tools:

- ``read_file``: reads a regular file inside a directory the server was
  given with ``--root DIR`` (none by default: every read is refused).
- ``run_command``: runs a program the server was given with
  ``--allow-command PROG`` (argv, no shell); offered only then. Bounded as
  the Node example's: ``timeout_ms`` (default 10 000, at most 60 000) and
  1 MiB of output; past either the program's whole process group is
  killed and the call fails with the reason. When the call ends, however
  it ends (cancelled too), what the program left running in its process
  group is killed. Output whose answer would exceed 4 MiB of JSON (1 MiB
  of control bytes would be 13 MB) is cut to fit, and ``truncated`` says so.
- ``wait_for`` (profile ``aura/wait_for``): polls libwaitfor's built-in
  ``read_file`` or ``run_command`` until a condition holds. They reach what
  this server's own tools of those names reach (the same grants) and are
  checked before the wait starts, so the three example servers (Python,
  Node, C++) answer every ``wait_for`` call alike.
- ``wait_for_event`` (profile ``ouro/wait``): waits for an event in a JSON
  Lines log inside a ``--root`` directory; returns the ``wait/1`` envelope.
- ``wait_for_text`` (profile ``libtmux-mcp/wait_for_text``): waits for
  fresh output in a real tmux pane; with ``--allow-send-keys`` also
  ``send_keys``, which types into a pane (keys this server types are
  recorded so their echo is not mistaken for output). Offered when the
  installed ``waitfor`` has the pane profiles.

By default an agent can run no program and read no file: what it can reach
is what the command line grants (see SECURITY.md). Each tool's annotations
say what it can do with the server's options.

While a wait runs the server sends the profile's notices as its original
tool sends them: ``notifications/progress`` with a total and a message
(when the client asked for progress) and ``notifications/message`` log
warnings (when the client asked for log messages at that level). A
``notifications/cancelled`` cancels the handler task, which cancels the
wait and its probe call.

At most 1,024 wait tool calls run at once (``--max-tool-calls N`` sets
another cap); one more is answered at once with a ``too_many_calls`` tool
error, and the calls running go on.

Run: ``python examples/python/server.py [--root DIR]... [--allow-command PROG]...
[--allow-send-keys] [--max-tool-calls N]`` (speaks MCP on stdin/stdout).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import stat
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

import waitfor

PANE_PROFILE = "libtmux-mcp/wait_for_text"
READ_LIMIT = 256 * 1024
# run_command's bounds, the Node example's: its execFile timeout (default
# and ceiling) and maxBuffer. tmux calls (send_keys) get 5 s, as there.
COMMAND_DEFAULT_MS = 10_000
COMMAND_CEILING_MS = 60_000
OUTPUT_LIMIT = 1 << 20
# How long output may pause once the program has exited before the call
# answers: a process it started that left its group (``setsid``) may hold
# the output open for good.
DRAIN_GRACE_S = 0.1
TMUX_TIMEOUT_MS = 5_000
# Most JSON one tool answer (the tools/call result) may take. The answer
# carries its output twice (text and structuredContent), and a control
# byte is 6 or 7 bytes of JSON, so 1 MiB of output can encode to 13 MB:
# past the TypeScript SDK client's 10 MiB read buffer, which then closes
# the whole session. 4 MiB is the engine's own bound on a call's input,
# with room to spare under that (the examples speak stdio only).
ANSWER_LIMIT = 4 << 20
Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="An MCP server whose wait tools run on libwaitfor.")
    parser.add_argument("--root", action="append", default=[], type=Path,
                        help="a directory whose files read_file (and wait_for) may read; repeatable")
    parser.add_argument("--allow-command", action="append", default=[], metavar="PROG",
                        help="a program run_command may run (argv[0] exactly); repeatable")
    parser.add_argument("--allow-send-keys", action="store_true",
                        help="offer send_keys, which types into tmux panes (a shell there runs what it types)")
    parser.add_argument("--max-tool-calls", type=int, default=None, metavar="N",
                        help="how many wait tool calls may run at once (libwaitfor's default: 1024); "
                             "one more is answered with a too_many_calls tool error")
    return parser.parse_args(argv)


OPTIONS = options(sys.argv[1:])
if OPTIONS.max_tool_calls is not None:
    waitfor.set_max_tool_calls(OPTIONS.max_tool_calls)
ROOTS = [root.resolve() for root in OPTIONS.root]
COMMANDS: list[str] = OPTIONS.allow_command
# What libwaitfor's built-in probes (wait_for's read_file and run_command,
# the pane reads) may reach: the same as this server's tools.
GRANTS = waitfor.Grants(commands=COMMANDS, file_roots=ROOTS)


async def run_command(arguments: dict[str, Any]) -> dict[str, Any]:
    """Runs ``argv`` (no shell), if its program is allowed, and gives its
    output and exit status."""
    argv = arguments.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("run_command needs `argv`, a non-empty list of strings")
    if argv[0] not in COMMANDS:
        allowed = ", ".join(COMMANDS) or "none (start the server with --allow-command PROG)"
        raise PermissionError(f"run_command may not run `{argv[0]}`; allowed programs: {allowed}")
    timeout_ms = arguments.get("timeout_ms", COMMAND_DEFAULT_MS)
    if isinstance(timeout_ms, float) and timeout_ms.is_integer():
        timeout_ms = int(timeout_ms)  # 1000.0 is an integer to JSON Schema
    if type(timeout_ms) is not int or not 1 <= timeout_ms <= COMMAND_CEILING_MS:
        raise ValueError(f"run_command's `timeout_ms` must be an integer from 1 to {COMMAND_CEILING_MS}")
    with granted_dir(arguments.get("cwd")) as cwd:
        return fit_output(await run(argv, cwd, timeout_ms=timeout_ms))


def fit_output(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with its output cut, if need be, so that its answer stays
    within ``ANSWER_LIMIT`` bytes of JSON; a cut says so in ``truncated``.
    How much the JSON grows depends on the characters (1 byte for ``a``,
    13 for a NUL, more for an emoji), so the cut is measured, not guessed:
    each try keeps 90% of the share that would fit, and the loop ends
    because each try keeps less (what still does not fit, ``answer``
    refuses)."""
    output = result["output"]
    size = answer_size(result)
    while size > ANSWER_LIMIT and output:
        output = output[: int(len(output) * ANSWER_LIMIT / size * 0.9)]
        result = {**result, "output": output, "truncated": (
            f"the output was cut to its first {len(output)} characters: the whole answer would be "
            f"over {ANSWER_LIMIT} bytes of JSON")}
        size = answer_size(result)
    return result


def inside_roots(path: Path) -> bool:
    return any(path.is_relative_to(root) for root in ROOTS)


def outside(what: str, path: str) -> PermissionError:
    """The refusal of a path outside the roots: the same whether or not
    it exists, before or after the open, so it tells nothing about files
    outside them."""
    roots = ", ".join(map(str, ROOTS)) or "none (start the server with --root DIR)"
    return PermissionError(f"{what} {path}: outside the readable directories: {roots}")


def opened_path(fd: int) -> Path | None:
    """Where an open file or directory really is, read back from the kernel
    (its ``/proc/self/fd`` link), whatever its path named when it was
    checked; ``None`` on other systems than Linux, where only the check of
    the resolved path before the open holds."""
    if sys.platform != "linux":
        return None
    return Path(os.readlink(f"/proc/self/fd/{fd}"))


# A directory a command runs in is opened to be entered, not read: O_PATH
# on Linux, so one the server may enter but not list is opened too.
DIR_FLAGS = os.O_DIRECTORY | os.O_CLOEXEC | (os.O_PATH if sys.platform == "linux" else os.O_RDONLY)


@contextmanager
def granted_dir(cwd: Any) -> Iterator[str | None]:
    """The directory a command starts in, held open while it is used: only
    an existing directory inside a root, as libwaitfor's built-in
    run_command allows (the directory chooses what a program does: which
    ``./run.sh`` runs, which repository's hooks git obeys); none given, the
    server's own.

    A path checked is not a path used: between the check and the start, the
    directory can be renamed away and a link out of the roots put in its
    place. So the directory is opened, the directory opened is checked where
    it really is, and the command starts in that very directory: the child
    changes into ``/proc/self/fd/N``, its own copy of the descriptor (it
    closes on exec, after the change), never into the path again. On other
    systems than Linux the command starts in the path checked."""
    if cwd is None:
        yield None
        return
    if not isinstance(cwd, str):
        raise ValueError("run_command's `cwd` must be a string")
    resolved = Path(cwd).resolve()
    if not inside_roots(resolved):
        raise outside("run_command may not run in", cwd)
    try:
        fd = os.open(resolved, DIR_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        # Told only inside the roots: it says nothing about outside paths.
        raise PermissionError(f"run_command may not run in {cwd}: not a directory (it does not exist, or is a file)") from None
    try:
        real = opened_path(fd)
        if real is not None and not inside_roots(real):
            raise outside("run_command may not run in", cwd)
        yield str(resolved) if real is None else f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


async def run(argv: list[str], cwd: str | None = None, *, timeout_ms: int) -> dict[str, Any]:
    """Runs ``argv`` (no shell) and gives its output (stdout and stderr
    together) and exit status, within ``timeout_ms`` and ``OUTPUT_LIMIT``
    bytes of output; past either it raises ``RuntimeError`` with the reason.

    The program starts in a session (and process group) of its own, and
    when the call ends, however it ends, that whole group is killed: what
    the program left behind (``sh -c 'sleep 30 &'``) dies with it, and a
    grandchild cannot hold the output pipe open past the deadline. A
    process that leaves the group (``setsid``) escapes the kill, but not
    the call: the pipe is the server's own, not the process transport's,
    and once the program has exited its output is read until it pauses
    for ``DRAIN_GRACE_S``, so such a process holding the pipe open neither
    fails the call nor holds it until its timeout."""
    read_fd, write_fd = os.pipe()
    read_end = os.fdopen(read_fd, "rb", 0)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            start_new_session=True,
        )
    except BaseException:
        read_end.close()
        raise
    finally:
        os.close(write_fd)
    reader = asyncio.StreamReader()
    try:
        pipe, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), read_end)
    except BaseException:
        read_end.close()
        await end(process)
        raise

    output = bytearray()

    async def read_to_end() -> None:
        # Read no more than one byte past the limit, whatever is written.
        while chunk := await reader.read(OUTPUT_LIMIT + 1 - len(output)):
            output.extend(chunk)
            if len(output) > OUTPUT_LIMIT:
                raise RuntimeError(f"`{argv[0]}` wrote more than {OUTPUT_LIMIT} bytes of output: killed")

    async def output_then_exit() -> bytes:
        reading = asyncio.ensure_future(read_to_end())
        exited = asyncio.ensure_future(process.wait())
        try:
            await asyncio.wait([reading, exited], return_when=asyncio.FIRST_COMPLETED)
            # Exited with its output still open: read on while output comes,
            # until DRAIN_GRACE_S passes without any.
            while not reading.done():
                before = len(output)
                await asyncio.wait([reading], timeout=DRAIN_GRACE_S)
                if len(output) == before:
                    break
            if reading.done():
                reading.result()  # raises if the output went over the limit
            await exited
            return bytes(output)
        finally:
            reading.cancel()
            exited.cancel()

    try:
        written = await asyncio.wait_for(output_then_exit(), timeout_ms / 1000)
    except asyncio.TimeoutError:
        raise RuntimeError(f"`{argv[0]}` ran longer than {timeout_ms} ms: killed") from None
    finally:
        pipe.close()
        await end(process)
    return {"output": written.decode("utf-8", "replace"), "exit_code": process.returncode}


async def end(process: asyncio.subprocess.Process) -> None:
    """Kills ``process``'s process group (it leads one of its own), what
    is left of it, and reaps the program. Prompt: the transport holds no
    pipe to wait on, and SIGKILL ends what it reaches; a program the server
    may not signal (setuid) is left to the child watcher after a second
    rather than hold the call."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing left, or nothing the server may signal
    try:
        await asyncio.wait_for(process.wait(), 1)
    except asyncio.TimeoutError:
        pass


def read_granted(path: str) -> str:
    """A regular file inside a root (links resolved first), at most
    ``READ_LIMIT`` bytes; anything else is refused with the reason.

    The file opened is checked again where it really is (Linux): a
    directory on the path swapped for a link out of the roots between the
    check and the open cannot lead out. On other systems only the last
    name is guarded (``O_NOFOLLOW``)."""
    resolved = Path(path).resolve()
    if not inside_roots(resolved):
        raise outside("read_file may not read", path)
    # Only a regular file is opened: opening a FIFO lets its writer, blocked
    # in its own open, go on to find no reader, and a device may act on an
    # open. One swapped in after this look is refused after the open.
    try:
        mode = os.stat(resolved).st_mode
    except OSError:
        mode = stat.S_IFREG  # what fails here fails the open, with its reason
    if not stat.S_ISREG(mode):
        raise PermissionError(f"read_file may not read {path}: not a regular file")
    # O_NONBLOCK: a FIFO cannot hold the open. O_NOFOLLOW: the last name
    # was no link when resolved, and one put there since is refused.
    fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        real = opened_path(fd)
        if real is not None and not inside_roots(real):
            raise outside("read_file may not read", path)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PermissionError(f"read_file may not read {path}: not a regular file")
        # Checked first: fdopen of a directory raises, leaving fd open.
        file = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with file:
        data = file.read(READ_LIMIT + 1)
    if len(data) > READ_LIMIT:
        raise ValueError(f"{path} is larger than {READ_LIMIT} bytes")
    return data.decode("utf-8", "replace")


async def read_file(arguments: dict[str, Any]) -> dict[str, Any]:
    """Reads a text file inside the server's roots."""
    path = arguments.get("path")
    if not isinstance(path, str):
        raise ValueError("read_file needs `path`, a string")
    return {"text": await asyncio.to_thread(read_granted, path)}


async def send_keys(arguments: dict[str, Any]) -> dict[str, Any]:
    """Types keys into a tmux pane and records them as this server's echo."""
    target = arguments["pane_id"]
    keys = arguments["keys"]
    literal = bool(arguments.get("literal", True))
    enter = bool(arguments.get("enter", True))
    socket = arguments.get("socket_name")
    if not isinstance(target, str) or not re.fullmatch(r"%[0-9]+", target):
        raise ValueError("pane_id must be a pane id such as %1")
    if socket is not None and (not isinstance(socket, str) or socket in (".", "..")
                               or any(c in socket for c in "/\\\0")):
        # As wait_for_text: a socket name, never a path to another server
        # (empty, as none, is the default socket).
        raise ValueError("socket_name must be a tmux socket name, not a path")
    # Recorded before the keys go out: a wait sampling the pane in between
    # must never see an unrecorded echo. A record for keys that then fail
    # to send just expires.
    waitfor.record_send_keys(target, [keys], socket_name=socket, literal=literal, enter=enter)
    # -u: tmux reads and writes UTF-8 whatever the locale (MCP clients start
    # servers without LANG), as libwaitfor's own tmux calls do.
    argv = ["tmux", "-u", *(["-L", socket] if socket else []), "send-keys", "-t", target]
    # --: keys that start with "-" are keys, not send-keys flags.
    argv += (["-l"] if literal else []) + ["--", keys]
    result = await run(argv, timeout_ms=TMUX_TIMEOUT_MS)
    if enter and result["exit_code"] == 0:
        result = await run(argv[: argv.index("-t") + 2] + ["Enter"], timeout_ms=TMUX_TIMEOUT_MS)
    if result["exit_code"] != 0:
        raise RuntimeError(f"tmux send-keys failed: {result['output'].strip()}")
    return {"sent": True}


READ_ONLY = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
# A granted program may do anything the server's user can.
RUNS_PROGRAMS = types.ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True)

TOOLS: dict[str, tuple[types.Tool, Handler]] = {
    "read_file": (
        types.Tool(
            name="read_file",
            description="Read a text file inside the directories this server was given (--root).",
            input_schema={"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}},
            output_schema={"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}},
            annotations=READ_ONLY,
        ),
        read_file,
    ),
}
if COMMANDS:
    TOOLS["run_command"] = (
        types.Tool(
            name="run_command",
            description=f"Run one of these programs (argv, no shell): {', '.join(COMMANDS)}; returns its output and exit code. "
                        f"Killed, with what it started, after timeout_ms or {OUTPUT_LIMIT} bytes of output.",
            input_schema={
                "type": "object",
                "required": ["argv"],
                "properties": {"argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                               "cwd": {"type": "string"},
                               "timeout_ms": {"type": "integer", "minimum": 1, "maximum": COMMAND_CEILING_MS,
                                              "default": COMMAND_DEFAULT_MS,
                                              "description": "Kill the program (its process group) after this long."}},
            },
            output_schema={
                "type": "object",
                "required": ["output", "exit_code"],
                "properties": {"output": {"type": "string"}, "exit_code": {"type": ["integer", "null"]},
                               "truncated": {"type": "string",
                                             "description": "Present when the output was cut to fit the answer."}},
            },
            annotations=RUNS_PROGRAMS,
        ),
        run_command,
    )

if OPTIONS.allow_send_keys and PANE_PROFILE in {p["profile"] for p in waitfor.profiles()}:
    TOOLS["send_keys"] = (
        types.Tool(
            name="send_keys",
            description="Type keys into a tmux pane (recorded, so wait_for_text ignores their echo).",
            input_schema={
                "type": "object",
                "required": ["pane_id", "keys"],
                "properties": {
                    "pane_id": {"type": "string", "pattern": "^%[0-9]+$"},
                    "keys": {"type": "string"},
                    "literal": {"type": "boolean", "default": True},
                    "enter": {"type": "boolean", "default": True},
                    "socket_name": {"type": "string", "description": "tmux socket name (-L; empty: the default), not a path"},
                },
            },
            output_schema={"type": "object", "required": ["sent"], "properties": {"sent": {"const": True}}},
            # A shell in the pane runs what it types.
            annotations=RUNS_PROGRAMS,
        ),
        send_keys,
    )


def wait_tool(profile: str) -> tuple[types.Tool, Callable[[ServerRequestContext[Any], dict[str, Any]], Awaitable[dict[str, Any]]]]:
    """A profile's tool, answered by ``waitfor.call_tool_async``."""
    definition = waitfor.tool_definition(profile)

    async def handle(ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> dict[str, Any]:
        async def report(progress: waitfor.ToolProgress) -> None:
            await ctx.session.report_progress(progress.progress, progress.total, progress.message)

        async def log(level: str, message: str) -> None:
            level_name: types.LoggingLevel = level  # type: ignore[assignment]
            await ctx.session.send_log_message(level_name, message, logger="waitfor",
                                               related_request_id=ctx.request_id)

        return await waitfor.call_tool_async(profile, arguments, grants=GRANTS, on_progress=report, on_log=log)

    # wait_for does what its run_command can do; the pane wait reads panes.
    runs = profile == "aura/wait_for" and "run_command" in TOOLS
    hints = (RUNS_PROGRAMS if runs else READ_ONLY).model_dump(by_alias=True, exclude_none=True)
    return types.Tool.model_validate({**definition, "annotations": {**definition["annotations"], **hints}}), handle


WAITS = {tool.name: (tool, handle) for tool, handle in
         (wait_tool(p) for p in ("ouro/wait", "aura/wait_for", PANE_PROFILE)
          if p in {q["profile"] for q in waitfor.profiles()})}


async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[tool for tool, _ in [*TOOLS.values(), *WAITS.values()]])


def result(output: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(output))], structured_content=output
    )


def answer_size(output: dict[str, Any]) -> int:
    """Bytes of JSON the answer with ``output`` takes, as the SDK writes it."""
    return len(result(output).model_dump_json(by_alias=True, exclude_none=True).encode())


def answer(output: dict[str, Any]) -> types.CallToolResult:
    """The answer with ``output``, or a tool error if it would be larger than
    ``ANSWER_LIMIT`` bytes of JSON (a wait's events, its last sample): the
    client gets a reason it can act on, never a message it may not read."""
    size = answer_size(output)
    if size > ANSWER_LIMIT:
        return failure(f"the answer was not sent: it is {size} bytes of JSON, over this server's limit of "
                       f"{ANSWER_LIMIT}; ask for less (a narrower filter, a smaller file or output)")
    return result(output)


# An error can repeat what an agent sent (a path, a cursor): cut to this
# many characters (at most 6 bytes each as JSON), it stays within
# ANSWER_LIMIT too.
FAILURE_CHARS = 64 << 10


def failure(message: str) -> types.CallToolResult:
    if len(message) > FAILURE_CHARS:
        message = f"{message[:FAILURE_CHARS]}... (cut: {len(message)} characters in all)"
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
    except (ValueError, LookupError, OSError, RuntimeError) as err:  # PermissionError is an OSError
        return failure(str(err))
    return failure(f"unknown tool `{params.name}`")


server = Server("waitfor-example", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(main())
