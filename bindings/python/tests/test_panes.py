"""The pane profiles on a real tmux server (private: its own TMUX_TMPDIR),
and echo recording."""

from __future__ import annotations

import shutil
import subprocess
import threading
from typing import Any

import jsonschema
import pytest

import waitfor

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def send(pane_id: str, keys: str, *, enter: bool = True) -> None:
    subprocess.run(["tmux", "send-keys", "-t", pane_id, "-l", keys], check=True)
    if enter:
        subprocess.run(["tmux", "send-keys", "-t", pane_id, "Enter"], check=True)


def wait_then(profile: str, args: dict[str, Any], action: Any) -> dict[str, Any]:
    """Runs the profile call in a thread; `action` runs once the wait has
    taken samples (so what it does is fresh output)."""
    sampled = threading.Event()
    out: dict[str, Any] = {}

    def run() -> None:
        out.update(waitfor.call_tool(profile, args, on_progress=lambda p: sampled.set()))

    thread = threading.Thread(target=run)
    thread.start()
    assert sampled.wait(30), "the wait never reported progress"
    action()
    thread.join(60)
    jsonschema.validate(out, waitfor.tool_definition(profile)["outputSchema"])
    return out


PANE_ARGS = {
    "libtmux-mcp/wait_for_text": lambda pane, text: {"pane_id": pane, "patterns": [text], "timeout": 20, "interval": 0.05},
    "libtmux-cxx/wait_for_text": lambda pane, text: {"target": pane, "text": text, "timeout_ms": 20000},
}


@pytest.mark.parametrize("profile", sorted(PANE_ARGS))
def test_pane_profile_sees_fresh_output(profile: str, pane: str) -> None:
    assert profile in {p["profile"] for p in waitfor.profiles()}
    out = wait_then(profile, PANE_ARGS[profile](pane, "MARK_A"), lambda: send(pane, "printf 'MARK_%s\\n' A"))
    assert out.get("found", out.get("matched")) is True, out


def test_recorded_keys_are_not_taken_for_output(pane: str) -> None:
    # libtmux-cxx discounts the keys its host recorded (libtmux-mcp does not).
    args = {"target": pane, "text": "TYPED_ONLY", "timeout_ms": 2000}
    # Typed by someone else: the echo is new text on the pane, so it matches.
    unrecorded = wait_then("libtmux-cxx/wait_for_text", args, lambda: send(pane, "TYPED_ONLY", enter=False))
    send(pane, "\x15", enter=False)  # C-u: clear the line

    def typed_by_us() -> None:
        waitfor.record_send_keys(pane, ["TYPED_ONLY"], literal=True)
        send(pane, "TYPED_ONLY", enter=False)

    recorded = wait_then("libtmux-cxx/wait_for_text", args, typed_by_us)
    assert unrecorded["matched"] is True, unrecorded
    assert recorded["matched"] is False and recorded["mode"].endswith("-unconfirmed"), recorded


def test_record_send_keys_refuses_a_str() -> None:
    with pytest.raises(TypeError):
        waitfor.record_send_keys("%1", "ls")  # type: ignore[arg-type]


@pytest.mark.parametrize("pane_id", ["1", "%", "%1 ", "%-1", "%4294967296"])
def test_record_send_keys_refuses_a_pane_id_as_the_c_door(pane_id: str) -> None:
    """Core checks a record as the C door does: the socket, then the pane id."""
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.record_send_keys(pane_id, ["ls"])
    with pytest.raises(waitfor.SpecError) as parsed:
        waitfor.parse_pane_id(pane_id)
    err, want = caught.value, parsed.value
    assert (err.code, err.field, err.rule, str(err)) == (want.code, "pane_id", "invalid_pane_id", str(want))
    with pytest.raises(waitfor.SpecError) as both:
        waitfor.record_send_keys(pane_id, ["ls"], socket_name="/tmp/x")
    assert both.value.field == "socket_name", both.value


@pytest.mark.parametrize(
    ("socket_name", "rule"),
    [
        ("/tmp/tmux-0/default", "not_granted"),
        ("../../other.sock", "not_granted"),
        ("..", "not_granted"),
        ("a\0b", "contains_nul"),
    ],
)
def test_record_send_keys_refuses_the_socket_names_the_profiles_refuse(socket_name: str, rule: str) -> None:
    """A path or a NUL byte: refused as ``wait_for_text``
    refuses them (it ran ``tmux -S PATH`` to ask that server who it is)."""
    with pytest.raises(waitfor.SpecError) as caught:
        waitfor.record_send_keys("%1", ["ls"], socket_name=socket_name)
    err = caught.value
    assert (err.code, err.field, err.rule) == ("invalid_arguments", "socket_name", rule), err
    with pytest.raises(waitfor.SpecError) as profile:
        waitfor.check_arguments(
            "libtmux-mcp/wait_for_text", {"pane_id": "%1", "patterns": ["x"], "socket_name": socket_name}
        )
    assert (profile.value.field, profile.value.rule) == (err.field, err.rule), profile.value


def test_an_empty_socket_name_is_the_default_socket_as_in_c() -> None:
    """As libtmux takes it, and as C and C++ always did: no refusal, with
    grants or without, in a record and in a tool call."""
    for grants in (None, waitfor.Grants(tmux_socket_paths=True)):
        waitfor.record_send_keys("%1", ["ls"], socket_name="", grants=grants)
    args = {"pane_id": "%1", "patterns": ["x"], "socket_name": ""}
    assert waitfor.check_arguments("libtmux-mcp/wait_for_text", args) == "libtmux-mcp/wait_for_text"


def test_record_send_keys_takes_a_socket_path_the_grants_allow() -> None:
    allowed = waitfor.Grants(tmux_socket_paths=True)
    waitfor.record_send_keys("%1", ["ls"], socket_name="/nonexistent/waitfor-test.sock", grants=allowed)
    with pytest.raises(TypeError, match="^socket_name must be a str or None, not bytes$"):
        waitfor.record_send_keys("%1", ["ls"], socket_name=b"work")  # type: ignore[arg-type]


def test_a_slow_on_log_at_a_calls_end_holds_no_other_wait(pane: str) -> None:
    """A tool call's notices at its end (libtmux-mcp's last progress and its
    "No match" warning) reach a synchronous call_tool's callbacks on the
    calling thread, before its answer: an on_log that blocks there holds
    that call only, never the engine thread that ends other waits."""
    blocking, release = threading.Event(), threading.Event()
    threads: set[str] = set()

    def on_log(level: str, message: str) -> None:
        threads.add(threading.current_thread().name)
        if "No match" in message:
            blocking.set()
            release.wait(60)

    def run() -> None:
        waitfor.call_tool("libtmux-mcp/wait_for_text", {"pane_id": pane, "patterns": ["never-printed"], "timeout": 0.5},
                          on_log=on_log)

    caller = threading.Thread(target=run, name="the caller")
    caller.start()
    try:
        assert blocking.wait(30), "no 'No match' warning"
        # Waits ending while that callback blocks, their ids on every
        # delivery thread, answer at their deadlines.
        spec = {"until": {"matches": "never"}, "max_wait_ms": 200, "interval_ms": 50}
        handles = [waitfor.start(spec, lambda: "no") for _ in range(4)]
        assert [h.result(timeout=20).outcome for h in handles] == ["timeout"] * 4
    finally:
        release.set()
        caller.join(60)
    assert threads == {"the caller"}
