"""Each exception type: its code, its fields, its cause."""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
from collections.abc import Callable
from typing import Any

import pytest
from conftest import PYTHON, Ticker, child_env

import waitfor


@pytest.mark.parametrize(
    ("bad_spec", "field", "rule"),
    [
        ({"regex": True, "until": {"matches": "("}}, "until.matches", "invalid_regex"),
        ({"until": {"matches": "x"}, "colour": 1}, "", "unknown_field"),
        ({"until": {"matches": "x"}, "interval_ms": 1}, "interval_ms", "out_of_range"),
        ({}, "until", "missing_field"),
        ('{"until": ', "", "invalid_json"),
        ({"until": {"matches": object()}}, "until.matches", "wrong_type"),
        # Input past 4 MiB of JSON is refused as it is converted: ten million
        # entries cost the interpreter lock no more than 4 MiB's worth.
        ({"until": {"matches": "x"}, "pad": [0] * 10_000_000}, "", "too_large"),
        ({"until": {"matches": "x" * (4 << 20)}}, "", "too_large"),
        ('{"until": {"matches": "' + "x" * (4 << 20) + '"}}', "", "too_large"),
    ],
)
def test_spec_errors_name_field_and_rule(bad_spec: Any, field: str, rule: str) -> None:
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.wait(bad_spec, lambda: "")
    err = caught.value
    assert (err.rule, err.code) == (rule, "invalid_spec"), err
    assert err.field == field or (rule == "unknown_field" and "colour" in str(err)), err
    assert isinstance(err, ValueError) and isinstance(err, waitfor.WaitforError)
    if rule == "too_large":
        # The same words whether the input came as text or as objects.
        assert "input is larger than 4194304 bytes (4 MiB)" in err.message and "$" not in err.message, err.message


# The doors a caller's dict comes in by.
DOORS: dict[str, Callable[[Any], object]] = {
    "check_spec": waitfor.check_spec,
    "wait": lambda spec: waitfor.wait(spec, lambda: ""),
    "call_tool": lambda spec: waitfor.call_tool("aura/wait_for", {"probe": {"tool": "status", "args": {}}, **spec}),
}


@pytest.mark.parametrize("door", DOORS)
def test_one_huge_str_in_input_is_refused_by_its_length_before_it_is_encoded(door: str) -> None:
    """A str of more code points than 4 MiB is refused at once: each takes
    at least a byte of UTF-8 (encoding this one whole took over a second,
    holding the interpreter lock)."""
    huge = "é" * 300_000_000  # 300 MB, 600 MB as UTF-8
    # This thread's CPU time, not the wall clock's: a loaded machine that
    # keeps the thread waiting for a core adds nothing to it, and the
    # encoding this guards against runs on this thread.
    started = time.thread_time()
    with pytest.raises(waitfor.SpecError) as caught:
        DOORS[door]({"until": {"matches": "x"}, "stop": [huge]})
    took = time.thread_time() - started
    assert caught.value.rule == "too_large", caught.value
    assert "input is larger than 4194304 bytes (4 MiB)" in caught.value.message
    assert took < 0.25, took


LONE = "\ud800"  # a lone surrogate: a str Python holds, UTF-8 cannot


@pytest.mark.parametrize(
    ("door", "code", "field"),
    [
        (lambda: waitfor.check_spec({"until": {"matches": "a" + LONE}}), "invalid_spec", "until.matches"),
        (lambda: waitfor.check_spec({"until": {LONE: "x"}}), "invalid_spec", "until"),
        (lambda: waitfor.check_spec('{"until": {"matches": "' + LONE + '"}}'), "invalid_spec", ""),
        (
            lambda: waitfor.check_arguments("libtmux-mcp/wait_for_text", {"pane_id": "%1", "patterns": [LONE]}),
            "invalid_arguments",
            "patterns[0]",
        ),
        (lambda: waitfor.check_arguments("ouro/wait" + LONE, {}), "invalid_arguments", "profile"),
        (lambda: waitfor.call_tool("ouro/wait" + LONE, {}), "invalid_arguments", "profile"),
        (lambda: waitfor.find_profile(LONE), "invalid_arguments", "name"),
        (lambda: waitfor.parse_pane_id("%1" + LONE), "invalid_arguments", "pane_id"),
        (lambda: waitfor.record_send_keys("%1" + LONE, ["x"]), "invalid_arguments", "pane_id"),
        (lambda: waitfor.record_send_keys("%1", ["x", LONE]), "invalid_arguments", "keys[1]"),
        (lambda: waitfor.record_send_keys("%1", ["x"], socket_name=LONE), "invalid_arguments", "socket_name"),
    ],
)
def test_a_str_holding_a_lone_surrogate_is_refused_saying_so(
    door: Callable[[], object], code: str, field: str
) -> None:
    """As core refuses a lone surrogate escape in JSON text (rule
    ``invalid_json``), never as a wrong type or a bare UnicodeEncodeError."""
    with pytest.raises(waitfor.SpecError) as caught:
        door()
    err = caught.value
    assert (err.code, err.field, err.rule) == (code, field, "invalid_json"), err
    assert "not valid UTF-8: it holds a lone surrogate" in err.message, err.message


def test_probe_and_builtin_probe_together_is_a_conflict() -> None:
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.wait({"probe": {"command": {"argv": ["true"]}}, "until": {"matches": "x"}}, lambda: "")
    assert (caught.value.field, caught.value.rule) == ("probe", "conflict")


def test_no_probe_at_all() -> None:
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.wait({"until": {"matches": "x"}})
    assert caught.value.rule == "missing_field"


def test_probe_error_chains_the_probes_exception() -> None:
    class Refused(Exception):
        pass

    def probe() -> str:
        raise Refused("port 8080")

    r = waitfor.wait({"until": {"matches": "x"}, "interval_ms": 10}, probe)
    assert r.outcome == "probe_error" and r.error == "probe failed: Refused: port 8080"
    assert isinstance(r.probe_exception, Refused)
    with pytest.raises(waitfor.ProbeError) as caught:
        r.raise_for_probe_error()
    assert caught.value.code == "probe_error"
    assert caught.value.__cause__ is r.probe_exception
    ok = waitfor.wait({"until": {"matches": "x"}}, lambda: "x")
    assert ok.raise_for_probe_error() is ok


# A probe error's message is kept to 4 KiB (SECURITY.md), its cut marked.
MAX_ERROR = 4096
CUT_MARK = " ... [cut: the message is longer than 4096 bytes]"


class _Text(str):
    """A str whose ``len()`` raises: the message is measured by its real
    length all the same."""

    def __len__(self) -> int:
        raise TypeError("no len")


HUGE_MESSAGE = "é" * 20_000_000  # 20 MB, 40 MB as UTF-8; made once
HUGE_TEXT = _Text(HUGE_MESSAGE)


class _HugeStr(Exception):
    def __str__(self) -> str:
        return HUGE_TEXT


# Exceptions whose text is far over the bound, made before the wait.
HUGE_EXCEPTIONS: dict[str, Callable[[], BaseException]] = {
    "message": lambda: RuntimeError(HUGE_MESSAGE),
    "__str__ of a str subclass": lambda: _HugeStr(),
    "type name": lambda: type("E" * 10_000_000, (Exception,), {})("short"),
}


def _assert_cut(message: str | None, prefix: str) -> None:
    assert message is not None and message.startswith(prefix), (message or "")[:100]
    assert len(message.encode()) <= MAX_ERROR + len(prefix.encode()), len(message)
    assert message.endswith(CUT_MARK), message[-100:]


@pytest.mark.parametrize("kind", HUGE_EXCEPTIONS)
def test_a_huge_exception_message_is_cut_before_it_is_copied(kind: str) -> None:
    """A probe's exception text far over the bound is read one character
    past it at most: the result's ``error`` and ``probe.last_error`` hold
    its first 4 KiB and the cut mark (they held all of it: a 100 MB message
    made a 1.2 GB result and held the interpreter lock for seconds). The
    exception itself is kept whole, as the cause."""
    exc = HUGE_EXCEPTIONS[kind]()

    def probe() -> str:
        raise exc

    with Ticker() as ticker:
        r = waitfor.wait({"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 30_000}, probe)
    assert r.outcome == "probe_error", r.outcome
    _assert_cut(r.probe.last_error, "")
    _assert_cut(r.error, "probe failed: ")
    assert r.error == f"probe failed: {r.probe.last_error}"
    assert len(json.dumps(r.to_dict(), ensure_ascii=False).encode()) < 3 * MAX_ERROR
    assert r.probe_exception is exc
    assert ticker.longest < 0.3, ticker.longest


@pytest.mark.parametrize("caller", ["probe", "lent tool"])
def test_a_huge_exception_message_costs_the_bounds_worth(caller: str) -> None:
    """Reading a 100 MB exception message takes a few KiB of it, not a
    copy of its size: in a process of its own, the peak memory grows by
    far less than the message's 200 MB of UTF-8 (copied whole, it grew by
    several times that), and the wait answers at once."""
    code = f"""
        import json, resource, time, waitfor
        message = "é" * 100_000_000
        def raises(*args):
            raise RuntimeError(message)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.monotonic()
        if {caller!r} == "probe":
            error = waitfor.wait({{"until": {{"matches": "x"}}, "max_wait_ms": 30000}}, raises).error
        else:
            try:
                waitfor.call_tool(
                    "aura/wait_for",
                    {{"probe": {{"tool": "status", "args": {{}}}}, "until": {{"matches": "x"}}, "max_wait_sec": 30}},
                    tools=raises,
                )
            except waitfor.ToolError as err:
                error = str(err)
        took = time.monotonic() - started
        grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(json.dumps({{"grew_kib": grew, "took": took, "error_bytes": len(error.encode())}}))
    """
    child = subprocess.run(
        [PYTHON, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=child_env(), timeout=300
    )
    assert child.returncode == 0, child.stderr
    seen = json.loads(child.stdout)
    assert seen["error_bytes"] < MAX_ERROR + 200, seen
    assert seen["grew_kib"] < 50 * 1024, seen
    assert seen["took"] < 5, seen


def test_an_error_message_within_the_bound_is_kept_whole() -> None:
    text = "é" * (MAX_ERROR // 2 - len("RuntimeError: ") // 2)
    message = f"RuntimeError: {text}"
    assert len(message.encode()) <= MAX_ERROR

    def probe() -> str:
        raise RuntimeError(text)

    r = waitfor.wait({"until": {"matches": "x"}, "interval_ms": 10}, probe)
    assert r.probe.last_error == message


def test_a_lent_tools_huge_error_is_cut_before_it_is_copied() -> None:
    """A lent tool's error (an exception of the tools callable) is read as
    a probe's: AURA's error names its first 4 KiB, cut."""

    def tools(name: str, arguments: dict[str, Any]) -> str:
        raise RuntimeError(HUGE_MESSAGE)

    with Ticker() as ticker, pytest.raises(waitfor.ToolError) as caught:
        waitfor.call_tool(
            "aura/wait_for",
            {"probe": {"tool": "status", "args": {}}, "until": {"matches": "x"}, "max_wait_sec": 30},
            tools=tools,
        )
    text = str(caught.value)
    assert "probe tool 'status' failed on sample 1: RuntimeError: éé" in text, text[:200]
    assert CUT_MARK in text and len(text.encode()) < MAX_ERROR + 200, len(text)
    assert ticker.longest < 0.3, ticker.longest


def test_unknown_profile_is_a_tool_error() -> None:
    with pytest.raises(waitfor.ToolError) as caught:
        waitfor.call_tool("nobody/nothing", {})
    assert caught.value.code == "unknown_profile"
    with pytest.raises(waitfor.ToolError):
        waitfor.tool_definition("nobody/nothing")


def test_invalid_tool_arguments_are_spec_errors() -> None:
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.call_tool("aura/wait_for", {"probe": {"tool": ""}, "until": {"matches": "x"}})
    assert caught.value.code == "invalid_arguments" and caught.value.field.startswith("probe")


def test_runtime_tool_error_chains_the_tool_callers_exception() -> None:
    def tools(name: str, arguments: dict[str, Any]) -> str:
        raise PermissionError(f"{name} denied")

    with pytest.raises(waitfor.ToolError) as caught:
        waitfor.call_tool(
            "aura/wait_for",
            {"probe": {"tool": "status", "args": {}}, "until": {"matches": "x"}, "poll_sec": 1, "max_wait_sec": 5},
            tools=tools,
        )
    assert caught.value.code == "runtime"
    assert isinstance(caught.value.__cause__, PermissionError)


def test_hierarchy_and_codes() -> None:
    for cls, code in [
        (waitfor.SpecError, "invalid_spec"),
        (waitfor.ProbeError, "probe_error"),
        (waitfor.ToolError, "runtime"),
        (waitfor.InternalError, "internal"),
    ]:
        assert issubclass(cls, waitfor.WaitforError)
        assert cls("m").code == code
    assert waitfor.WaitforError("m", code="x").code == "x"
