"""Each exception type: its code, its fields, its cause."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
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
    started = time.monotonic()
    with pytest.raises(waitfor.SpecError) as caught:
        DOORS[door]({"until": {"matches": "x"}, "stop": [huge]})
    took = time.monotonic() - started
    assert caught.value.rule == "too_large", caught.value
    assert "input is larger than 4194304 bytes (4 MiB)" in caught.value.message
    assert took < 0.25, took


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
