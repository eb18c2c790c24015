"""Drives the C++ MCP server example with the official Python MCP SDK over
stdio: initialize, tools/list, tools/call (with progress notifications and
a tool error), notifications/cancelled, and send_keys + wait_for_text on a
real tmux server (a private one: TMUX_TMPDIR points at a scratch directory);
and with raw JSON-RPC lines, what the SDK never sends: malformed messages,
deep nesting, a request id reused while its call runs.

Run: WAITFOR_MCP_SERVER=path/to/waitfor_mcp_server pytest examples/cpp/test_mcp_server.py
"""

import json
import os
import queue
import shlex
import shutil
import subprocess
import tempfile
import threading

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import get_default_environment, stdio_client

SERVER = os.environ.get("WAITFOR_MCP_SERVER", "")

pytestmark = pytest.mark.skipif(not SERVER, reason="WAITFOR_MCP_SERVER is not set")


# What the tests that run commands start the server with.
GRANTED = ["--allow-command", "echo", "--allow-command", "sh", "--allow-command", "true",
           "--allow-command", "/nonexistent/prog"]


def run(scenario, tmux_tmpdir=None, options=(), path_first=None, **client):
    """Runs `scenario(session, errlog_path)` against a fresh server started
    with command-line `options` (what it grants; nothing by default), as MCP
    clients start servers: with the SDK's default (minimal) environment, not
    the test's own. `tmux_tmpdir` adds only where the test's private tmux
    server listens, which a user's server would not need; `path_first` goes
    in front of PATH."""
    env = get_default_environment()
    if tmux_tmpdir is not None:
        env["TMUX_TMPDIR"] = tmux_tmpdir
    if path_first is not None:
        env["PATH"] = f"{path_first}{os.pathsep}{env.get('PATH', os.defpath)}"

    async def main():
        with tempfile.NamedTemporaryFile("w+", suffix=".log") as errlog:
            params = StdioServerParameters(command=SERVER, args=list(options), env=env)
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, **client) as session:
                    init = await session.initialize()
                    assert init.serverInfo.name == "waitfor-cpp-example"
                    await scenario(session, errlog.name)

    anyio.run(main)


def command_args(argv, until, poll_sec=1, max_wait_sec=30):
    return {
        "probe": {"tool": "run_command", "args": {"argv": argv}},
        "until": until,
        "poll_sec": poll_sec,
        "max_wait_sec": max_wait_sec,
    }


def test_lists_the_wait_for_tool_with_its_schemas():
    async def scenario(session, _):
        tools = (await session.list_tools()).tools
        wait_for = next(t for t in tools if t.name == "wait_for")
        assert wait_for.inputSchema["type"] == "object"
        assert "until" in wait_for.inputSchema["properties"]
        assert wait_for.outputSchema is not None

    run(scenario)


def test_wait_for_matches_a_command_output():
    async def scenario(session, _):
        result = await session.call_tool(
            "wait_for", command_args(["echo", "deploy Running"], {"matches": "Running"})
        )
        assert not result.isError
        assert result.structuredContent["reason"] == "matched"
        assert "Running" in result.structuredContent["last_observation"]

    run(scenario, options=GRANTED)


def test_progress_notifications_then_the_match():
    async def scenario(session, _):
        with tempfile.TemporaryDirectory() as tmp:
            flag = os.path.join(tmp, "flag")
            seen = []
            notes = set()

            async def on_progress(progress, total, message):
                seen.append(progress)
                notes.add((total, message))
                if len(seen) == 2:  # let the condition become true
                    with open(flag, "w") as f:
                        f.write("ready\n")

            result = await session.call_tool(
                "wait_for",
                command_args(["sh", "-c", f"cat {flag} 2>/dev/null || echo waiting"], {"matches": "ready"}),
                progress_callback=on_progress,
            )
            assert result.structuredContent["reason"] == "matched"
            assert len(seen) >= 2
            assert seen == sorted(seen)
            # AURA sends no progress of its own: seconds elapsed of the bound, no message.
            assert notes == {(30, None)}

    run(scenario, options=GRANTED)


def test_a_failing_probe_is_a_tool_error_and_bad_arguments_are_named():
    async def scenario(session, _):
        result = await session.call_tool("wait_for", command_args(["/nonexistent/prog"], {"matches": "x"}))
        assert result.isError
        assert "probe tool 'run_command' failed on sample 1" in result.content[0].text
        result = await session.call_tool("wait_for", command_args(["true"], {"matches": "x"}, poll_sec=5, max_wait_sec=2))
        assert result.isError
        assert "poll_sec" in result.content[0].text

    run(scenario, options=GRANTED)


def test_a_wait_over_the_cap_is_a_tool_error_at_once_and_the_running_one_goes_on(tmp_path):
    flag = tmp_path / "state"
    flag.write_text("starting\n")
    wait = {"probe": {"tool": "read_file", "args": {"path": str(flag)}}, "until": {"matches": "Running"},
            "poll_sec": 1, "max_wait_sec": 60}

    async def scenario(session, _):
        answers = {}
        answered = anyio.Event()

        async def call(n):
            answers[n] = await session.call_tool("wait_for", wait)
            answered.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(call, 0)
            tasks.start_soon(call, 1)
            # The call over the cap is answered at once; the other waits.
            with anyio.fail_after(30):
                await answered.wait()
            (refused,) = answers.values()
            assert refused.isError
            assert refused.content[0].text.startswith("too_many_calls: ")
            assert "at most 1" in refused.content[0].text
            flag.write_text("Running\n")
        (matched,) = [r for r in answers.values() if r is not refused]
        assert not matched.isError and matched.structuredContent["reason"] == "matched"
        # Its place came back.
        assert not (await session.call_tool("wait_for", wait)).isError

    run(scenario, options=["--root", str(tmp_path), "--max-tool-calls", "1"])


def test_answers_stay_within_4_mib_of_json_and_the_session_goes_on(tmp_path):
    """Text from outside is 6 or 7 bytes of JSON a control character in each
    of an answer's two copies (text and structuredContent). A granted
    command printing 1 MB of NULs is over the wait's 256 KiB output cap: a
    short tool error. 1,000 events of 1,300 control characters (8 MB of
    log) would be one 17 MB answer, past the TypeScript SDK client's 10 MiB
    buffer: a wait takes at most 512 KiB of the log, so its answer holds the
    first events, and the wait resumed from its cursor goes on with the
    next. The session goes on after both."""
    log = tmp_path / "events.jsonl"
    log.write_text("".join(
        json.dumps({"type": "t", "at": "2025-01-01T00:00:00Z", "by": "b", "target": None,
                    "summary": f"{n} " + "\x01" * 1300, "data": {}}) + "\n"
        for n in range(1000)))

    def size(result):
        return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())

    async def scenario(session, _):
        nuls = await session.call_tool("wait_for", command_args(["sh", "-c", "head -c 1000000 /dev/zero"], {"matches": "x"}))
        assert nuls.isError and size(nuls) < 1024
        assert "over the 262144-byte cap" in nuls.content[0].text, nuls.content[0].text
        def numbers(result):
            assert not result.isError, result.content[0].text[:300]
            assert result.structuredContent["state"] == "satisfied"
            assert size(result) < 2 << 20
            return [int(e["summary"].split(" ")[0]) for e in result.structuredContent["events"]]

        first = await session.call_tool("wait_for_event", {"path": str(log), "timeout": "30s"})
        kept = numbers(first)
        assert kept == list(range(len(kept))) and 0 < len(kept) < 1000
        cursor = first.structuredContent["cursor"]
        then = await session.call_tool("wait_for_event", {"path": str(log), "cursor": cursor, "timeout": "30s"})
        assert numbers(then)[0] == len(kept)
        alive = await session.call_tool("wait_for", command_args(["echo", "alive"], {"matches": "alive"}))
        assert not alive.isError and alive.structuredContent["reason"] == "matched"

    run(scenario, options=[*GRANTED, "--root", str(tmp_path), "--profile", "aura/wait_for", "--profile", "ouro/wait"])


def test_cancelled_request_ends_the_wait_and_the_server_goes_on():
    async def scenario(session, errlog):
        async def logged(text):
            with anyio.fail_after(20):
                while text not in open(errlog).read():
                    await anyio.sleep(0.05)

        async with anyio.create_task_group() as tg:

            async def long_wait():
                await session.call_tool("wait_for", command_args(["true"], {"matches": "never"}, max_wait_sec=120))

            tg.start_soon(long_wait)
            # initialize was request 0, so this call is request 1.
            await logged("tools/call 1 ")
            await session.send_notification(
                types.ClientNotification(
                    types.CancelledNotification(
                        params=types.CancelledNotificationParams(requestId=1, reason="test")
                    )
                )
            )
            await logged("cancelled request 1")
            tg.cancel_scope.cancel()  # MCP: a cancelled request gets no response

        result = await session.call_tool("wait_for", command_args(["echo", "ok"], {"matches": "ok"}))
        assert result.structuredContent["reason"] == "matched"

    run(scenario, options=GRANTED)


def test_unknown_tool_is_a_protocol_error():
    async def scenario(session, _):
        result = None
        try:
            result = await session.call_tool("no_such_tool", {})
        except Exception as err:  # the SDK raises McpError for JSON-RPC errors
            assert "unknown tool" in str(err)
        else:
            assert result.isError

    run(scenario)


class RawServer:
    """A fresh server spoken to in raw JSON-RPC lines, initialized; for what
    the SDK never sends. Messages are read on a thread, so a server that
    dies or hangs fails the test instead of blocking it. Leaving the `with`
    block closes its stdin: it must then exit with status 0."""

    def __init__(self, options=()):
        self.proc = subprocess.Popen([SERVER, *options], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=get_default_environment())
        self.messages = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.pings = 0
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "raw", "version": "0"}}})
        assert "result" in self.receive()

    def _read(self):
        for line in self.proc.stdout:
            self.messages.put(json.loads(line))
        self.messages.put(None)

    def send(self, message):
        """Sends a message (a dict) or a line as it is (a str)."""
        line = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout=10):
        message = self.messages.get(timeout=timeout)
        assert message is not None, f"the server exited (status {self.proc.wait(5)})"
        return message

    def answer(self, request_id):
        """The next answer to `request_id`, past any notifications."""
        while "id" not in (message := self.receive()):
            pass
        assert message["id"] == request_id, message
        return message

    def answers_to(self, line):
        """Sends `line` then a ping; gives what came back before the pong
        (which must come: the server goes on)."""
        self.pings += 1
        ping = f"ping-{self.pings}"
        self.send(line)
        self.send({"jsonrpc": "2.0", "id": ping, "method": "ping"})
        before = []
        while (message := self.receive()).get("id") != ping:
            before.append(message)
        assert message["result"] == {}
        return before

    def __enter__(self):
        return self

    def __exit__(self, failure, *_):
        self.proc.stdin.close()
        try:
            status = self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        assert failure or status == 0, f"exit status {status}"


def error_codes(answers):
    return [(a["id"], a["error"]["code"]) for a in answers]


def test_malformed_lines_get_an_error_or_nothing_and_the_server_goes_on():
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    invalid_params = [(1, -32602)]
    cases = [
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, [(1, -32600)]),
        ({**call, "params": {"name": 7}}, invalid_params),
        ({**call, "params": {"name": "wait_for", "arguments": {}, "_meta": "x"}}, invalid_params),
        ({**call, "params": "x"}, invalid_params),
        ({**call, "params": [1]}, invalid_params),
        ({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": 3}}, invalid_params),
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 5}}, invalid_params),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, [(None, -32600)]),
        ('{"jsonrpc":"2.0","id":1,', [(None, -32700)]),
        ("[]", [(None, -32600)]),
        # Notifications get no answer, malformed or not.
        ({"jsonrpc": "2.0", "method": "notifications/cancelled"}, []),
        ({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5}, []),
    ]
    with RawServer() as server:
        for line, expected in cases:
            assert error_codes(server.answers_to(line)) == expected, line


def test_lines_nested_too_deep_are_refused_before_they_overflow_the_stack():
    def tools_call(arguments):
        return ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for","arguments":'
                + arguments + "}}")

    with RawServer() as server:
        [refusal] = server.answers_to(tools_call('{"a":' * 20000 + "1" + "}" * 20000))
        assert (refusal["id"], refusal["error"]["code"]) == (1, -32600)
        assert "nested deeper than 64" in refusal["error"]["message"]
        deep_ping = '{"jsonrpc":"2.0","id":2,"method":"ping","params":' + "[" * 100000 + "]" * 100000 + "}"
        assert error_codes(server.answers_to(deep_ping)) == [(2, -32600)]
        # Nesting an agent may write is read as usual: the tool names its mistake.
        [shallow] = server.answers_to(tools_call('{"a":' * 50 + "1" + "}" * 50))
        assert shallow["result"]["isError"] and "unknown field `a`" in shallow["result"]["content"][0]["text"]


def test_a_request_id_in_flight_is_refused_and_its_call_goes_on():
    def call(args):
        return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "wait_for", "arguments": args}}

    with RawServer(GRANTED) as server:
        server.send(call(command_args(["true"], {"matches": "never"}, max_wait_sec=2)))
        server.send(call(command_args(["echo", "ok"], {"matches": "ok"})))
        assert server.answer(7) == {"jsonrpc": "2.0", "id": 7,
                                    "error": {"code": -32600, "message": "request id already in use"}}
        first = server.answer(7)
        assert first["result"]["structuredContent"]["reason"] == "timeout", first
        # Once answered, the id may be used again.
        server.send(call(command_args(["echo", "ok"], {"matches": "ok"})))
        assert server.answer(7)["result"]["structuredContent"]["reason"] == "matched"


@pytest.fixture
def tmux_tmpdir():
    """A private tmux server (default socket in its own TMUX_TMPDIR) with one
    pane running sh (prompt `READY>`)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        env["TMUX_TMPDIR"] = tmp
        subprocess.run(
            ["tmux", "-f", "/dev/null", "new-session", "-d", "-s", "wf", "-x", "120", "-y", "30",
             "env PS1='READY> ' sh"],
            env=env, check=True,
        )
        try:
            yield tmp
        finally:
            subprocess.run(["tmux", "kill-server"], env=env, check=False)


def recording_tmux(directory):
    """Makes `directory/tmux`, which appends its arguments (one call a line)
    to the file it returns and runs the real tmux: first on the server's
    PATH, it shows every tmux call the server makes."""
    real = shutil.which("tmux")
    calls = os.path.join(directory, "tmux-calls")
    shim = os.path.join(directory, "tmux")
    with open(shim, "w") as f:
        f.write(f'#!/bin/sh\nprintf "%s\\n" "$*" >>{shlex.quote(calls)}\nexec {shlex.quote(real)} "$@"\n')
    os.chmod(shim, 0o755)
    return calls


def test_send_keys_echo_is_discounted_by_wait_for_text(tmux_tmpdir, tmp_path):
    async def scenario(session, _):
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"wait_for", "wait_for_text", "send_keys"} <= names
        ready = await session.call_tool("wait_for_text", {"target": "wf", "text": "READY>", "timeout_ms": 10000})
        assert ready.structuredContent["matched"], ready
        sent = await session.call_tool("send_keys", {"target": "wf", "keys": "sleep 1; echo MARK-$((6*7))"})
        assert not sent.isError, sent.content
        pane = sent.structuredContent["pane_id"]
        # The typed line holds "MARK-" at once, so the text is visible at
        # entry (libtmux-cxx says so in matched_at_entry); the answer is
        # confirmed by the output a second later, not by the recorded echo.
        result = await session.call_tool("wait_for_text", {"target": pane, "text": "MARK-", "timeout_ms": 20000})
        out = result.structuredContent
        assert out["matched"] and out["matched_at_entry"], out
        assert not out["mode"].endswith("-unconfirmed"), out
        assert out["elapsed_ms"] >= 900, out  # not before `sleep 1` ended
        assert out["pane_id"] == pane
        missing = await session.call_tool("wait_for_text", {"target": pane, "text": "never-printed", "timeout_ms": 300})
        assert missing.structuredContent["timed_out"]
        # Keys that start with "-" are typed, not read as send-keys flags
        # (-X is one: "not in a mode").
        dashed = await session.call_tool("send_keys", {"target": pane, "keys": "-XQ", "enter": False})
        assert not dashed.isError, dashed.content

    calls = recording_tmux(tmp_path)
    run(scenario, tmux_tmpdir, options=["--allow-send-keys"], path_first=tmp_path)
    # Every tmux call, send_keys's and the waits', runs with -u (UTF-8
    # whatever the locale: the server was started without LANG).
    with open(calls) as f:
        made = f.read().splitlines()
    assert any("send-keys" in c.split() for c in made) and any("display-message" in c.split() for c in made), made
    assert [c for c in made if c.split()[0] != "-u"] == []


def test_wait_for_text_sends_libtmux_mcps_progress_and_warnings(tmux_tmpdir):
    """libtmux-mcp's wait_for_text: progress (elapsed, effective timeout,
    "Waiting on pane %N: Xs elapsed, Ys left") at every poll, and warnings
    "No match in pane %N before Ts timeout" and "Invalid regex pattern: ...",
    as notifications/progress and notifications/message."""
    progress = []
    logs = []

    async def on_progress(value, total, message):
        progress.append((value, total, message))

    async def on_log(params):
        logs.append((params.level, params.data))

    async def scenario(session, _):
        result = await session.call_tool("wait_for_text", {"session_name": "wf", "patterns": ["never"], "timeout": 0.5},
                                         progress_callback=on_progress)
        pane = result.structuredContent["pane_id"]
        assert result.structuredContent["outcome"] == "timeout"
        bad = await session.call_tool("wait_for_text", {"pane_id": pane, "patterns": ["("], "regex": True})
        assert bad.isError
        assert progress and all(t == 0.5 and m.startswith(f"Waiting on pane {pane}: ") for _, t, m in progress)
        assert logs[0] == ("warning", f"No match in pane {pane} before 0.5s timeout")
        assert logs[1][0] == "warning" and logs[1][1].startswith("Invalid regex pattern: ")

    run(scenario, tmux_tmpdir, options=["--profile", "libtmux-mcp/wait_for_text"], logging_callback=on_log)


def test_send_keys_to_a_missing_pane_is_a_tool_error(tmux_tmpdir):
    async def scenario(session, _):
        result = await session.call_tool("send_keys", {"target": "no-such-session", "keys": "x"})
        assert result.isError

    run(scenario, tmux_tmpdir, options=["--allow-send-keys"])


def test_by_default_an_agent_runs_no_command_and_reads_no_file():
    async def scenario(session, _):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "send_keys" not in tools
        for name in ("wait_for", "wait_for_text"):
            hints = tools[name].annotations
            assert (hints.readOnlyHint, hints.destructiveHint, hints.openWorldHint) == (True, False, False), name
        shell = await session.call_tool("wait_for", command_args(["sh", "-c", "id"], {"matches": "uid"}))
        assert shell.isError
        assert "not granted" in shell.content[0].text and "grants no commands" in shell.content[0].text
        shadow = await session.call_tool(
            "wait_for", {"probe": {"tool": "read_file", "args": {"path": "/etc/shadow"}}, "until": {"matches": "root"}}
        )
        assert shadow.isError
        assert "not granted" in shadow.content[0].text and "grants no file access" in shadow.content[0].text
        try:
            keys = await session.call_tool("send_keys", {"target": "wf", "keys": "id"})
        except Exception as err:  # a JSON-RPC error: no such tool
            assert "unknown tool" in str(err)
        else:
            assert keys.isError

    run(scenario)


def test_a_granted_server_refuses_what_it_did_not_grant():
    with tempfile.TemporaryDirectory() as root:
        status = os.path.join(root, "status")
        with open(status, "w") as f:
            f.write("service ready\n")

        async def scenario(session, _):
            hints = next(t for t in (await session.list_tools()).tools if t.name == "wait_for").annotations
            assert (hints.readOnlyHint, hints.destructiveHint, hints.openWorldHint) == (False, True, True)
            read = await session.call_tool(
                "wait_for", {"probe": {"tool": "read_file", "args": {"path": status}}, "until": {"matches": "ready"}}
            )
            assert not read.isError and read.structuredContent["last_observation"] == "service ready\n"
            shell = await session.call_tool("wait_for", command_args(["sh", "-c", "id"], {"matches": "uid"}))
            assert shell.isError and "`sh`" in shell.content[0].text
            shadow = await session.call_tool(
                "wait_for", {"probe": {"tool": "read_file", "args": {"path": "/etc/shadow"}}, "until": {"matches": "root"}}
            )
            assert shadow.isError and "outside the directories" in shadow.content[0].text

        run(scenario, options=["--allow-command", "echo", "--root", root])


def test_profiles_it_cannot_serve_together_stop_it_at_start():
    """One tool per name: libtmux-mcp's and libtmux-cxx's wait_for_text
    cannot be listed side by side, and an unknown profile is no profile."""
    refused = [(["libtmux-cxx/wait_for_text", "libtmux-mcp/wait_for_text"], "both name their tool `wait_for_text`"),
               (["aura/wait_for", "no/such"], "unknown profile no/such")]
    for profiles, why in refused:
        args = [a for p in profiles for a in ("--profile", p)]
        done = subprocess.run([SERVER, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and why in done.stderr, (profiles, done.stderr)
