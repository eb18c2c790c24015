"""Every profile: its tool definition, a call, its output against its
outputSchema; durations."""

from __future__ import annotations

import asyncio
import json
import numbers
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import OUTPUT_CAP, Ticker

import waitfor

KEYS = {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

def _aura_call(tmp: Path) -> dict[str, Any]:
    return {
        "probe": {"tool": "run_command", "args": {"argv": ["echo", "Running"]}},
        "until": {"matches": "Running"},
        "poll_sec": 1,
        "max_wait_sec": 10,
    }


def _event_call(tmp: Path) -> dict[str, Any]:
    log = tmp / "events.jsonl"
    event = {"type": "build.done", "at": "2026-11-29T12:00:00Z", "by": "ci", "summary": "build 7 passed"}
    log.write_text(json.dumps(event) + "\n")
    return {"path": str(log), "for": "build 7", "type": "build.done", "timeout": "10s"}


# One sample call per profile, given a scratch folder.
CALLS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "aura/wait_for": _aura_call,
    "ouro/wait": _event_call,
}


def test_every_profile_has_a_complete_definition() -> None:
    names = [p["profile"] for p in waitfor.profiles()]
    defs = waitfor.tool_definitions()
    assert len(names) == len(defs) >= 1 and len(set(names)) == len(names)
    assert [p["tool"] for p in waitfor.profiles()] == defs
    for name, tool in zip(names, defs, strict=True):
        assert set(tool) == KEYS, name
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
        jsonschema.Draft202012Validator.check_schema(tool["outputSchema"])
        assert waitfor.tool_definition(name) == tool


@pytest.mark.parametrize("profile", [p["profile"] for p in waitfor.profiles()])
def test_every_profile_answers_within_its_output_schema(profile: str, tmp_path: Path) -> None:
    if profile.endswith("/wait_for_text"):
        pytest.skip("pane profiles run on real tmux in test_panes.py")
    if profile not in CALLS:
        pytest.fail(f"add a call for the new profile {profile} to CALLS")
    tool = waitfor.tool_definition(profile)
    arguments = CALLS[profile](tmp_path)
    jsonschema.validate(arguments, tool["inputSchema"])
    # The sample calls run `echo` and read files under tmp_path.
    grants = waitfor.Grants(commands=["echo"], file_roots=[tmp_path])
    out = waitfor.call_tool(profile, arguments, grants=grants)
    jsonschema.validate(out, tool["outputSchema"])


def test_generic_wait_for_probes_the_hosts_own_tool(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    reports: list[waitfor.ToolProgress] = []

    def tools(name: str, arguments: dict[str, Any]) -> str:
        calls.append((name, arguments))
        return "rollout 3/3" if len(calls) >= 3 else f"rollout {len(calls)}/3"

    out = waitfor.call_tool(
        "aura/wait_for",
        {"probe": {"tool": "kubectl_status", "args": {"app": "web"}}, "until": {"matches": "3/3"}, "poll_sec": 1},
        tools=tools,
        on_progress=reports.append,
    )
    assert out["reason"] == "matched" and out["samples"] == 3
    assert calls[0] == ("kubectl_status", {"app": "web"})
    # AURA sends no progress of its own: seconds elapsed of the bound
    # (120 s by default), no message.
    assert reports and all(p.total == 120.0 and p.message is None for p in reports)
    assert [p.progress for p in reports] == sorted(p.progress for p in reports)


@pytest.mark.parametrize("kind", ["str", "list"])
def test_a_host_tools_answer_over_the_cap_is_read_no_further_than_the_cap(kind: str) -> None:
    """A lent tool's answer is read as a probe's: one far over the cap
    (made before the wait) is found out after about the cap's worth, with
    AURA's over-the-cap error, and other threads run throughout (a generous
    bound: reading it whole took seconds)."""
    huge: Any = "é" * 200_000_000 if kind == "str" else ["x" * 100] * 3_000_000

    def tools(name: str, arguments: dict[str, Any]) -> Any:
        return huge

    with Ticker() as ticker, pytest.raises(waitfor.ToolError) as caught:
        waitfor.call_tool(
            "aura/wait_for",
            {"probe": {"tool": "status", "args": {}}, "until": {"matches": "never"}, "max_wait_sec": 30},
            tools=tools,
        )
    over = int(str(caught.value).split("returned ")[1].split(" bytes")[0])
    assert f"over the {OUTPUT_CAP}-byte cap" in str(caught.value) and OUTPUT_CAP < over <= OUTPUT_CAP + 4, caught.value
    assert ticker.longest < 0.3, ticker.longest


def test_an_unknown_host_tool_is_not_exposed_by_any_server() -> None:
    """AURA's ``UnknownProbeTool``: a ``tools`` callable that raises
    ``UNKNOWN_TOOL`` makes the wait fail with AURA's words."""

    def tools(name: str, arguments: dict[str, Any]) -> str:
        raise LookupError(waitfor.UNKNOWN_TOOL)

    with pytest.raises(waitfor.ToolError) as failed:
        waitfor.call_tool("aura/wait_for", {"probe": {"tool": "kubectl_get", "args": {}}, "until": {"matches": "x"}},
                          tools=tools)
    assert str(failed.value) == "probe tool 'kubectl_get' is not exposed by any connected MCP server"


def test_libtmux_mcp_logs_an_invalid_regex_before_it_refuses_it() -> None:
    """libtmux-mcp's ``_compile_patterns``: "Invalid regex pattern: ..." is
    logged as a warning, then raised; ``on_log`` runs in the caller's
    context, before the error."""
    logs: list[tuple[str, str]] = []
    with pytest.raises(waitfor.SpecError) as refused:
        waitfor.call_tool("libtmux-mcp/wait_for_text", {"pane_id": "%0", "patterns": ["("], "regex": True},
                          on_log=lambda level, message: logs.append((level, message)))
    assert len(logs) == 1 and logs[0][0] == "warning"
    assert logs[0][1].startswith("Invalid regex pattern: ") and logs[0][1] in str(refused.value)

    async def via_loop() -> list[tuple[str, str]]:
        heard: list[tuple[str, str]] = []

        async def on_log(level: str, message: str) -> None:
            await asyncio.sleep(0)
            heard.append((level, message))

        with pytest.raises(waitfor.SpecError):
            await waitfor.call_tool_async("libtmux-mcp/wait_for_text",
                                          {"pane_id": "%0", "patterns": ["("], "regex": True}, on_log=on_log)
        return heard

    assert asyncio.run(via_loop()) == logs


def test_ceiling_override() -> None:
    out = waitfor.call_tool(
        "aura/wait_for",
        {"probe": {"tool": "run_command", "args": {"argv": ["true"]}}, "until": {"matches": "never"},
         "poll_sec": 1, "max_wait_sec": 60},
        max_wait_ceiling=2,
        grants=waitfor.Grants(commands=["true"]),
    )
    assert out["reason"] == "timeout" and out["effective_max_wait_sec"] == 2


def test_arguments_as_json_text() -> None:
    out = waitfor.call_tool(
        "aura/wait_for",
        '{"probe": {"tool": "run_command", "args": {"argv": ["echo", "hi"]}}, "until": {"matches": "hi"}}',
        grants=waitfor.Grants(commands=["echo"]),
    )
    assert out["reason"] == "matched"


def test_simulate_refuses_a_bad_vector() -> None:
    with pytest.raises(waitfor.SpecError):
        waitfor.simulate({"spec": {"until": {}}, "script": {"steps": []}})


@pytest.mark.parametrize(("text", "ms"), [("90s", 90000), ("2m", 120000), ("1h", 3600000), ("500ms", 500), ("30", 30000)])
def test_parse_duration(text: str, ms: int) -> None:
    assert waitfor.parse_duration(text) == ms
    assert waitfor.parse_duration(waitfor.format_duration(ms)) == ms


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("1.5s", "wrong_type"),
        ("-1s", "wrong_type"),
        ("90 s", "wrong_type"),
        ("", "wrong_type"),
        ("1m30s", "wrong_type"),
        ("\ud800s", "wrong_type"),
        ("99999999999999999999h", "out_of_range"),
        # Longer than every language holds exactly: Node's parseDuration gives null.
        ("9007199254740992ms", "out_of_range"),
    ],
)
def test_parse_duration_refuses(text: str, rule: str) -> None:
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.parse_duration(text)
    assert (caught.value.code, caught.value.field, caught.value.rule) == ("invalid_arguments", "duration", rule)


def test_parse_duration_refuses_what_is_no_text_with_the_librarys_error() -> None:
    for value in (5, None, b"90s"):
        with pytest.raises(waitfor.SpecError) as caught:
            waitfor.parse_duration(value)  # type: ignore[arg-type]
        assert (caught.value.code, caught.value.rule) == ("invalid_arguments", "wrong_type")


def test_format_duration() -> None:
    import datetime

    assert waitfor.format_duration(datetime.timedelta(minutes=2)) == "2m"
    assert waitfor.format_duration(0) == "0s"
    assert waitfor.format_duration(2**53 - 1) == "9007199254740991ms"
    with pytest.raises(waitfor.SpecError):
        waitfor.format_duration(-1)


def test_format_duration_takes_any_real_number() -> None:
    import fractions

    class Count:
        """An integer type of another library, registered as NumPy's are."""

        def __init__(self, n: int) -> None:
            self.n = n

        def __float__(self) -> float:
            return float(self.n)

    numbers.Integral.register(Count)
    assert waitfor.format_duration(fractions.Fraction(3, 2)) == "2ms"
    assert waitfor.format_duration(Count(90_000)) == "90s"
    with pytest.raises(waitfor.SpecError):
        waitfor.format_duration(True)


# The same answers as Node's formatDuration and C's waitfor_duration_format_number
# (core's format_millis): a fraction rounds to the nearest millisecond, a half up.
@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (1.5, "2ms"),
        (0.5, "1ms"),
        (2.5, "3ms"),
        (1.4999999999999998, "1ms"),
        (89_999.6, "90s"),
        (0.4, "0s"),
        (-0.4, "0s"),
        (-0.0, "0s"),
        (120_000.0, "2m"),
    ],
)
def test_format_duration_rounds_fractions_as_every_language_does(ms: float, text: str) -> None:
    assert waitfor.format_duration(ms) == text


def test_format_duration_rounds_a_timedelta_as_a_number() -> None:
    import datetime

    # 1.5 ms, as Node's formatDuration(1.5): rounded, not floored.
    assert waitfor.format_duration(datetime.timedelta(microseconds=1500)) == "2ms"
    assert waitfor.format_duration(datetime.timedelta(microseconds=1499)) == "1ms"
    assert waitfor.format_duration(datetime.timedelta(seconds=89, microseconds=999_600)) == "90s"
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.format_duration(datetime.timedelta(milliseconds=-1))
    assert caught.value.rule == "out_of_range"
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.format_duration(datetime.timedelta.max)
    assert caught.value.rule == "out_of_range"


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (-1, "out_of_range"),
        (-0.6, "out_of_range"),
        (float("nan"), "wrong_type"),
        (float("inf"), "out_of_range"),
        (float("-inf"), "out_of_range"),
        (2**53, "out_of_range"),
        (10**400, "out_of_range"),
        (-(10**400), "out_of_range"),
        ("90s", "wrong_type"),
        (True, "wrong_type"),
        (None, "wrong_type"),
    ],
)
def test_format_duration_refuses_hostile_values_with_the_librarys_error(value: object, rule: str) -> None:
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.format_duration(value)  # type: ignore[arg-type]
    assert (caught.value.code, caught.value.field, caught.value.rule) == ("invalid_arguments", "duration", rule)
