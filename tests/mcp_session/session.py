"""One scripted MCP session against the three example servers (Python,
Node, C++), driven by the official MCP Python SDK client over stdio: every
server gets the same grants, the same fixtures and the same calls, and
wherever two servers serve the same profile their answers must be equal.

For each wait tool (`wait_for_event` = ouro/wait, `wait_for` =
aura/wait_for, `wait_for_text` = libtmux-mcp/wait_for_text) the session
compares the tool's definition from tools/list, then calls it for: a match
at entry, a match after entry (for wait_for also a settle), a timeout,
invalid arguments and a refused target (a file outside the roots, a program
not granted, a socket path), and compares each whole answer: error flag,
text content, structuredContent, progress and log notifications.

Run (the servers built first, see scripts/test-examples.sh):
    python tests/mcp_session/session.py --cpp BUILD/waitfor_mcp_server
with this interpreter having the `libwaitfor` wheel and `mcp` installed,
and `npm ci` done in examples/node.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

ROOT = Path(__file__).resolve().parents[2]
WAIT_TOOLS = ("wait_for_event", "wait_for", "wait_for_text")
# The profiles the C++ server is told to serve (it serves one tool per name,
# so libtmux-cxx/wait_for_text, which no other example serves, is left out).
CPP_PROFILES = ("ouro/wait", "aura/wait_for", "libtmux-mcp/wait_for_text")

Record = dict[str, Any]
DEFINITION = {"name", "title", "description", "input_schema", "output_schema", "annotations"}


class Fixtures:
    """The files and the tmux pane every server runs against, made afresh
    (byte for byte the same, at the same paths) before each server starts."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.granted = work / "granted"  # the servers' --root
        self.events = self.granted / "events.jsonl"
        self.status = self.granted / "status"
        self.pane_log = self.granted / "pane.log"
        self.outside = work / "outside.jsonl"
        self.tmux_tmpdir = work / "tmux"

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        env["TMUX_TMPDIR"] = str(self.tmux_tmpdir)
        return subprocess.run(["tmux", "-f", "/dev/null", *args], env=env, capture_output=True, text=True)

    def reset(self, run: str) -> None:
        self.tmux("kill-server")
        # A tmux server of each run's own: a new one never races the last
        # one's exit on the same socket.
        self.tmux_tmpdir = self.work / f"tmux-{run}"
        shutil.rmtree(self.granted, ignore_errors=True)
        self.granted.mkdir(parents=True)
        self.tmux_tmpdir.mkdir()
        self.events.write_text(event("deploy.started", "deploy started"))
        self.outside.write_text(event("deploy.started", "deploy started"))
        self.status.write_text("starting\n")
        self.pane_log.write_text("pane ready\n")
        # The pane shows what the test appends to pane.log: its rows are the
        # same on every run (no prompt, no clock).
        started = self.tmux("new-session", "-d", "-x", "80", "-y", "12", f"tail -n +1 -f {self.pane_log}")
        assert started.returncode == 0, started.stderr
        deadline = time.monotonic() + 20
        while "pane ready" not in self.tmux("capture-pane", "-p", "-t", "%0").stdout:
            assert time.monotonic() < deadline, "the tmux pane never showed pane.log"
            time.sleep(0.05)

    def append(self, path: Path, text: str) -> None:
        with path.open("a") as file:
            file.write(text)


def event(kind: str, summary: str) -> str:
    return json.dumps({"type": kind, "at": "2026-01-01T00:00:00Z", "by": "ci", "target": "web", "summary": summary}) + "\n"


@dataclass
class Step:
    """One scripted call; `on_first_progress` changes the fixtures once the
    wait has begun (its first progress notification says so)."""

    name: str
    tool: str
    args: dict[str, Any]
    on_first_progress: Callable[[], object] | None = None


def steps(fx: Fixtures) -> list[Step]:
    events, status = str(fx.events), str(fx.status)

    def probe(argv: list[str], until: dict[str, Any], **more: Any) -> dict[str, Any]:
        return {"probe": {"tool": "run_command", "args": {"argv": argv}}, "until": until, **more}

    return [
        # ouro/wait
        Step("event at entry", "wait_for_event", {"path": events, "type": "deploy.started", "timeout": 10000}),
        Step("event after entry", "wait_for_event",
             {"path": events, "type": "deploy.finished", "cursor": "end", "timeout": 30000},
             lambda: fx.append(fx.events, event("deploy.finished", "deploy finished"))),
        Step("event timeout", "wait_for_event", {"path": events, "type": "never", "timeout": 300}),
        Step("event invalid arguments", "wait_for_event", {"path": events, "timeout": "soon"}),
        Step("event outside the roots", "wait_for_event", {"path": str(fx.outside), "timeout": 1000}),
        # aura/wait_for
        Step("probe at entry", "wait_for", probe(["cat", status], {"matches": "starting"}, poll_sec=1, max_wait_sec=10)),
        Step("probe after entry", "wait_for", probe(["cat", status], {"matches": "running"}, poll_sec=2, max_wait_sec=30),
             lambda: fx.status.write_text("running\n")),
        Step("probe settled", "wait_for", probe(["cat", status], {"quiet_for_sec": 1}, poll_sec=1, max_wait_sec=10)),
        Step("probe timeout", "wait_for", probe(["cat", status], {"matches": "never"}, poll_sec=1, max_wait_sec=2)),
        Step("probe invalid arguments", "wait_for", probe(["cat", status], {"matches": "x"}, poll_sec=5, max_wait_sec=2)),
        Step("probe not granted", "wait_for", probe(["sh", "-c", "id"], {"matches": "uid"}, max_wait_sec=5)),
        Step("probe outside the roots", "wait_for",
             {"probe": {"tool": "read_file", "args": {"path": str(fx.outside)}}, "until": {"matches": "deploy"}, "max_wait_sec": 5}),
        # libtmux-mcp/wait_for_text
        Step("text at entry", "wait_for_text", {"pane_id": "%0", "patterns": ["pane ready"], "timeout": 0.3}),
        Step("text after entry", "wait_for_text", {"pane_id": "%0", "patterns": ["MARK [0-9]+"], "regex": True, "timeout": 30},
             lambda: fx.append(fx.pane_log, "MARK 42\n")),
        Step("text invalid regex", "wait_for_text", {"pane_id": "%0", "patterns": ["("], "regex": True}),
        Step("text socket path", "wait_for_text", {"pane_id": "%0", "patterns": ["x"], "socket_name": "/tmp/other.sock"}),
    ]


# Normalised, because they depend on time: seconds elapsed in results, the
# Ouro envelope's since/until/fresh.asOf timestamps, the seconds in
# libtmux-mcp's progress messages ("Xs elapsed, Ys left"); progress values
# (seconds elapsed) are left out. Everything else is compared as the
# servers sent it.
ELAPSED = {"elapsed_sec", "elapsed_seconds", "since", "until", "asOf"}


# An Ouro cursor ends in its server process's key id and a MAC made with
# that key, which differ per server run: its position (byte, line) is kept.
CURSOR_KEY = re.compile(r"\b(j2\.[0-9]+\.[0-9]+)\.[0-9a-f]+\.[0-9a-f]+\b")


def normalised(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "<time>" if k in ELAPSED else normalised(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    if isinstance(value, str):
        return CURSOR_KEY.sub(r"\1.<key>.<mac>", value)
    return value


def seconds_out(message: str | None) -> str | None:
    return None if message is None else re.sub(r"[0-9.]+s\b", "<n>s", message)


async def call(session: ClientSession, step: Step, logs: list[Any]) -> Record:
    notices: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notices.append((total, seconds_out(message)))
        if len(notices) == 1 and step.on_first_progress is not None:
            step.on_first_progress()

    logs.clear()
    result = await session.call_tool(step.tool, step.args, progress_callback=on_progress)
    # The SDK hands notifications to their callbacks in tasks of their own,
    # which may run after the call has returned; they have all run once a
    # ping went out and came back (the servers send a call's notices before
    # its result).
    await session.send_ping()
    texts = [c.text for c in result.content if c.type == "text"]
    # A result's text is its structuredContent as JSON: compared parsed, as
    # the JSON formatting (spaces, key order) is each SDK's own.
    if result.structured_content is not None:
        assert len(texts) == 1 and json.loads(texts[0]) == result.structured_content, (step.name, texts)
        texts = ["<structuredContent as JSON>"]
    return {
        "is_error": bool(result.is_error),
        "text": texts,
        "structuredContent": normalised(result.structured_content),
        # How many polls a wait makes depends on time: the distinct notices
        # are compared, and that there was one.
        "progress": sorted(set(notices), key=repr),
        "logs": list(logs),
    }


@dataclass
class Server:
    name: str
    argv: list[str]


async def run_session(server: Server, fx: Fixtures) -> tuple[dict[str, Any], dict[str, Record]]:
    """Starts `server` with the session's grants and the SDK's default
    environment (plus where the private tmux server listens), and runs every
    step whose tool it serves."""
    fx.reset(server.name)
    env = get_default_environment()
    env["TMUX_TMPDIR"] = str(fx.tmux_tmpdir)
    grants = ["--root", str(fx.granted), "--allow-command", "cat"]
    params = StdioServerParameters(command=server.argv[0], args=[*server.argv[1:], *grants], env=env)
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.logger, params.data))

    with tempfile.TemporaryFile("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, logging_callback=on_log, log_level="warning") as session:
                await session.initialize()
                listed = (await session.list_tools()).tools
                # What a tool is (not what each SDK adds, such as `execution`).
                tools = {t.name: t.model_dump(mode="json", by_alias=True, exclude_none=True, include=DEFINITION)
                         for t in listed if t.name in WAIT_TOOLS}
                records = {}
                for step in steps(fx):
                    if step.tool in tools:
                        records[step.name] = await asyncio.wait_for(call(session, step, logs), 60)
    return tools, records


def differences(label: str, answers: dict[str, Any]) -> list[str]:
    """A unified diff of each server's answer against the first one's."""
    (first, expected), *others = answers.items()
    out = []
    for name, got in others:
        if got != expected:
            a = json.dumps(expected, indent=1, sort_keys=True).splitlines()
            b = json.dumps(got, indent=1, sort_keys=True).splitlines()
            diff = "\n".join(difflib.unified_diff(a, b, first, name, lineterm=""))
            out.append(f"--- {label}: {first} and {name} disagree\n{diff}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpp", required=True, help="the built C++ example server (waitfor_mcp_server)")
    parser.add_argument("--node", default="node", help="the node executable")
    cli = parser.parse_args()
    servers = [
        Server("python", [sys.executable, str(ROOT / "examples" / "python" / "server.py")]),
        Server("node", [cli.node, str(ROOT / "examples" / "node" / "server.mjs")]),
        Server("cpp", [cli.cpp, *(a for p in CPP_PROFILES for a in ("--profile", p))]),
    ]
    with tempfile.TemporaryDirectory(prefix="wf-session-") as work:
        fx = Fixtures(Path(work).resolve())
        try:
            sessions = {s.name: asyncio.run(run_session(s, fx)) for s in servers}
        finally:
            fx.tmux("kill-server")
    failures = []
    for tool in WAIT_TOOLS:
        definitions = {name: tools[tool] for name, (tools, _) in sessions.items() if tool in tools}
        if len(definitions) >= 2:
            print(f"tools/list {tool}: {', '.join(definitions)}")
            failures += differences(f"tools/list {tool}", definitions)
    for step in steps(fx):
        answers = {name: records[step.name] for name, (_, records) in sessions.items() if step.name in records}
        if len(answers) >= 2:
            print(f"{step.name}: {', '.join(answers)}")
            failures += differences(step.name, answers)
        for name, record in answers.items():
            if step.on_first_progress is not None and not record["progress"]:
                failures.append(f"--- {step.name}: {name} sent no progress, so the fixture never changed")
    print("\n\n".join(failures))
    print(f"{len(failures)} disagreement(s)" if failures else "the example servers agree")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
