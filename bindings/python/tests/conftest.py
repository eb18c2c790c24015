"""Shared helpers: polling with generous deadlines instead of sleeps."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
VECTORS = ROOT / "tests" / "vectors"


def eventually(check: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    """Polls ``check`` until it holds; fails after a generous deadline."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not hold within {timeout}s")
        time.sleep(0.005)


async def cancel_once_probing(call: Awaitable[Any], probes: Callable[[], int]) -> None:
    """Starts ``call`` (an MCP tool call whose wait never ends on its own),
    cancels it once ``probes()`` counts two probe calls (the client sends
    ``notifications/cancelled``), and checks that probing stops: the count
    stays put across several intervals."""
    task = asyncio.ensure_future(call)
    deadline = time.monotonic() + 30
    while probes() < 2:
        assert time.monotonic() < deadline, "the wait never probed"
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    seen, stable_since = probes(), time.monotonic()
    while time.monotonic() - stable_since < 3.5:
        assert time.monotonic() < deadline + 30, "the wait kept probing"
        await asyncio.sleep(0.25)
        if probes() != seen:
            seen, stable_since = probes(), time.monotonic()


class _PendingTasks(logging.Handler):
    """Collects asyncio's reports of a task garbage-collected while still
    pending (a loop closed under it)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "Task was destroyed but it is pending" in message:
            self.seen.append(message)


@pytest.fixture(autouse=True, scope="session")
def _no_task_left_pending() -> Any:
    """No test leaves an asyncio task pending: asyncio reports one the
    garbage collector finds so ("Task was destroyed but it is pending!"),
    which fails the run here."""
    handler = _PendingTasks()
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    yield
    gc.collect()
    logger.removeHandler(handler)
    assert not handler.seen, "tasks left pending:\n" + "\n".join(handler.seen[:5])


@pytest.fixture(autouse=True)
def _installed_wheel() -> None:
    """The tests must run against the installed wheel, not the source tree."""
    import waitfor

    assert "site-packages" in waitfor.__file__, waitfor.__file__


class Ticker:
    """A thread ticking every millisecond inside ``with``: ``longest`` is
    the longest time it could not run (another thread held the interpreter
    lock)."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)

    def _tick(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            time.sleep(0.001)
            now = time.monotonic()
            self.longest = max(self.longest, now - last)
            last = now

    def __enter__(self) -> Ticker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# The default output cap, and the engine's error for an observation over it.
OUTPUT_CAP = 256 * 1024
_OVER_THE_CAP = re.compile(r"exceeds the cap of (\d+) bytes \((\d+) bytes read\)")


def bytes_read_over_the_cap(error: str | None, cap: int = OUTPUT_CAP) -> int:
    """How many bytes the engine's over-the-cap ``error`` says were read."""
    found = _OVER_THE_CAP.search(error or "")
    assert found is not None and int(found[1]) == cap, error
    return int(found[2])


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def load_vectors() -> list[tuple[str, dict[str, object]]]:
    cases = []
    for file in sorted(VECTORS.glob("*.json")):
        for vector in json.loads(file.read_text())["vectors"]:
            cases.append((f"{file.stem}/{vector['name']}", vector))
    return cases


PYTHON = sys.executable


@pytest.fixture
def pane(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A pane running sh on a tmux server of its own (default socket in a
    private TMUX_TMPDIR, so profiles without a socket option reach it)."""
    tmpdir = tempfile.mkdtemp(prefix="wf-tmux-")
    monkeypatch.setenv("TMUX_TMPDIR", tmpdir)
    monkeypatch.delenv("TMUX", raising=False)
    pane_id = subprocess.run(
        ["tmux", "-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "30", "-P", "-F", "#{pane_id}", "sh"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    try:
        yield pane_id
    finally:
        subprocess.run(["tmux", "kill-server"], capture_output=True)
        shutil.rmtree(tmpdir, ignore_errors=True)
