"""The cap on profile calls in flight: the setting, a call over the cap
refused with ``too_many_calls``, and places coming back. The cap is
process-wide, so each scenario runs in a fresh interpreter, where no
other test's call holds a place."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import waitfor

HEADER = textwrap.dedent(
    """
    import asyncio, threading, time
    import waitfor

    ARGS = {"probe": {"tool": "status", "args": {}}, "until": {"matches": "ready"},
            "poll_sec": 1, "max_wait_sec": 60}
    """
)


def _run(body: str) -> None:
    child = subprocess.run(
        [sys.executable, "-c", HEADER + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr


def test_the_cap_is_set_and_read() -> None:
    before = waitfor.set_max_tool_calls(7)
    try:
        assert before == 1024
        assert waitfor.max_tool_calls() == 7
    finally:
        assert waitfor.set_max_tool_calls(before) == 7
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.set_max_tool_calls(-1)
    assert (caught.value.code, caught.value.field, caught.value.rule) == ("invalid_arguments", "cap", "out_of_range")
    with pytest.raises(waitfor.SpecError):
        waitfor.set_max_tool_calls(1.5)  # type: ignore[arg-type]
    assert waitfor.max_tool_calls() == 1024


def test_a_call_over_the_cap_is_refused_and_the_running_one_goes_on() -> None:
    _run(
        """
        waitfor.set_max_tool_calls(1)
        asked, ready = threading.Event(), threading.Event()
        def status(name, args):
            asked.set()
            return "ready" if ready.is_set() else "starting"
        outputs = []
        running = threading.Thread(
            target=lambda: outputs.append(waitfor.call_tool("aura/wait_for", ARGS, tools=status)))
        running.start()
        assert asked.wait(30)
        try:
            waitfor.call_tool("aura/wait_for", ARGS, tools=status)
        except waitfor.ToolError as err:
            assert err.code == "too_many_calls", err.code
            assert (err.field, err.rule) == (None, None)
            assert "at most 1" in str(err), str(err)
        else:
            raise AssertionError("a call over the cap ran")
        # The refusal left the running call alone: it matches once ready.
        ready.set()
        running.join(60)
        assert outputs[0]["reason"] == "matched", outputs
        # Its place came back.
        assert waitfor.call_tool("aura/wait_for", ARGS, tools=status)["reason"] == "matched"
        """
    )


def test_a_cancelled_async_call_gives_its_place_back() -> None:
    _run(
        """
        waitfor.set_max_tool_calls(1)
        async def main():
            asked = threading.Event()
            def status(name, args):
                asked.set()
                return "starting"
            task = asyncio.ensure_future(waitfor.call_tool_async("aura/wait_for", ARGS, tools=status))
            assert await asyncio.to_thread(asked.wait, 30)
            try:
                await waitfor.call_tool_async("aura/wait_for", ARGS, tools=status)
            except waitfor.ToolError as err:
                assert err.code == "too_many_calls", err.code
            else:
                raise AssertionError("a call over the cap ran")
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            # The place comes back once the cancelled wait has ended, a
            # moment after the task saw its cancel.
            again = {**ARGS, "until": {"matches": "starting"}}
            deadline = time.monotonic() + 30
            while True:
                try:
                    out = await waitfor.call_tool_async("aura/wait_for", again, tools=status)
                    break
                except waitfor.ToolError as err:
                    assert err.code == "too_many_calls" and time.monotonic() < deadline, err
                    await asyncio.sleep(0.01)
            assert out["reason"] == "matched", out
        asyncio.run(main())
        """
    )
