"""Blocking waits: probes of every kind, answers of every type, built-in
probes, policy, progress, handles."""

from __future__ import annotations

import functools
import json
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import OUTPUT_CAP, Ticker, bytes_read_over_the_cap, eventually

import waitfor

FAST = {"interval_ms": 10, "max_wait_ms": 20000}


def spec(**fields: Any) -> dict[str, Any]:
    return {**FAST, **fields}


def test_plain_callable_until_match() -> None:
    polls = iter(["starting", "still starting", "ready"])
    r = waitfor.wait(spec(until={"matches": "ready"}), lambda: next(polls))
    assert (r.outcome, r.samples, r.ok) == ("matched", 3, True)
    assert r.matched_lines == ("ready",)
    assert r.last_observation == "ready"


def test_spec_as_json_text() -> None:
    r = waitfor.wait(json.dumps(spec(until={"matches": "x"})), lambda: "x")
    assert r.outcome == "matched"


def test_probe_gets_context() -> None:
    seen: list[tuple[int, float, float, bool]] = []

    def probe(ctx: waitfor.ProbeContext) -> str:
        seen.append((ctx.sample, ctx.elapsed, ctx.budget, ctx.cancelled))
        return "go" if ctx.sample == 2 else ""

    r = waitfor.wait(spec(until={"matches": "go"}), probe)
    assert r.outcome == "matched"
    assert [s[0] for s in seen] == [1, 2]
    assert all(0 < budget <= 20 and not cancelled for _, _, budget, cancelled in seen)


def _context_probes() -> list[tuple[str, Any, bool]]:
    """Probes of every callable shape, and whether each takes the context."""

    def with_ctx(ctx: waitfor.ProbeContext) -> str:
        return "ready" if isinstance(ctx, waitfor.ProbeContext) else "no"

    def with_default(ctx: Any = None) -> str:
        return "ready" if isinstance(ctx, waitfor.ProbeContext) else "no"

    def star(*args: Any) -> str:
        return "ready" if len(args) == 1 else "no"

    def keyword_only(*, ctx: Any = None) -> str:
        return "ready" if ctx is None else "no"

    @functools.wraps(keyword_only)
    def wrapped(*args: Any, **kwargs: Any) -> str:
        return "ready" if not args else "no"

    class Prober:
        def method(self, ctx: waitfor.ProbeContext) -> str:
            return "ready" if isinstance(ctx, waitfor.ProbeContext) else "no"

        def __call__(self) -> str:
            return "ready"

    return [
        ("lambda", lambda: "ready", False),
        ("lambda with ctx", lambda ctx: "ready" if isinstance(ctx, waitfor.ProbeContext) else "no", True),
        ("def with ctx", with_ctx, True),
        ("parameter with a default", with_default, True),
        ("*args", star, True),
        ("keyword-only", keyword_only, False),
        ("functools.wraps of a probe without ctx", wrapped, False),
        ("bound method", Prober().method, True),
        ("callable object", Prober(), False),
        ("functools.partial", functools.partial(with_ctx), True),
        ("builtin", "ready".lower, False),
    ]


@pytest.mark.parametrize(("shape", "probe", "takes_ctx"), _context_probes(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_probe_gets_the_context_when_it_takes_a_positional_argument(shape: str, probe: Any, takes_ctx: bool) -> None:
    # Plain functions are read from their code object (quick), the rest
    # through inspect.signature: both must agree on every shape.
    assert waitfor._takes_ctx(probe) is takes_ctx, shape
    assert waitfor.wait(spec(until={"matches": "ready"}, max_wait_ms=2000), probe).outcome == "matched"


@pytest.mark.parametrize(
    ("answer", "until"),
    [
        ("ready", {"matches": "ready"}),
        (b"ready", {"matches": "ready"}),
        ({"status": "ok"}, {"json": {"pointer": "/status", "equals": "ok"}}),
        ([1, {"a": True}], {"json": {"pointer": "/1/a", "equals": True}}),
        (waitfor.Observation("done", exit_code=0), {"exit_code": 0}),
        (waitfor.Observation(json={"n": 3}), {"json": {"pointer": "/n", "equals": 3}}),
        (waitfor.Observation("x", gone=True), {"matches": "never"}),
    ],
)
def test_answer_types(answer: Any, until: dict[str, Any]) -> None:
    r = waitfor.wait(spec(until=until), lambda: answer)
    want = "gone" if isinstance(answer, waitfor.Observation) and answer.gone else "matched"
    assert r.outcome == want, r


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (None, "NoneType"),
        (42, "int"),
        (b"\xff\xfe", "not UTF-8"),
        ({"x": object()}, "not JSON"),
        ({1: "a"}, "keys must be str"),
    ],
)
def test_wrong_answers_are_probe_errors(answer: Any, says: str) -> None:
    r = waitfor.wait(spec(until={"matches": "x"}), lambda: answer)
    assert r.outcome == "probe_error"
    assert r.error is not None and says in r.error


def test_observation_fields() -> None:
    o = waitfor.Observation(json={"a": [1, 2]}, exit_code=3)
    assert (o.text, o.json, o.exit_code, o.gone) == ('{"a":[1,2]}', {"a": [1, 2]}, 3, False)
    assert repr(o) == "Observation(text='{\"a\":[1,2]}', json={'a': [1, 2]}, exit_code=3, gone=False)"
    with pytest.raises(waitfor.SpecError):
        waitfor.Observation(json={"bad": float("nan")})


@pytest.mark.parametrize(
    ("kwargs", "error", "says"),
    [
        ({"text": 5}, TypeError, "text must be a str or None, not int"),
        ({"text": b"ready"}, TypeError, "text must be a str or None, not bytes"),
        ({"text": "\udc80"}, ValueError, "text must be valid UTF-8"),
        ({"exit_code": 2**40}, ValueError, "exit_code must be a whole number from -2**31 to 2**31 - 1, not 1099511627776"),
        ({"exit_code": -(2**31) - 1}, ValueError, "exit_code must be a whole number"),
        ({"exit_code": 10**400}, ValueError, "not 1000000000000000000000000000000000000000..."),
        ({"exit_code": True}, TypeError, "exit_code must be an int (an exit status) or None, not bool"),
        ({"exit_code": 1.0}, TypeError, "exit_code must be an int (an exit status) or None, not float"),
    ],
)
def test_observation_refuses_wrong_fields_naming_them(kwargs: dict[str, Any], error: type, says: str) -> None:
    """As ``Policy`` does: a TypeError or ValueError naming the field (they
    were pyo3's ``OverflowError`` and "'int' object is not an instance of
    'str'"; a bool was taken as exit status 1)."""
    with pytest.raises(error) as caught:
        waitfor.Observation(**kwargs)
    assert says in str(caught.value), caught.value
    assert not isinstance(caught.value, OverflowError)


def test_observation_takes_none_and_the_i32_range() -> None:
    assert waitfor.Observation(None).text == ""
    assert waitfor.Observation(None, exit_code=None).exit_code is None
    assert waitfor.Observation(exit_code=2**31 - 1).exit_code == 2**31 - 1
    assert waitfor.Observation(exit_code=-(2**31)).exit_code == -(2**31)


def test_tolerated_probe_errors_then_success() -> None:
    calls = iter([ValueError("flaky"), "ok"])

    def probe() -> str:
        answer = next(calls)
        if isinstance(answer, Exception):
            raise answer
        return answer

    r = waitfor.wait(spec(until={"matches": "ok"}, on_probe_error={"tolerate": 2}), probe)
    assert r.outcome == "matched"
    assert r.probe.errors == 1
    assert r.probe.last_error == "ValueError: flaky"


def test_builtin_command_probe() -> None:
    r = waitfor.wait(
        spec(probe={"command": {"argv": ["sh", "-c", "echo build ok; exit 3"]}}, until={"exit_code": 3}),
        grants=waitfor.Grants(commands=["sh"]),
    )
    assert (r.outcome, r.exit_code) == ("matched", 3)


def test_a_nul_byte_in_a_command_is_refused_before_the_wait() -> None:
    """A NUL cannot reach the system: refused by the spec's rules, field named."""
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.wait(
            spec(probe={"command": {"argv": ["echo", "a\0b"]}}, until={"matches": "a"}),
            grants=waitfor.Grants(commands=["echo"]),
        )
    assert (caught.value.field, caught.value.rule) == ("probe.command.argv[1]", "contains_nul")


def test_builtin_file_probe_fresh_and_resume(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("old ready\n")
    handle = waitfor.start(
        spec(probe={"file": {"path": str(log)}}, view="fresh", until={"matches": "ready"}),
        grants=waitfor.Grants(file_roots=[tmp_path]),
    )
    # Appended until seen: the wait may take its entry sample after any one.
    while not handle.done():
        with log.open("a") as f:
            f.write("now ready\n")
        try:
            handle.result(timeout=0.05)
        except TimeoutError:
            pass
    r = handle.result()
    assert r.outcome == "matched" and r.matched_lines == ("now ready",)
    assert r.resume is not None


def test_policy_clamps() -> None:
    r = waitfor.wait(
        spec(until={"matches": "never"}, max_wait_ms=60000),
        lambda: "",
        policy=waitfor.Policy(max_wait_ceiling=0.2),
    )
    assert (r.outcome, r.effective_max_wait_ms, r.clamped) == ("timeout", 200, True)


def test_output_cap_policy() -> None:
    r = waitfor.wait(spec(until={"matches": "never"}), lambda: "x" * 5000, policy=waitfor.Policy(output_cap=1000))
    assert r.outcome == "error"


def test_a_spec_cannot_raise_the_hosts_output_cap() -> None:
    """The agent's spec asks for a terabyte; the host's cap holds."""
    r = waitfor.wait(
        spec(until={"matches": "never"}, output_cap_bytes=2**40),
        lambda: "x" * 5000,
        policy=waitfor.Policy(output_cap=1000),
    )
    assert r.outcome == "error" and r.error is not None and "cap of 1000 bytes" in r.error, r


# Answers far over the default cap, made before the wait (so the probe
# call itself is instant).
HUGE_ANSWERS: dict[str, Callable[[], Any]] = {
    "str": lambda: "é" * 200_000_000,  # 200 MB, 400 MB as UTF-8
    "bytes": lambda: b"a" * 100_000_000,
    "list": lambda: ["x" * 100] * 3_000_000,  # 24 MB, 309 MB as JSON
    "dict": lambda: {str(i): i for i in range(1_000_000)},
    "Observation": lambda: waitfor.Observation("a" * 50_000_000, exit_code=1),
}


@pytest.mark.parametrize("kind", HUGE_ANSWERS)
def test_an_answer_over_the_cap_is_found_out_at_the_caps_cost(kind: str) -> None:
    """Only about the cap's worth of an answer is read (one character past
    it), so the interpreter lock is never held for its whole size: the
    wait ends with the engine's over-the-cap error, and other threads run
    throughout (a generous bound: reading it whole took seconds)."""
    answer = HUGE_ANSWERS[kind]()
    with Ticker() as ticker:
        r = waitfor.wait(spec(until={"matches": "never"}), lambda: answer)
    assert r.outcome == "error", r
    assert OUTPUT_CAP < bytes_read_over_the_cap(r.error) <= OUTPUT_CAP + 4
    assert ticker.longest < 0.3, ticker.longest


class _StrOfItsOwn(str):
    """A str whose ``len()`` and indexing are its own: they lie (a length
    of 0, a slice that is all of it) or raise. The cap is checked by the
    string's real length, so neither is ever called."""

    lie = "zero"
    called: list[str] = []

    def __len__(self) -> int:
        type(self).called.append("__len__")
        if self.lie == "raise":
            raise TypeError("no len")
        return 0

    def __getitem__(self, key: Any) -> str:  # type: ignore[override]
        type(self).called.append("__getitem__")
        return str(self)


@pytest.mark.parametrize("lie", ["zero", "raise"])
@pytest.mark.parametrize("inside", ["str", "list", "dict key", "dict value"])
def test_a_str_subclass_cannot_talk_its_way_past_the_cap(lie: str, inside: str) -> None:
    """A ``str`` subclass whose ``__len__`` says 0 or raises is measured by
    its real length: found over the cap after about the cap's worth (it
    was encoded whole, 200 MB under the interpreter lock),
    its ``__len__`` and ``__getitem__`` never called."""
    _StrOfItsOwn.lie = lie
    _StrOfItsOwn.called = []
    huge = _StrOfItsOwn("é" * 100_000_000)
    answer: Any = {
        "str": huge,
        "list": [huge],
        "dict key": {huge: 1},
        "dict value": {"k": huge},
    }[inside]
    with Ticker() as ticker:
        r = waitfor.wait(spec(until={"matches": "never"}), lambda: answer)
    assert r.outcome == "error", r
    assert OUTPUT_CAP < bytes_read_over_the_cap(r.error) <= OUTPUT_CAP + 4
    assert _StrOfItsOwn.called == [], _StrOfItsOwn.called
    assert ticker.longest < 0.3, ticker.longest


@pytest.mark.parametrize("lie", ["zero", "raise"])
def test_a_str_subclass_in_a_spec_is_measured_by_its_real_length(lie: str) -> None:
    """Input too: a spec's str whose ``__len__`` lies is refused as too
    large by its real length, before it is encoded."""
    _StrOfItsOwn.lie = lie
    _StrOfItsOwn.called = []
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.wait({"until": {"matches": _StrOfItsOwn("x" * (5 << 20))}}, lambda: "")
    assert caught.value.rule == "too_large", caught.value
    assert _StrOfItsOwn.called == [], _StrOfItsOwn.called


@pytest.mark.parametrize(
    "answer",
    [
        "é" * 40 + "x",
        "😀" * 10,
        b"ab\xc3\xa9" * 10,
        [0] * 30,
        [None, True, False, -12, 2**64 - 1, 1.5, 1e300, "a\"b\n", {"k": [], "é": {}}],
        {str(i): i for i in range(20)},
        waitfor.Observation("é" * 40),
        waitfor.Observation("short", json=["x" * 100]),
    ],
    ids=lambda a: type(a).__name__,
)
def test_an_answer_exactly_at_the_cap_is_read_and_one_byte_over_is_not(answer: Any) -> None:
    """What counts is the size of the text, or of the compact JSON, in
    UTF-8 bytes: never a byte more, so nothing within the cap is refused."""
    def compact(value: Any) -> int:
        return len(waitfor.Observation(json=value).text.encode())

    if isinstance(answer, waitfor.Observation):
        size = max(len(answer.text.encode()), compact(answer.json))
    elif isinstance(answer, (dict, list)):
        size = compact(answer)
    else:
        size = len(answer.encode() if isinstance(answer, str) else answer)
    at_cap = waitfor.wait(spec(until={"matches": "never"}, max_wait_ms=50, output_cap_bytes=size), lambda: answer)
    assert at_cap.outcome == "timeout", at_cap
    over = waitfor.wait(spec(until={"matches": "never"}, output_cap_bytes=size - 1), lambda: answer)
    assert over.outcome == "error" and size <= bytes_read_over_the_cap(over.error, size - 1) <= size + 3, over


def test_stream_probe_appends() -> None:
    parts = iter(["rea", "dy\n"])
    r = waitfor.wait(
        spec(view="fresh", until={"matches": "ready"}), lambda: next(parts, ""), stream=True
    )
    assert r.outcome == "matched"


def test_progress_callback() -> None:
    reports: list[waitfor.Progress] = []
    r = waitfor.wait(
        spec(until={"matches": "never"}, max_wait_ms=400, progress_every_ms=10),
        lambda: "working\n",
        on_progress=reports.append,
    )
    assert r.outcome == "timeout"
    eventually(lambda: len(reports) > 0, what="a progress report")
    p = reports[0]
    assert p.samples >= 1 and p.last_line == "working"
    assert p.to_dict() == {"samples": p.samples, "elapsed_ms": p.elapsed_ms, "last_line": "working"}


def test_result_called_from_the_wait_s_own_progress_callback_gets_the_result() -> None:
    # Results are delivered apart from progress reports: a report waiting
    # for its own wait's result gets it when the wait ends (it used to be
    # refused, the result being queued behind the report for ever).
    got: list[waitfor.WaitResult] = []
    handles: list[waitfor.WaitHandle] = []

    def report(_: waitfor.Progress) -> None:
        if handles and not got:
            got.append(handles[0].result(timeout=30))

    handles.append(waitfor.start(spec(until={"matches": "never"}, max_wait_ms=300, progress_every_ms=10), lambda: "working\n", on_progress=report))
    assert handles[0].result(timeout=30).outcome == "timeout"
    eventually(lambda: len(got) > 0, what="the result, in the report")
    assert got[0].outcome == "timeout"


def test_handle_cancel_wake_and_result_timeout() -> None:
    samples: list[int] = []

    def probe(ctx: waitfor.ProbeContext) -> str:
        samples.append(ctx.sample)
        return ""

    handle = waitfor.start({"until": {"matches": "x"}, "interval_ms": 60000, "max_wait_ms": 120000}, probe)
    eventually(lambda: len(samples) == 1, what="first sample")
    with pytest.raises(TimeoutError):
        handle.result(timeout=0.05)
    assert not handle.done()
    handle.wake()
    eventually(lambda: len(samples) == 2, what="woken sample")
    handle.cancel()
    r = handle.result(timeout=20)
    assert r.outcome == "cancelled" and handle.done()
    assert handle.result() is r


def test_cancel_releases_a_probe_sleeping_in_its_context() -> None:
    entered = threading.Event()
    released: list[bool] = []

    def probe(ctx: waitfor.ProbeContext) -> str:
        entered.set()
        released.append(ctx.wait_cancelled(60))
        return ""

    handle = waitfor.start(spec(until={"matches": "x"}), probe)
    assert entered.wait(20)
    handle.cancel()
    assert handle.result(timeout=20).outcome == "cancelled"
    eventually(lambda: released == [True], what="probe released")


def test_deadline_abandons_a_hung_probe() -> None:
    r = waitfor.wait(
        {"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 200},
        lambda ctx: ctx.wait_cancelled(60) and "",
    )
    assert r.outcome in ("timeout", "probe_error")
    assert r.probe.abandoned == 1


def test_result_json_is_the_engines_and_fits_its_schema() -> None:
    r = waitfor.wait(spec(until={"patterns": ["a", "b"]}, stop=["err"]), lambda: "b\n")
    d = r.to_dict()
    jsonschema.validate(d, waitfor.RESULT_SCHEMA)
    assert d["outcome"] == r.outcome and d["matched_index"] == r.matched_index == 1
    assert d["tail"] == {"lines": list(r.tail.lines), "truncated": r.tail.truncated}
    d["outcome"] = "changed"
    assert r.to_dict()["outcome"] == "matched"


def test_stop_marker_wins() -> None:
    r = waitfor.wait(spec(until={"matches": "ok"}, stop=["FAILED"]), lambda: "ok FAILED")
    assert (r.outcome, r.matched_index) == ("stopped", 0)


def test_async_probe_refused_by_blocking_wait() -> None:
    async def probe() -> str:
        return ""

    with pytest.raises(TypeError, match="wait_async"):
        waitfor.wait(spec(until={"matches": "x"}), probe)
    with pytest.raises(TypeError, match="callable"):
        waitfor.wait(spec(until={"matches": "x"}), "not callable")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ({"output_cap": -1}, ValueError),
        ({"output_cap": 0}, ValueError),
        ({"output_cap": 2**64}, ValueError),
        ({"output_cap": True}, TypeError),
        ({"output_cap": 1.5}, TypeError),
        ({"max_wait_ceiling": math.nan}, ValueError),
        ({"max_wait_ceiling": -1}, ValueError),
        ({"max_wait_ceiling": math.inf}, ValueError),
        ({"max_wait_ceiling": 1e300}, ValueError),
        ({"max_wait_ceiling": 10**400}, ValueError),
        ({"max_wait_ceiling": True}, TypeError),
        ({"max_wait_ceiling": "5"}, TypeError),
    ],
)
def test_a_policy_out_of_range_is_refused_naming_its_field(given: dict[str, Any], error: type[Exception]) -> None:
    field = next(iter(given))
    with pytest.raises(error, match=f"^{field} must be"):
        waitfor.Policy(**given)
    if field == "max_wait_ceiling":
        with pytest.raises(error, match=f"^{field} must be"):
            waitfor.call_tool("ouro/wait", {"path": "/x"}, max_wait_ceiling=given[field])


def test_json_text_with_a_lone_surrogate_is_a_spec_error() -> None:
    """As the same spec given as a dict is: SpecError, not UnicodeEncodeError."""
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.wait('{"until": {"matches": "\udcff"}}', lambda: "")
    assert caught.value.rule == "invalid_json", caught.value
    with pytest.raises(waitfor.SpecError):
        waitfor.call_tool("ouro/wait", '{"path": "\udcff"}')


def test_a_lone_surrogate_escape_in_json_text_names_its_string() -> None:
    """serde_json refuses the escape as text that is not JSON; the error
    names the string it is in, as every other refused value is named."""
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.wait('{"until": {"matches": "\\ud800"}}', lambda: "")
    assert (caught.value.rule, caught.value.field) == ("invalid_json", "until.matches"), caught.value
    assert caught.value.message.startswith("until.matches: not JSON: "), caught.value.message


def test_an_unknown_key_of_a_megabyte_is_named_cut() -> None:
    key = "x" * (1 << 20)
    for spec in ({"until": {"matches": "x"}, key: 1}, json.dumps({"until": {"matches": "x"}, key: 1})):
        with pytest.raises(waitfor.SpecError) as caught:
            waitfor.wait(spec, lambda: "")
        err = caught.value
        assert err.rule == "unknown_field", err.rule
        assert err.field is not None and len(err.field) < 300, len(err.field or "")
        assert err.field.startswith("xxxx") and err.field.endswith("(cut; 1048576 bytes in all)"), err.field
        assert len(err.message) < 600, len(err.message)
