"""The shared test vectors (tests/vectors/*.json, see its README), run
through the package's public API: each vector's whole answer, as canonical
JSON, must equal its ``answer`` byte for byte."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from conftest import load_vectors

import waitfor


def _canonical_numbers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canonical_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical_numbers(v) for v in value]
    if isinstance(value, float) and value.is_integer() and math.fabs(value) < 2**53:
        return int(value)
    return value


def canonical(value: Any) -> str:
    """No whitespace, sorted keys, whole numbers as integers."""
    return json.dumps(_canonical_numbers(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _error(err: waitfor.WaitforError) -> dict[str, Any]:
    return {"error": {"code": err.code, "field": err.field, "rule": err.rule, "message": err.message}}


def answer(vector: dict[str, Any]) -> dict[str, Any]:
    """The vector's whole answer, through the public API its kind names."""
    kind = vector.get("kind")
    try:
        if kind is None:
            return waitfor.simulate(vector)
        if kind == "spec":
            waitfor.check_spec(json.dumps(vector["spec"]))
            return {"ok": True}
        if kind == "arguments":
            return {"ok": waitfor.check_arguments(vector["tool"], json.dumps(vector["arguments"]))}
        if kind == "profile":
            found = waitfor.find_profile(vector["lookup"])
            return {"ok": {"profile": found["profile"], "tool": found["tool"]["name"]}}
        if kind == "pane_id":
            return {"ok": waitfor.parse_pane_id(vector["pane_id"])}
        if kind == "envelope":
            return waitfor.validate_wait(vector["envelope"])
        if kind == "duration":
            if "parse" in vector:
                return {"ok": waitfor.parse_duration(vector["parse"])}
            # "NaN", "Infinity" and "-Infinity" stand for the numbers JSON cannot hold.
            ms = vector["format"]
            return {"ok": waitfor.format_duration(float(ms) if isinstance(ms, str) else ms)}
    except waitfor.WaitforError as err:
        return _error(err)
    raise AssertionError(f"unknown vector kind {kind}")


VECTORS = load_vectors()


def test_there_are_at_least_250_vectors() -> None:
    assert len(VECTORS) >= 250


@pytest.mark.parametrize(("name", "vector"), VECTORS, ids=[n for n, _ in VECTORS])
def test_vector_gives_its_whole_answer(name: str, vector: dict[str, Any]) -> None:
    assert canonical(answer(vector)) == canonical(vector["answer"])


def test_canonical_json_writes_whole_numbers_as_integers() -> None:
    assert canonical({"b": [2.0, 0.5, -3], "a": {"y": "\n", "x": None}}) == '{"a":{"x":null,"y":"\\n"},"b":[2,0.5,-3]}'


def test_errors_have_one_shape() -> None:
    with pytest.raises(waitfor.ToolError) as caught:
        waitfor.find_profile("wait_for_text")
    assert (caught.value.code, caught.value.field, caught.value.rule) == ("unknown_profile", None, None)
    with pytest.raises(waitfor.SpecError) as spec:
        waitfor.record_send_keys("3", ["x"])
    assert (spec.value.code, spec.value.field, spec.value.rule) == ("invalid_arguments", "pane_id", "invalid_pane_id")
