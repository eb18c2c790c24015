"""The example MCP server (examples/python/server.py) driven by the
official MCP client over stdio; every structured result is validated
against the tool's outputSchema."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import importlib.util
import json
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
from conftest import PYTHON, ROOT, cancel_once_probing
from mcp.client.session import ClientSession
from mcp.client.stdio import (
    StdioServerParameters,
    get_default_environment,
    stdio_client,
)

SERVER = ROOT / "examples" / "python" / "server.py"


def recording_tmux(directory: Path) -> Path:
    """Makes `directory/tmux`, which appends its arguments (one call a line)
    to the file it returns and runs the real tmux: first on a server's PATH,
    it shows every tmux call the server makes."""
    real = shutil.which("tmux")
    assert real is not None
    calls = directory / "tmux-calls"
    shim = directory / "tmux"
    shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >>{shlex.quote(str(calls))}\nexec {shlex.quote(real)} "$@"\n')
    shim.chmod(0o755)
    return calls


# Starts a Python program (argv[2:]) with its data segment limited to
# argv[1] bytes; the limit holds across the exec.
LIMITED = ("import os, resource, sys; n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_DATA, (n, n)); "
           "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])")


@asynccontextmanager
async def connected(
    *options: str, tmux_tmpdir: str | None = None, path_first: Path | None = None, data_limit: int | None = None,
    **client: Any,
) -> AsyncIterator[tuple[ClientSession, dict[str, dict[str, Any]]]]:
    """Starts the server with command-line `options` (what it grants) as MCP
    clients do, with the SDK's default (minimal) environment, not the test's
    own; `tmux_tmpdir` adds only where the test's private tmux server
    listens, which a user's server would not need; `path_first` goes in
    front of PATH; `data_limit` (bytes) bounds the server's memory, so that
    a server holding memory without bound fails instead of the machine."""
    env = get_default_environment()
    if tmux_tmpdir is not None:
        env["TMUX_TMPDIR"] = tmux_tmpdir
    if path_first is not None:
        env["PATH"] = f"{path_first}{os.pathsep}{env.get('PATH', os.defpath)}"
    args = [str(SERVER), *options]
    if data_limit is not None:
        args = ["-c", LIMITED, str(data_limit), *args]
    params = StdioServerParameters(command=PYTHON, args=args, env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, **client) as session:
            await session.initialize()
            tools = {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in (await session.list_tools()).tools}
            yield session, tools


async def call(session: ClientSession, tools: dict[str, dict[str, Any]], name: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = await session.call_tool(name, args, **kw)
    assert not result.is_error, result.content
    out = result.structured_content
    assert isinstance(out, dict)
    jsonschema.validate(out, tools[name]["outputSchema"])
    return out


def test_wait_for_probes_a_granted_file_and_command_with_progress(tmp_path: Path) -> None:
    flag = tmp_path / "state"
    flag.write_text("starting\n")
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))
        if len(progress) == 2:
            flag.write_text("Running\n")

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with connected("--root", str(tmp_path), "--allow-command", "echo") as (session, tools):
            assert {"wait_for", "run_command", "read_file"} <= set(tools)
            assert tools["wait_for"]["outputSchema"]["required"]
            via_file = await call(
                session, tools, "wait_for",
                {"probe": {"tool": "read_file", "args": {"path": str(flag)}}, "until": {"matches": "Running"},
                 "poll_sec": 1, "max_wait_sec": 30},
                progress_callback=on_progress,
            )
            via_command = await call(
                session, tools, "wait_for",
                {"probe": {"tool": "run_command", "args": {"argv": ["echo", "pods 3/3"]}}, "until": {"matches": "3/3"}},
            )
            return via_file, via_command

    via_file, via_command = asyncio.run(main())
    assert via_file["reason"] == "matched" and via_file["samples"] >= 3
    # AURA sends no progress of its own: seconds elapsed of the bound, no message.
    assert [v for v, _, _ in progress] == sorted(v for v, _, _ in progress)
    assert {(t, m) for _, t, m in progress} == {(30.0, None)}
    assert via_command["reason"] == "matched"


def test_run_command_runs_only_in_a_directory_inside_the_roots(tmp_path: Path) -> None:
    """The directory picks what a granted program does (`./run.sh`): the
    agent's `cwd` must lie inside a root, links resolved; in run_command
    and in wait_for's built-in run_command alike."""
    root, other = tmp_path / "root", tmp_path / "other"
    for directory, says in ((root, "mine"), (other, "theirs")):
        directory.mkdir()
        script = directory / "run.sh"
        script.write_text(f"#!/bin/sh\necho {says}\n")
        script.chmod(0o755)
    (root / "link").symlink_to(other)

    async def main() -> tuple[dict[str, Any], list[str]]:
        async with connected("--root", str(root), "--allow-command", "./run.sh") as (session, tools):
            ran = await call(session, tools, "run_command", {"argv": ["./run.sh"], "cwd": str(root)})
            refused = []
            for cwd in (other, root / "link"):
                direct = await session.call_tool("run_command", {"argv": ["./run.sh"], "cwd": str(cwd)})
                waited = await session.call_tool(
                    "wait_for",
                    {"probe": {"tool": "run_command", "args": {"argv": ["./run.sh"], "cwd": str(cwd)}},
                     "until": {"matches": "theirs"}, "max_wait_sec": 5},
                )
                for r in (direct, waited):
                    assert r.is_error, r.content
                    refused.append(r.content[0].text)  # type: ignore[union-attr]
            return ran, refused

    ran, refused = asyncio.run(main())
    assert ran["output"] == "mine\n"
    assert len(refused) == 4
    assert all("theirs" not in text for text in refused), refused
    assert sum("outside the readable directories" in text for text in refused) == 2, refused
    assert sum("leave cwd out" in text for text in refused) == 2, refused


def in_process(monkeypatch: pytest.MonkeyPatch, *options: str) -> ModuleType:
    """The example server's module, imported in this process with command
    line `options` (it reads them when imported), so that a test can call
    its own tools' functions and patch what they call."""
    monkeypatch.setattr(sys, "argv", [str(SERVER), *options])
    spec = importlib.util.spec_from_file_location("example_server_in_process", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def swap_for_link(directory: Path, target: Path) -> None:
    """What an agent with write access inside a root (a granted command)
    can do between the server's check of a path and its use: rename the
    checked `directory` away (it stays inside the root) and put a link to
    `target`, out of the roots, in its place."""
    directory.rename(directory.with_name(directory.name + ".old"))
    directory.symlink_to(target)


def swap_once_resolved(monkeypatch: pytest.MonkeyPatch, resolved: Path, directory: Path, target: Path) -> list[bool]:
    """Patches `Path.resolve` so that the first time a path resolves to
    `resolved`, `directory` is swapped for a link to `target` right after:
    the server's check of the resolved path (a comparison of names) then
    passes, and whatever it does with that path next meets the link. The
    race an agent would have to win, won every time. The list it returns
    holds True once the swap was made."""
    real_resolve = Path.resolve
    swapped: list[bool] = []

    def resolve_then_swap(self: Path, strict: bool = False) -> Path:
        out = real_resolve(self, strict)
        if out == resolved and not swapped:
            swap_for_link(directory, target)
            swapped.append(True)
        return out

    monkeypatch.setattr(Path, "resolve", resolve_then_swap)
    return swapped


# The server checks what it opened through /proc/self/fd; elsewhere only
# the check before the open holds (SECURITY.md).
LINUX_ONLY = pytest.mark.skipif(sys.platform != "linux", reason="the opened file is checked through /proc/self/fd")


@LINUX_ONLY
def test_read_file_never_reads_through_a_directory_swapped_for_a_link_out_of_the_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read_file checks the resolved path, then opens it: a directory on
    that path swapped for a link out of the roots in between must not lead
    the open out. The file opened is checked where it really is."""
    root, elsewhere = tmp_path.resolve() / "root", tmp_path.resolve() / "elsewhere"
    (root / "logs").mkdir(parents=True)
    elsewhere.mkdir()
    (root / "logs" / "app.log").write_text("inside\n")
    (elsewhere / "app.log").write_text("SECRET\n")
    server = in_process(monkeypatch, "--root", str(root))
    log = root / "logs" / "app.log"
    assert server.read_granted(str(log)) == "inside\n"

    swapped = swap_once_resolved(monkeypatch, log, root / "logs", elsewhere)
    with pytest.raises(PermissionError, match="outside the readable directories"):
        server.read_granted(str(log))
    assert swapped
    # The swap took: by name, the path now leads out.
    monkeypatch.undo()
    assert (root / "logs" / "app.log").read_text() == "SECRET\n"


def test_an_error_repeating_what_the_agent_sent_stays_within_the_answer_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = in_process(monkeypatch)
    said = server.failure("\x01" * 4_000_000)
    assert said.is_error
    assert server.ANSWER_LIMIT > len(said.model_dump_json(by_alias=True).encode()), "over the bound"


@LINUX_ONLY
def test_read_file_of_a_directory_is_refused_and_leaks_no_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fdopen of a directory raises before it owns the descriptor: 500 such
    calls left 500 open, until every read of the server failed."""
    (tmp_path / "sub").mkdir()
    server = in_process(monkeypatch, "--root", str(tmp_path))
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        with pytest.raises(PermissionError, match="not a regular file"):
            server.read_granted(str(tmp_path / "sub"))
    assert len(os.listdir("/proc/self/fd")) == before


@LINUX_ONLY
def test_read_file_refuses_a_fifo_without_opening_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a FIFO lets its writer, blocked in its own open, go on to
    find no reader (a broken pipe); a device may act on an open. The kernel
    tells of every open (inotify's IN_OPEN, queued by the open itself)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    server = in_process(monkeypatch, "--root", str(tmp_path))
    libc = ctypes.CDLL(None, use_errno=True)
    watch = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert watch >= 0
    try:
        in_open = 0x20
        assert libc.inotify_add_watch(watch, bytes(fifo), in_open) >= 0
        with pytest.raises(PermissionError, match="not a regular file"):
            server.read_granted(str(fifo))
        with pytest.raises(BlockingIOError):
            os.read(watch, 4096)  # no open to tell of
    finally:
        os.close(watch)


@LINUX_ONLY
@pytest.mark.parametrize("swap_at", ["check", "start"])
def test_run_command_never_starts_in_a_cwd_swapped_for_a_link_out_of_the_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swap_at: str
) -> None:
    """run_command checks its resolved `cwd`, then starts the program
    there: the directory swapped for a link out of the roots right after
    the check (`check`) is refused, and swapped while the program starts
    (`start`) changes nothing: the program starts in the directory that
    was opened and checked, which the swap renamed but did not move out."""
    root, elsewhere = tmp_path.resolve() / "root", tmp_path.resolve() / "elsewhere"
    work = root / "work"
    for directory, says in ((work, "mine"), (elsewhere, "theirs")):
        directory.mkdir(parents=True)
        script = directory / "run.sh"
        script.write_text(f"#!/bin/sh\necho {says}\n")
        script.chmod(0o755)
    server = in_process(monkeypatch, "--root", str(root), "--allow-command", "./run.sh")
    call = {"argv": ["./run.sh"], "cwd": str(work)}
    assert asyncio.run(server.run_command(call))["output"] == "mine\n"

    if swap_at == "check":
        swapped = swap_once_resolved(monkeypatch, work, work, elsewhere)
        with pytest.raises(PermissionError, match="outside the readable directories"):
            asyncio.run(server.run_command(call))
    else:
        real_exec = asyncio.create_subprocess_exec
        swapped = []

        async def swap_then_start(*argv: Any, **kw: Any) -> Any:
            swap_for_link(work, elsewhere)
            swapped.append(True)
            return await real_exec(*argv, **kw)

        monkeypatch.setattr(asyncio, "create_subprocess_exec", swap_then_start)
        assert asyncio.run(server.run_command(call))["output"] == "mine\n"
    assert swapped and work.is_symlink()
    # A cwd that does not exist is refused, not left for a link to fill.
    with pytest.raises(PermissionError, match="not a directory"):
        asyncio.run(server.run_command({"argv": ["./run.sh"], "cwd": str(root / "later")}))


def error_text(result: Any) -> str:
    assert result.is_error, result.content
    text = result.content[0].text
    assert isinstance(text, str)
    return text


def test_run_command_kills_a_program_past_1_mib_of_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the Node example's maxBuffer: more than 1 MiB of output and the
    program is killed, and the call fails saying so; the server reads no
    more than that, so an endless writer costs it nothing (it runs under a
    512 MiB data limit here: holding the output without bound, it would
    fail with MemoryError instead)."""

    async def main() -> tuple[dict[str, Any], str, float]:
        async with connected("--allow-command", "cat", "--allow-command", "echo", data_limit=512 << 20) as (session, tools):
            started = time.monotonic()
            endless = await asyncio.wait_for(session.call_tool("run_command", {"argv": ["cat", "/dev/zero"]}), 30)
            took = time.monotonic() - started
            # The server is still there, and still answers.
            assert (await call(session, tools, "run_command", {"argv": ["echo", "alive"]}))["output"] == "alive\n"
            return tools["run_command"], error_text(endless), took

    tool, refused, took = asyncio.run(main())
    assert refused == "`cat` wrote more than 1048576 bytes of output: killed", refused
    assert took < 10, took
    assert "1048576 bytes of output" in tool["description"]
    # Exactly the limit is output, not too much (as read: the answer then
    # keeps what fits its JSON bound, see below).
    server = in_process(monkeypatch, "--allow-command", "head")
    out = asyncio.run(server.run(["head", "-c", str(1 << 20), "/dev/zero"], timeout_ms=10_000))
    assert out == {"output": "\0" * (1 << 20), "exit_code": 0}


# The most JSON one tool answer may take (the server's ANSWER_LIMIT).
ANSWER_LIMIT = 4 << 20


def wire_size(result: Any) -> int:
    """Bytes of JSON a tool answer took, as the SDK writes it."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def test_run_command_cuts_output_whose_answer_would_be_too_large() -> None:
    """1 MB of NULs is within run_command's 1 MiB cap, but a NUL is 6 or 7
    bytes of JSON in each of the answer's two copies (text and
    structuredContent): 13 MB, past the TypeScript SDK client's 10 MiB
    buffer, which then closes the whole session. The answer keeps what fits
    in 4 MiB of JSON and says it was cut, and the session goes on."""

    async def main() -> tuple[dict[str, Any], Any, dict[str, Any]]:
        async with connected("--allow-command", "head", "--allow-command", "echo") as (session, tools):
            big = await session.call_tool("run_command", {"argv": ["head", "-c", "1000000", "/dev/zero"]})
            again = await call(session, tools, "run_command", {"argv": ["echo", "alive"]})
            return tools["run_command"], big, again

    tool, big, again = asyncio.run(main())
    assert not big.is_error, big.content
    out = big.structured_content
    jsonschema.validate(out, tool["outputSchema"])
    kept = len(out["output"])
    assert 0 < kept < 1_000_000 and out["output"] == "\0" * kept
    assert out["exit_code"] == 0
    assert out["truncated"] == (f"the output was cut to its first {kept} characters: the whole answer would be "
                                f"over {ANSWER_LIMIT} bytes of JSON")
    assert json.loads(big.content[0].text) == out
    assert wire_size(big) <= ANSWER_LIMIT
    assert again == {"output": "alive\n", "exit_code": 0}


def test_a_log_of_large_events_comes_back_within_the_answer_bound(tmp_path: Path) -> None:
    """1,000 events of 1,300 control characters each (8 MB of log) would be
    one 17 MB answer. A wait takes at most 512 KiB of the log: its answer
    holds the first events, well within the server's bound, and the wait
    resumed from its cursor goes on with the next ones."""
    log = tmp_path / "events.jsonl"
    log.write_text("".join(
        json.dumps({"type": "t", "at": "2025-01-01T00:00:00Z", "by": "b", "target": None,
                    "summary": f"{n} " + "\x01" * 1300, "data": {}}) + "\n"
        for n in range(1000)))

    async def main() -> tuple[Any, Any]:
        async with connected("--root", str(tmp_path)) as (session, _):
            first = await session.call_tool("wait_for_event", {"path": str(log), "timeout": "30s"})
            cursor = first.structured_content["cursor"]
            then = await session.call_tool("wait_for_event", {"path": str(log), "cursor": cursor, "timeout": "30s"})
            return first, then

    def numbers(result: Any) -> list[int]:
        assert not result.is_error, result.content[0].text[:300]
        assert result.structured_content["state"] == "satisfied"
        return [int(e["summary"].split(" ")[0]) for e in result.structured_content["events"]]

    first, then = asyncio.run(main())
    assert wire_size(first) < 2 << 20 and wire_size(then) < 2 << 20
    kept = numbers(first)
    assert kept == list(range(len(kept))) and 0 < len(kept) < 1000
    assert numbers(then)[0] == len(kept)


def test_run_command_answers_when_the_program_exits_though_an_escapee_holds_its_output(tmp_path: Path) -> None:
    """A program that exits at once but leaves a process of its own session
    (`setsid`) holding the output open: the call answers with what the
    program wrote and its exit code, rather than wait for the output to
    close and fail at its timeout. The escapee runs on (the test ends it)."""
    pid_file = tmp_path / "pid"
    # The escapee writes its pid once in its own session; the program waits
    # for that, so that it has left the group before the program exits.
    escape = f"setsid sh -c 'echo $$ >{pid_file}.new && mv {pid_file}.new {pid_file}; exec sleep 30' &"
    script = f"{escape} while [ ! -e {pid_file} ]; do sleep 0.01; done; echo done"

    async def main() -> Any:
        async with connected("--allow-command", "sh") as (session, _):
            return await asyncio.wait_for(
                session.call_tool("run_command", {"argv": ["sh", "-c", script], "timeout_ms": 5000}), 30)

    try:
        result = asyncio.run(main())
        assert not result.is_error, result.content
        assert result.structured_content == {"output": "done\n", "exit_code": 0}
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_run_command_kills_a_program_past_its_timeout() -> None:
    """`timeout_ms` (1 to 60000, 10000 by default, as the Node example's)
    ends a program that would run for 30 s; the call fails saying so."""

    async def main() -> tuple[dict[str, Any], str, float, list[str]]:
        async with connected("--allow-command", "sleep") as (session, tools):
            started = time.monotonic()
            slow = await asyncio.wait_for(session.call_tool("run_command", {"argv": ["sleep", "30"], "timeout_ms": 200}), 10)
            took = time.monotonic() - started
            bad = [error_text(await session.call_tool("run_command", {"argv": ["sleep", "0"], "timeout_ms": value}))
                   for value in (0, 60001, "100", 1.5, True)]
            return tools["run_command"], error_text(slow), took, bad

    tool, refused, took, bad = asyncio.run(main())
    assert refused == "`sleep` ran longer than 200 ms: killed", refused
    assert took < 10, took
    assert tool["inputSchema"]["properties"]["timeout_ms"] == {
        "type": "integer", "minimum": 1, "maximum": 60000, "default": 10000,
        "description": "Kill the program (its process group) after this long.",
    }
    assert "timeout_ms" not in tool["inputSchema"]["required"]
    assert all("timeout_ms" in text for text in bad), bad


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie not yet reaped by its new
    parent counts: it runs nothing and holds no pipe)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


@pytest.mark.parametrize("ended_by", ["timeout", "cancel", "timeout, escaped"])
def test_run_command_ends_what_the_program_started(tmp_path: Path, ended_by: str) -> None:
    """A program that starts a grandchild holding its output pipe and waits
    for it: timed out or cancelled, the call ends promptly and its whole
    process group (the program, the grandchild) is killed. A grandchild
    that left the group (`setsid`) outlives the kill, but still cannot hold
    the call: it ends at its timeout all the same."""
    pids = tmp_path / "pids"
    spawn = "setsid sleep 30" if "escaped" in ended_by else "sleep 30"
    # The shell's pid and the grandchild's, written whole (mv) once both run.
    script = f"{spawn} & echo $$ $! >{pids}.new && mv {pids}.new {pids}; wait"
    args = {"argv": ["sh", "-c", script], "timeout_ms": 60000 if ended_by == "cancel" else 2000}

    def started() -> list[int]:
        return [int(pid) for pid in pids.read_text().split()] if pids.exists() else []

    async def main() -> float:
        async with connected("--allow-command", "sh") as (session, tools):
            begun = time.monotonic()
            running = asyncio.ensure_future(session.call_tool("run_command", args))
            if ended_by == "cancel":
                deadline = time.monotonic() + 30
                while not started():
                    assert time.monotonic() < deadline, "the program never started its grandchild"
                    await asyncio.sleep(0.05)
                running.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await running
            else:
                timed_out = await asyncio.wait_for(running, 10)
                assert error_text(timed_out) == "`sh` ran longer than 2000 ms: killed"
            # The server has let go of it: it answers the next call.
            again = await asyncio.wait_for(session.call_tool("run_command", {"argv": ["sh", "-c", "echo alive"]}), 10)
            assert not again.is_error and again.structured_content == {"output": "alive\n", "exit_code": 0}
            return time.monotonic() - begun

    try:
        took = asyncio.run(main())
        assert took < 10, took
        shell, grandchild = started()
        deadline = time.monotonic() + 10
        left = [shell] if "escaped" in ended_by else [shell, grandchild]
        while not all(gone(pid) for pid in left):
            assert time.monotonic() < deadline, f"still running: {[pid for pid in left if not gone(pid)]}"
            time.sleep(0.05)
    finally:
        # What the server cannot kill, the test does.
        for pid in started():
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_bad_arguments_and_failing_probes_are_tool_errors() -> None:
    async def main() -> list[str]:
        async with connected() as (session, _):
            bad = await session.call_tool("wait_for", {"probe": {"tool": "", "args": {}}, "until": {"matches": "x"}})
            loop = await session.call_tool("wait_for", {"probe": {"tool": "wait_for", "args": {}}, "until": {"matches": "x"}, "max_wait_sec": 5})
            texts = []
            for r in (bad, loop):
                assert r.is_error
                texts.append(r.content[0].text)  # type: ignore[union-attr]
            return texts

    bad, loop = asyncio.run(main())
    assert bad.startswith("invalid_arguments:")
    # wait_for probes libwaitfor's built-in tools: a wait is none of them.
    assert loop == "runtime: probe tool 'wait_for' is not exposed by any connected MCP server"


def test_a_wait_over_the_servers_cap_is_a_tool_error_and_the_running_one_goes_on(tmp_path: Path) -> None:
    flag = tmp_path / "state"
    flag.write_text("starting\n")
    call = {"probe": {"tool": "read_file", "args": {"path": str(flag)}}, "until": {"matches": "Running"},
            "poll_sec": 1, "max_wait_sec": 60}

    async def main() -> None:
        async with connected("--root", str(tmp_path), "--max-tool-calls", "1") as (session, _):
            calls = [asyncio.ensure_future(session.call_tool("wait_for", call)) for _ in range(2)]
            # The call over the cap is answered at once; the other waits.
            done, _ = await asyncio.wait(calls, timeout=30, return_when=asyncio.FIRST_COMPLETED)
            assert len(done) == 1
            refused = done.pop().result()
            assert refused.is_error
            text = refused.content[0].text  # type: ignore[union-attr]
            assert text.startswith("too_many_calls:") and "at most 1" in text, text
            flag.write_text("Running\n")
            running = await asyncio.wait_for(asyncio.gather(*calls), 30)
            matched = [r for r in running if r is not refused]
            assert len(matched) == 1 and not matched[0].is_error
            assert (matched[0].structured_content or {})["reason"] == "matched"
            # Its place came back.
            again = await session.call_tool("wait_for", call)
            assert not again.is_error

    asyncio.run(main())


def test_cancelled_notification_cancels_the_wait(tmp_path: Path) -> None:
    counter = tmp_path / "calls"
    probe = {"tool": "run_command", "args": {"argv": ["sh", "-c", f"echo . >> {counter}"]}}

    def lines() -> int:
        return len(counter.read_text().splitlines()) if counter.exists() else 0

    async def main() -> None:
        async with connected("--allow-command", "sh", "--allow-command", "echo") as (session, _):
            await cancel_once_probing(
                session.call_tool("wait_for", {"probe": probe, "until": {"matches": "never"}, "poll_sec": 1, "max_wait_sec": 120}),
                lines,
            )
            # The server still answers.
            out = await session.call_tool("run_command", {"argv": ["echo", "alive"]})
            assert not out.is_error

    asyncio.run(main())


def test_wait_for_text_on_a_real_pane_with_send_keys(pane: str, tmp_path: Path) -> None:
    async def wait_and_type(session: ClientSession, tools: dict[str, dict[str, Any]], text: str, keys: str, enter: bool) -> dict[str, Any]:
        sampled = asyncio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            sampled.set()

        wait = asyncio.create_task(
            call(session, tools, "wait_for_text", {"pane_id": pane, "patterns": [text], "timeout": 3, "interval": 0.05},
                 progress_callback=on_progress)
        )
        await asyncio.wait_for(sampled.wait(), 30)
        sent = await call(session, tools, "send_keys", {"pane_id": pane, "keys": keys, "enter": enter})
        assert sent == {"sent": True}
        return await wait

    async def main() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with connected("--allow-send-keys", tmux_tmpdir=os.environ["TMUX_TMPDIR"], path_first=tmp_path) as (session, tools):
            assert {"wait_for_text", "send_keys"} <= set(tools)
            printed = await wait_and_type(session, tools, "MARK_S", "printf 'MARK_%s\\n' S", True)
            # Typed by the server itself and never run: libtmux-mcp has no echo
            # model, so its drop-in sees typed text as a new row, as it does.
            typed = await wait_and_type(session, tools, "ONLY_TYPED", "ONLY_TYPED", False)
            # Keys that start with "-" are keys, not send-keys flags.
            dashed = await wait_and_type(session, tools, "-DASHED", "-DASHED", False)
            # As wait_for_text, send_keys reaches tmux servers by name only.
            for socket in ("../../../tmp/other.sock", "/tmp/other.sock", ".."):
                refused = await session.call_tool("send_keys", {"pane_id": pane, "keys": "id", "socket_name": socket})
                assert refused.is_error and "not a path" in str(refused.content), (socket, refused.content)
            return printed, typed, dashed

    calls = recording_tmux(tmp_path)
    printed, typed, dashed = asyncio.run(main())
    assert printed["found"] is True and printed["outcome"] == "matched", printed
    assert typed["found"] is True and typed["matched_lines"][0].endswith("ONLY_TYPED"), typed
    assert dashed["found"] is True and dashed["matched_lines"][0].endswith("ONLY_TYPED-DASHED"), dashed
    # Every tmux call, send_keys's and the waits', runs with -u (UTF-8
    # whatever the locale: the server was started without LANG).
    made = calls.read_text().splitlines()
    assert any("send-keys" in c.split() for c in made) and any("capture-pane" in c.split() for c in made), made
    assert [c for c in made if c.split()[0] != "-u"] == []


def test_by_default_an_agent_runs_no_command_and_reads_no_file(tmp_path: Path) -> None:
    (tmp_path / "status").write_text("ready\n")
    shell = {"probe": {"tool": "run_command", "args": {"argv": ["sh", "-c", "id"]}}, "until": {"matches": "uid"}, "max_wait_sec": 5}
    shadow = {"probe": {"tool": "read_file", "args": {"path": "/etc/shadow"}}, "until": {"matches": "root"}, "max_wait_sec": 5}

    async def main() -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
        async with connected() as (session, tools):
            errors = []
            for name, args in (("wait_for", shell), ("wait_for", shadow), ("read_file", {"path": "/etc/shadow"}),
                               ("run_command", {"argv": ["sh", "-c", "id"]}), ("send_keys", {"pane_id": "%0", "keys": "id"})):
                result = await session.call_tool(name, args)
                assert result.is_error, (name, result.content)
                errors.append(result.content[0].text)  # type: ignore[union-attr]
        # A granted root opens its files and nothing else.
        async with connected("--root", str(tmp_path)) as (session, _):
            granted = await session.call_tool("read_file", {"path": str(tmp_path / "status")})
            assert not granted.is_error and granted.structured_content == {"text": "ready\n"}
            outside = await session.call_tool("read_file", {"path": "/etc/shadow"})
            assert outside.is_error
            return tools, errors, [outside.content[0].text]  # type: ignore[union-attr]

    tools, errors, outside = asyncio.run(main())
    assert "run_command" not in tools and "send_keys" not in tools and "wait_for_event" in tools
    # wait_for's built-in tools are refused before the wait starts.
    assert errors[0].startswith("invalid_arguments: ") and "the host grants no commands" in errors[0]
    assert errors[1].startswith("invalid_arguments: ") and "the host grants no file access" in errors[1]
    assert "outside the readable directories" in errors[2]
    assert errors[3] == "unknown tool `run_command`" and errors[4] == "unknown tool `send_keys`"
    assert "outside the readable directories" in outside[0]
    # What the tools can do with these defaults: observe, nothing more.
    for name in ("wait_for", "wait_for_event", "read_file", "wait_for_text"):
        if name in tools:
            hints = tools[name]["annotations"]
            assert (hints["readOnlyHint"], hints["destructiveHint"], hints["openWorldHint"]) == (True, False, False), name


def test_wait_for_text_sends_libtmux_mcps_progress_and_warnings(pane: str) -> None:
    """libtmux-mcp's progress ("Waiting on pane %N: Xs elapsed, Ys left",
    the timeout as the total) and its warnings (an invalid regex; "No match
    in pane %N before Ts timeout") reach the official client as
    notifications/progress and notifications/message."""
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[tuple[str, Any]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.data))

    async def main() -> tuple[Any, Any]:
        async with connected(tmux_tmpdir=os.environ["TMUX_TMPDIR"], logging_callback=on_log,
                             log_level="warning") as (session, tools):
            out = await call(session, tools, "wait_for_text", {"pane_id": pane, "patterns": ["never"], "timeout": 0.5},
                             progress_callback=on_progress)
            bad = await session.call_tool("wait_for_text", {"pane_id": pane, "patterns": ["("], "regex": True})
            return out, bad

    out, bad = asyncio.run(main())
    assert out["outcome"] == "timeout" and bad.is_error
    assert progress and all(t == 0.5 and m is not None and m.startswith(f"Waiting on pane {pane}: ")
                            for _, t, m in progress)
    assert logs[0] == ("warning", f"No match in pane {pane} before 0.5s timeout")
    assert logs[1][0] == "warning" and logs[1][1].startswith("Invalid regex pattern: ")
    assert len(logs) == 2


def test_wait_for_text_is_answered_at_its_deadline_at_the_client(pane: str) -> None:
    """The deadline holds at the MCP door: a wait_for_text with timeout 1 s
    on a pane that never shows the pattern reaches the official client
    about 1 s after the call, with progress and log notices flowing
    (client and server add 5-20 ms on an idle 2-core machine, under 50 ms
    with four CPU hogs on its cores). Never before the deadline; the upper
    bound is generous, one more timeout, as three processes' scheduling
    on a loaded machine adds hundreds of milliseconds now and then (1.32 s
    was seen against a 1.25 s bound): an answer held for as long again
    fails it. The client's own first-call costs (README) are not timed:
    the session listed its tools and this process imported jsonschema
    before the call."""

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        pass

    async def on_log(params: Any) -> None:
        pass

    async def main() -> list[tuple[float, dict[str, Any]]]:
        answers: list[tuple[float, dict[str, Any]]] = []
        async with connected(tmux_tmpdir=os.environ["TMUX_TMPDIR"], logging_callback=on_log,
                             log_level="warning") as (session, tools):
            for progress in (on_progress, None):
                started = time.monotonic()
                out = await call(session, tools, "wait_for_text",
                                 {"pane_id": pane, "patterns": ["never shown"], "timeout": 1},
                                 progress_callback=progress)
                answers.append((time.monotonic() - started, out))
        return answers

    for took, out in asyncio.run(main()):
        assert out["outcome"] == "timeout", out
        assert 1.0 <= took < 1.0 + 1.0, took
