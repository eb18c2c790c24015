"""Built-in probes reach only what the host grants: nothing by default,
for the spec API and every profile call, sync and async."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

import waitfor

SHELL = {"probe": {"command": {"argv": ["sh", "-c", "id"]}}, "until": {"matches": "uid"}}
SHADOW = {"probe": {"file": {"path": "/etc/shadow"}}, "until": {"matches": "root"}}


def aura(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"probe": {"tool": tool, "args": args}, "until": {"matches": "uid|root|ready"}, "poll_sec": 1}


@pytest.mark.parametrize("spec", [SHELL, SHADOW], ids=["sh -c id", "/etc/shadow"])
def test_the_spec_api_grants_nothing_by_default(spec: dict[str, Any]) -> None:
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.wait(spec)
    assert (caught.value.rule, caught.value.code) == ("not_granted", "invalid_spec")
    with pytest.raises(waitfor.SpecError):
        waitfor.start(spec)
    with pytest.raises(waitfor.SpecError):
        asyncio.run(waitfor.wait_async(spec))


@pytest.mark.parametrize(
    "arguments",
    [aura("run_command", {"argv": ["sh", "-c", "id"]}), aura("read_file", {"path": "/etc/shadow"})],
    ids=["sh -c id", "/etc/shadow"],
)
def test_aura_built_in_tools_are_off_by_default(arguments: dict[str, Any]) -> None:
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.call_tool("aura/wait_for", arguments)
    err = caught.value
    assert (err.rule, err.code) == ("not_granted", "invalid_arguments")
    assert "has not granted" in str(err)
    with pytest.raises(waitfor.SpecError):
        asyncio.run(waitfor.call_tool_async("aura/wait_for", arguments))


def test_a_grant_opens_exactly_what_it_names(tmp_path: Path) -> None:
    (tmp_path / "status").write_text("service ready\n")
    grants = waitfor.Grants(commands=["echo"], file_roots=[tmp_path])
    out = waitfor.call_tool("aura/wait_for", aura("read_file", {"path": str(tmp_path / "status")}), grants=grants)
    assert out["last_observation"] == "service ready\n"
    out = waitfor.call_tool("aura/wait_for", aura("run_command", {"argv": ["echo", "ready"]}), grants=grants)
    assert out["reason"] == "matched"
    for arguments in (aura("run_command", {"argv": ["sh", "-c", "id"]}), aura("read_file", {"path": "/etc/shadow"})):
        with pytest.raises(waitfor.SpecError) as caught:
            waitfor.call_tool("aura/wait_for", arguments, grants=grants)
        assert caught.value.rule == "not_granted"
    assert waitfor.wait(
        {"probe": {"command": {"argv": ["echo", "ready"]}}, "until": {"matches": "ready"}}, grants=grants
    ).outcome == "matched"


def test_files_that_are_not_regular_are_refused_with_their_kind(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    grants = waitfor.Grants(file_roots=[tmp_path, "/dev"])
    for path, kind in ((tmp_path / "pipe", "a FIFO"), (tmp_path, "a directory"), ("/dev/urandom", "a device")):
        with pytest.raises(waitfor.SpecError, match=kind):
            waitfor.call_tool("aura/wait_for", aura("read_file", {"path": str(path)}), grants=grants)


def test_grants_check_their_fields() -> None:
    with pytest.raises(ValueError, match="any"):
        waitfor.Grants(commands="sh")
    with pytest.raises(TypeError):
        waitfor.Grants(file_roots="/tmp")
    with pytest.raises(TypeError):
        waitfor.Grants(commands=[""])
    with pytest.raises(TypeError, match="waitfor.Grants"):
        waitfor.wait(SHELL, grants={"commands": "any"})  # type: ignore[arg-type]
    assert waitfor.Grants().commands == () and waitfor.Grants().file_roots == ()
    # An empty root names no directory: refused by core, said naming its place.
    with pytest.raises(ValueError, match=r"^file_roots\[1\] must not be empty$"):
        waitfor.Grants(file_roots=["/tmp", ""])
    with pytest.raises(TypeError, match=r"^file_roots\[0\] must be a directory path .*, not bytes$"):
        waitfor.Grants(file_roots=[b"/tmp"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^file_roots\[0\] must be a directory path .*, not int$"):
        waitfor.Grants(file_roots=[5])  # type: ignore[list-item]
    assert waitfor.Grants(file_roots=[Path("/tmp")]).file_roots == ("/tmp",)
    everything = waitfor.Grants.all()
    assert waitfor.wait(SHELL, grants=everything).outcome == "matched"
