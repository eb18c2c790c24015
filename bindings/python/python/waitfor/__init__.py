"""waitfor: wait for a condition instead of sleeping, in one call.

An agent tool server (an MCP server) that must wait for a build, a prompt
or a rollout calls :func:`wait` (or ``await`` :func:`wait_async`) with a
spec and a probe, and gets a structured :class:`WaitResult` as soon as the
condition holds, a failure marker hits, or the time limit passes. The
engine is Rust; the GIL is released while it runs and taken only to call a
Python probe.

>>> import waitfor
>>> polls = iter(["starting", "starting", "ready"])
>>> result = waitfor.wait(
...     {"until": {"matches": "ready"}, "stop": ["error"], "interval_ms": 10},
...     lambda: next(polls),
... )
>>> result.outcome, result.samples
('matched', 3)

A probe is a plain callable or an ``async def`` (run on the caller's event
loop by :func:`wait_async`), taking no argument or a :class:`ProbeContext`,
and returning ``str``, UTF-8 ``bytes``, a ``dict``/``list`` (structured
output for ``json`` conditions) or an :class:`Observation`. Without a probe
the spec's built-in one runs (``{"probe": {"command": {"argv": [...]}}}``
or ``{"probe": {"file": {"path": ...}}}``), reaching only what the host
grants with ``grants=``:class:`Grants` (nothing by default; see SECURITY.md).

Probes, ``tools`` and progress callbacks run in a fresh copy of the
``contextvars`` context of the call that started the wait, so a server
framework's request state (FastMCP's ``get_context()``) is there.

Every tool profile (``aura/wait_for``, ...) is there for MCP servers:
:func:`tool_definitions` to register, :func:`call_tool` to answer.
"""

from __future__ import annotations

import asyncio
import atexit
import datetime
import functools
import inspect
import json
import math
import numbers
import os
import sys
import types
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, SupportsFloat, Union

from . import _aio, _native
from ._errors import (
    InternalError,
    ProbeError,
    SpecError,
    ToolError,
    WaitforError,
)
from ._native import Observation, ProbeContext, Progress, ToolProgress
from ._result import Outcome, ProbeAccounting, Tail, WaitResult

__all__ = [
    "RESULT_SCHEMA",
    "SPEC_SCHEMA",
    "UNKNOWN_TOOL",
    "Grants",
    "InternalError",
    "Observation",
    "Outcome",
    "Policy",
    "ProbeAccounting",
    "ProbeContext",
    "ProbeError",
    "Progress",
    "SpecError",
    "Tail",
    "ToolError",
    "ToolProgress",
    "WaitHandle",
    "WaitResult",
    "WaitforError",
    "call_tool",
    "call_tool_async",
    "check_arguments",
    "check_spec",
    "find_profile",
    "format_duration",
    "max_tool_calls",
    "parse_duration",
    "parse_pane_id",
    "profiles",
    "record_send_keys",
    "set_max_tool_calls",
    "simulate",
    "start",
    "tool_definition",
    "tool_definitions",
    "validate_wait",
    "wait",
    "wait_async",
]

RESULT_SCHEMA: dict[str, Any] = json.loads(_native.RESULT_SCHEMA)
"""JSON Schema (draft 2020-12) of :meth:`WaitResult.to_dict`, as a dict."""
SPEC_SCHEMA: dict[str, Any] = json.loads(_native.SPEC_SCHEMA)
"""JSON Schema (draft 2020-12) of a spec, as a dict."""
UNKNOWN_TOOL: str = _native.UNKNOWN_TOOL
"""What a ``tools`` callable raises (as any exception's message) for a
tool the server does not have: ``aura/wait_for`` then fails as AURA does,
"probe tool 'NAME' is not exposed by any connected MCP server"."""

Spec = Union[Mapping[str, Any], str]
"""A spec: a dict (or JSON text) following :data:`SPEC_SCHEMA`."""
Answer = Union[str, bytes, Mapping[str, Any], Sequence[Any], Observation]
"""What a probe returns."""
Probe = Union[
    Callable[[], Union[Answer, Awaitable[Answer]]],
    Callable[[ProbeContext], Union[Answer, Awaitable[Answer]]],
]
"""A probe: a callable (plain or ``async def``), with or without a context."""
ProgressCallback = Callable[[Progress], Any]
"""Called with a :class:`Progress`; in ``*_async`` calls on the loop (it may be ``async def``)."""

ToolProgressCallback = Callable[[ToolProgress], Any]
"""A tool call's progress, as its profile reports it: called with a
:class:`ToolProgress` (``progress``, ``total``, ``message``); in
:func:`call_tool_async` on the loop (it may be ``async def``)."""

LogCallback = Callable[[str, str], Any]
"""A tool call's log notice, as its profile sends it: called with
``(level, message)``, ``level`` one of ``"debug"``, ``"info"``,
``"warning"``, ``"error"``; in :func:`call_tool_async` on the loop (it may
be ``async def``)."""
Tools = Callable[[str, dict[str, Any]], Union[Answer, Awaitable[Answer]]]
"""``tools(name, arguments)``: runs another tool of the server for ``wait_for``."""

atexit.register(_native._shutdown)


@dataclass(frozen=True)
class Policy:
    """Limits the host (the tool server), not the agent, sets on a wait.

    ``max_wait_ceiling`` (seconds): a spec's ``max_wait_ms`` above it is
    lowered to it, and the result says so (``clamped``). ``output_cap``
    (bytes): the largest observation; a spec's ``output_cap_bytes`` may
    lower it, never raise it.

    >>> import waitfor
    >>> r = waitfor.wait({"until": {"matches": "x"}, "max_wait_ms": 60000, "interval_ms": 10},
    ...                  lambda: "x", policy=waitfor.Policy(max_wait_ceiling=30))
    >>> (r.effective_max_wait_ms, r.clamped)
    (30000, True)
    """

    max_wait_ceiling: float = 300.0
    output_cap: int = 256 * 1024

    def __post_init__(self) -> None:
        _checked_seconds("max_wait_ceiling", self.max_wait_ceiling)
        cap = self.output_cap
        if isinstance(cap, bool) or not isinstance(cap, int):
            raise TypeError(f"output_cap must be an int (bytes), not {type(cap).__name__}")
        if not 1 <= cap < 2**63:
            raise ValueError(f"output_cap must be a whole number of bytes from 1 to 2**63 - 1, not {cap}")


@dataclass(frozen=True)
class Grants:
    """What built-in probes may reach: a spec's ``command`` and ``file``
    probes, ``aura/wait_for``'s built-in ``run_command`` and ``read_file``
    tools, the profiles' file readers and tmux sockets. The default grants
    nothing: an agent's arguments then run no program and read no file.

    ``commands``: ``"any"``, or the programs that may run, compared with
    ``argv[0]`` exactly as given (``["kubectl"]`` does not allow
    ``/usr/bin/kubectl``; a shell or ``env`` grants whatever it can run).
    ``file_roots``: directories whose regular files (after symbolic links
    are resolved) may be read. ``tmux_socket_paths``: whether a tmux
    ``socket_name`` may be a path instead of a name.

    >>> import waitfor
    >>> waitfor.wait({"probe": {"command": {"argv": ["echo", "ok"]}}, "until": {"matches": "ok"}},
    ...              grants=waitfor.Grants(commands=["echo"])).outcome
    'matched'
    >>> try:
    ...     waitfor.wait({"probe": {"command": {"argv": ["sh", "-c", "id"]}}, "until": {"matches": "uid"}})
    ... except waitfor.SpecError as err:
    ...     print(err.rule)
    not_granted
    """

    commands: Literal["any"] | Sequence[str] = ()
    file_roots: Sequence[str | os.PathLike[str]] = ()
    tmux_socket_paths: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.commands, str):
            if self.commands != "any":
                raise ValueError(
                    f'commands must be "any" or a list of program names, not {self.commands!r}'
                )
        else:
            object.__setattr__(self, "commands", tuple(self.commands))
            for program in self.commands:
                if not isinstance(program, str) or not program:
                    raise TypeError(f"commands holds {program!r}: each must be a program name")
        if isinstance(self.file_roots, (str, os.PathLike)):
            raise TypeError("file_roots must be a list of directories, not one path")
        object.__setattr__(self, "file_roots", tuple(_file_root(i, root) for i, root in enumerate(self.file_roots)))

    @classmethod
    def all(cls) -> Grants:
        """Everything this process can reach: for a user at their own
        shell, never for an agent's arguments."""
        return cls(commands="any", file_roots=("/",), tmux_socket_paths=True)

    def _to_native(self) -> dict[str, Any]:
        commands = self.commands if isinstance(self.commands, str) else list(self.commands)
        return {
            "commands": commands,
            "file_roots": list(self.file_roots),
            "tmux_socket_paths": self.tmux_socket_paths,
        }


def _file_root(index: int, root: object) -> str:
    """Grant ``file_roots[index]`` as a str path: core refuses an empty
    one (it names no directory), said here naming its place."""
    path = os.fspath(root) if isinstance(root, (str, os.PathLike)) else root
    if not isinstance(path, str):
        raise TypeError(
            f"file_roots[{index}] must be a directory path (str or os.PathLike[str]), not {type(path).__name__}"
        )
    if not path:
        raise ValueError(f"file_roots[{index}] must not be empty")
    return path


def _native_grants(grants: Grants | None) -> dict[str, Any] | None:
    if grants is None:
        return None
    if not isinstance(grants, Grants):
        raise TypeError(f"grants must be a waitfor.Grants, not {type(grants).__name__}")
    return grants._to_native()


def _takes_ctx(probe: Callable[..., Any]) -> bool:
    """Whether ``probe`` takes a positional argument (the context).

    A plain function's code object says so at once; ``inspect.signature``,
    which also follows ``__wrapped__`` and ``__signature__``, costs about
    17 µs, a third of a wait's start.
    """
    if type(probe) is types.FunctionType and not (
        "__wrapped__" in probe.__dict__ or "__signature__" in probe.__dict__
    ):
        code = probe.__code__
        return code.co_argcount > 0 or bool(code.co_flags & inspect.CO_VARARGS)
    try:
        parameters = inspect.signature(probe).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        for p in parameters
    )


def _native_start(
    spec: Spec,
    probe: Probe | None,
    *,
    stream: bool,
    policy: Policy | None,
    grants: Grants | None,
    on_progress: Callable[[Progress], Any] | None,
    on_done: Callable[[], None] | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
) -> _native.NativeHandle:
    if probe is not None and not callable(probe):
        raise TypeError(f"probe must be callable, not {type(probe).__name__}")
    policy = policy or Policy()
    return _native.start(
        spec,
        probe,
        takes_ctx=probe is not None and _takes_ctx(probe),
        stream=stream,
        on_progress=on_progress,
        on_done=on_done,
        event_loop=loop,
        inbox=_aio.inbox(loop) if loop is not None and _aio.is_async(probe) else None,
        max_wait_ceiling=policy.max_wait_ceiling,
        output_cap=policy.output_cap,
        grants=_native_grants(grants),
    )


def _refuse_async(func: object, what: str, instead: str) -> None:
    if func is not None and _aio.is_async(func):
        raise TypeError(f"an async {what} runs on an event loop: use {instead}")


class WaitHandle:
    """A running wait, from :func:`start`. Dropping it does not cancel it.

    >>> import waitfor
    >>> handle = waitfor.start({"until": {"matches": "never"}}, lambda: "")
    >>> handle.cancel()
    >>> handle.result(timeout=10).outcome
    'cancelled'
    """

    def __init__(self, native: _native.NativeHandle) -> None:
        self._native = native
        self._result: WaitResult | None = None

    def cancel(self) -> None:
        """Ends the wait with outcome ``cancelled``; a probe call in flight
        is abandoned (its context reads ``cancelled``). Harmless once ended."""
        self._native.cancel()

    def wake(self) -> None:
        """Takes a sample now instead of at the next poll (a push signal)."""
        self._native.wake()

    def done(self) -> bool:
        """Whether the wait has ended."""
        return self._native.done()

    def result(self, timeout: float | None = None) -> WaitResult:
        """Blocks until the wait ends (Ctrl-C interrupts; the wait goes on),
        at most ``timeout`` seconds (then ``TimeoutError``; a number from
        0, ``inf`` for none; NaN, a negative number or a bool raises
        ``ValueError`` or ``TypeError``). It may be called from this wait's
        own ``on_progress``, which then gets the result once the wait ends.
        In a child forked from the process that started the wait (no thread
        there ends it), it raises ``RuntimeError``; so it does at once on an
        engine thread that delivers results (Python code runs there only as
        a finalizer, ``__del__``, of an object the engine lets go), where
        the result could need that very thread, unless ``timeout`` is 0."""
        # Checked even when the result is here, so a bad timeout never
        # passes unnoticed.
        _native.check_timeout("timeout", timeout)
        if self._result is None:
            self._result = WaitResult._from_native(self._native.result(timeout))
        return self._result


def start(
    spec: Spec,
    probe: Probe | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    policy: Policy | None = None,
    grants: Grants | None = None,
    stream: bool = False,
) -> WaitHandle:
    """Starts a wait and returns at once; see :func:`wait` for the arguments.

    ``on_progress`` is called on an engine thread (in the caller's
    context, as the probe is). ``async def`` probes
    need :func:`wait_async`.
    """
    _refuse_async(probe, "probe", "wait_async")
    return WaitHandle(
        _native_start(spec, probe, stream=stream, policy=policy, grants=grants, on_progress=on_progress)
    )


def wait(
    spec: Spec,
    probe: Probe | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    policy: Policy | None = None,
    grants: Grants | None = None,
    stream: bool = False,
) -> WaitResult:
    """Waits until the spec's condition holds, a stop marker hits, or the
    time limit passes; blocks only the calling thread, with the GIL released.

    ``spec`` is a dict (or JSON text) following :data:`SPEC_SCHEMA`:
    ``until`` (``matches``, ``not_matches``, ``patterns``, ``quiet_for_ms``,
    ``any_output``, ``json``, ``exit_code``, ``any``/``all``), ``stop``,
    ``interval_ms`` (>= 10), ``max_wait_ms``, ``view`` (``whole`` or
    ``fresh``), ``on_probe_error``, ... ``probe`` is a callable or ``None``
    for the spec's built-in probe, which reaches only what ``grants``
    allow (nothing by default); ``stream=True`` declares that each call
    returns only new text. Ctrl-C cancels the wait and raises
    ``KeyboardInterrupt``. A bad spec raises :class:`SpecError`.

    >>> import waitfor
    >>> waitfor.wait({"probe": {"command": {"argv": ["echo", "build ok"]}},
    ...               "until": {"patterns": ["ok", "done"]}},
    ...              grants=waitfor.Grants(commands=["echo"])).matched_index
    0
    """
    _refuse_async(probe, "probe", "wait_async")
    native = _native_start(spec, probe, stream=stream, policy=policy, grants=grants, on_progress=on_progress)
    try:
        return WaitResult._from_native(native.result())
    except BaseException:
        native.cancel()
        raise


async def _settled(native: _native.NativeHandle, future: asyncio.Future[None]) -> Any:
    try:
        await future
    except asyncio.CancelledError:
        native.cancel()
        raise
    return native.result(0)


async def wait_async(
    spec: Spec,
    probe: Probe | None = None,
    *,
    on_progress: ProgressCallback | None = None,
    policy: Policy | None = None,
    grants: Grants | None = None,
    stream: bool = False,
) -> WaitResult:
    """:func:`wait` for asyncio: resolves on the running loop, which it
    never blocks. ``async def`` probes and ``on_progress`` callbacks run on
    that loop; while it is busy, a wait's reports replace each other (the
    callback hears the newest) and one still waiting when the wait ends is
    dropped. Cancelling the awaiting task cancels the wait and its probe
    call.

    >>> import asyncio, waitfor
    >>> async def probe() -> str:
    ...     return "ready"
    >>> asyncio.run(waitfor.wait_async({"until": {"matches": "ready"}}, probe)).outcome
    'matched'
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()
    tasks: set[asyncio.Task[Any]] = set()
    native = _native_start(
        spec,
        probe,
        stream=stream,
        policy=policy,
        grants=grants,
        on_progress=_aio.on_loop(on_progress, tasks),
        on_done=functools.partial(_aio.settle, future),
        loop=loop,
    )
    return WaitResult._from_native(await _settled(native, future))


def _seconds(value: float | datetime.timedelta | None) -> float | None:
    seconds = value.total_seconds() if isinstance(value, datetime.timedelta) else value
    return None if seconds is None else _checked_seconds("max_wait_ceiling", seconds)


def _checked_seconds(name: str, value: object) -> float:
    """`value`, a ceiling in seconds: a real number above 0 (no bool, NaN
    or infinity), or the error naming `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    # The engine's durations: whole milliseconds up to 2**53 - 1.
    if not 0 < seconds <= _MAX_SECONDS:
        shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:40]}..."
        raise ValueError(f"{name} must be a number of seconds above 0 and at most {_MAX_SECONDS}, not {shown}")
    return seconds


_MAX_SECONDS = (2**53 - 1) / 1000


def call_tool(
    profile: str,
    arguments: Mapping[str, Any] | str,
    *,
    tools: Tools | None = None,
    grants: Grants | None = None,
    on_progress: ToolProgressCallback | None = None,
    on_log: LogCallback | None = None,
    max_wait_ceiling: float | datetime.timedelta | None = None,
) -> dict[str, Any]:
    """Runs a profile's tool call (``aura/wait_for``, ...; a tool name only
    one profile has, such as ``wait_for``, works too) to its end and gives
    the tool's output, as its ``outputSchema`` describes.

    ``on_progress`` and ``on_log`` hear the profile's notices as its
    original tool sends them (an MCP server forwards them as
    ``notifications/progress`` and ``notifications/message``):
    ``libtmux-mcp/wait_for_text`` reports progress at every poll with the
    message ``"Waiting on pane %N: Xs elapsed, Ys left"`` and logs warnings
    (an invalid regex, before the refusal; a wait that ends without a
    match; a pane history near its limit); the other profiles report the
    seconds elapsed with the time limit as ``total`` and no message. They
    run in the caller's context: during the wait on an engine thread, and
    the notices of its end (libtmux-mcp's last progress and its "No match"
    warning) on the calling thread, before ``call_tool`` returns.

    ``arguments`` are the agent's, passed through. ``tools(name,
    arguments)`` runs the server's other tools for the generic
    ``wait_for`` probe (without it: built-in ``run_command`` and
    ``read_file``, which reach only what ``grants`` allow: nothing by
    default). ``grants`` also bounds the profiles' file readers and tmux
    sockets. ``max_wait_ceiling`` overrides the profile's ceiling.
    Bad arguments raise :class:`SpecError` (code ``invalid_arguments``);
    an unknown profile or a wait that could not finish raises
    :class:`ToolError`.

    >>> import waitfor
    >>> out = waitfor.call_tool("aura/wait_for", {
    ...     "probe": {"tool": "run_command", "args": {"argv": ["echo", "Running"]}},
    ...     "until": {"matches": "Running"}, "poll_sec": 1, "max_wait_sec": 10},
    ...     grants=waitfor.Grants(commands=["echo"]))
    >>> out["reason"]
    'matched'
    """
    _refuse_async(tools, "tools callable", "call_tool_async")
    native = _native.call_tool(
        profile,
        arguments,
        tools=tools,
        on_progress=on_progress,
        on_log=on_log,
        max_wait_ceiling=_seconds(max_wait_ceiling),
        grants=_native_grants(grants),
    )
    try:
        output: dict[str, Any] = native.result()
        return output
    except BaseException:
        native.cancel()
        raise


async def call_tool_async(
    profile: str,
    arguments: Mapping[str, Any] | str,
    *,
    tools: Tools | None = None,
    grants: Grants | None = None,
    on_progress: ToolProgressCallback | None = None,
    on_log: LogCallback | None = None,
    max_wait_ceiling: float | datetime.timedelta | None = None,
) -> dict[str, Any]:
    """:func:`call_tool` for asyncio: ``tools``, ``on_progress`` and
    ``on_log`` may be ``async def`` and run on the running loop (the notices
    of a call, in order, before it returns or raises, unless one takes
    longer than 50 ms: it does not hold the answer); cancelling the
    awaiting task cancels the wait (what an MCP server does on
    ``notifications/cancelled``)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()
    tasks: set[asyncio.Task[Any]] = set()
    try:
        native = _native.call_tool(
            profile,
            arguments,
            tools=tools,
            on_progress=_aio.on_loop(on_progress, tasks),
            on_log=_aio.on_loop(on_log, tasks),
            on_done=functools.partial(_aio.settle, future),
            event_loop=loop,
            max_wait_ceiling=_seconds(max_wait_ceiling),
            grants=_native_grants(grants),
        )
    except Exception:
        await _aio.drain(tasks)
        raise
    output: dict[str, Any] = await _settled(native, future)
    await _aio.drain(tasks)
    return output


def set_max_tool_calls(cap: int) -> int:
    """Sets how many profile calls (:func:`call_tool`,
    :func:`call_tool_async`, the tools :mod:`waitfor.mcp` registers) may be
    in flight in this process at once, 1,024 by default, and gives the cap
    it replaces. A call over the cap raises :class:`ToolError` with code
    ``too_many_calls`` at once; the calls running go on, also when the cap
    is lowered under their number. ``0`` refuses every call. A call's
    place comes back when its wait ends, however it ends (result, error,
    cancel, a failing tool). Plain waits (:func:`wait`, :func:`start`) are
    not counted. A negative or non-integer cap is a :class:`SpecError`
    (``invalid_arguments``, field ``cap``).

    >>> import waitfor
    >>> before = waitfor.set_max_tool_calls(4096)
    >>> waitfor.max_tool_calls()
    4096
    >>> waitfor.set_max_tool_calls(before)
    4096
    """
    if isinstance(cap, bool) or not isinstance(cap, numbers.Integral):
        raise SpecError("cap: must be a whole number of calls", field="cap", rule="wrong_type",
                        code="invalid_arguments")
    if cap < 0:
        raise SpecError("cap: must not be negative", field="cap", rule="out_of_range",
                        code="invalid_arguments")
    # A cap past what the native side counts to means no cap.
    return _native.set_max_tool_calls(min(int(cap), sys.maxsize))


def max_tool_calls() -> int:
    """How many profile calls may be in flight in this process at once
    (see :func:`set_max_tool_calls`).

    >>> import waitfor
    >>> waitfor.max_tool_calls() > 0
    True
    """
    return _native.max_tool_calls()


def profiles() -> list[dict[str, Any]]:
    """Every profile, as ``{"profile": "family/tool", "tool": definition}``
    (the same shape in every language).

    >>> import waitfor
    >>> [p["profile"] for p in waitfor.profiles()][0]
    'aura/wait_for'
    """
    return [{"profile": profile, "tool": tool} for profile, tool in _native.definitions()]


def tool_definitions() -> list[dict[str, Any]]:
    """Every profile's MCP tool definition, in :func:`profiles` order: dicts
    with ``name``, ``title``, ``description``, ``inputSchema``,
    ``outputSchema`` and ``annotations``, ready to register.

    >>> import waitfor
    >>> sorted(waitfor.tool_definitions()[0])
    ['annotations', 'description', 'inputSchema', 'name', 'outputSchema', 'title']
    """
    return [tool for _, tool in _native.definitions()]


def find_profile(name: str) -> dict[str, Any]:
    """A profile, ``{"profile", "tool"}``, by its id (``aura/wait_for``) or
    by a tool name only one profile has (``wait_for``);
    :class:`ToolError` (``unknown_profile``) otherwise.

    >>> import waitfor
    >>> waitfor.find_profile("wait_for")["profile"]
    'aura/wait_for'
    """
    profile, tool = _native.find_profile(name)
    return {"profile": profile, "tool": tool}


def tool_definition(profile: str) -> dict[str, Any]:
    """One profile's MCP tool definition, by profile id or unique tool
    name; :class:`ToolError` if unknown."""
    tool: dict[str, Any] = find_profile(profile)["tool"]
    return tool


def check_spec(spec: Spec) -> None:
    """Refuses, with :class:`SpecError` (``invalid_spec``), a spec that
    :func:`wait` would refuse, without running anything.

    >>> import waitfor
    >>> try:
    ...     waitfor.check_spec({"until": {"matches": "ok"}, "interval_ms": 5})
    ... except waitfor.SpecError as err:
    ...     (err.code, err.field, err.rule)
    ('invalid_spec', 'interval_ms', 'out_of_range')
    """
    _native.check_spec(spec)


def check_arguments(
    profile: str, arguments: Mapping[str, Any] | str, *, grants: Grants | None = None
) -> str:
    """The profile id of a tool call :func:`call_tool` would accept;
    refuses what it would refuse before running (:class:`SpecError`
    ``invalid_arguments``, :class:`ToolError` ``unknown_profile``).

    >>> import waitfor
    >>> waitfor.check_arguments("wait_for", {"probe": {"tool": "t", "args": {}}, "until": {"matches": "x"}})
    'aura/wait_for'
    """
    checked: str = _native.check_arguments(profile, arguments, grants=_native_grants(grants))
    return checked


def parse_pane_id(pane_id: str) -> int:
    """The number of a tmux pane id, ``%`` then digits; :class:`SpecError`
    (``invalid_arguments``, field ``pane_id``, rule ``invalid_pane_id``)
    for anything else.

    >>> import waitfor
    >>> waitfor.parse_pane_id("%12")
    12
    """
    number: int = _native.parse_pane_id(pane_id)
    return number


def simulate(vector: Mapping[str, Any] | str) -> dict[str, Any]:
    """Runs one shared test vector (``tests/vectors/*.json``) on virtual
    time and gives its answer, to compare with the vector's ``expect``."""
    answer: dict[str, Any] = _native.simulate(vector)
    return answer


def parse_duration(text: str) -> int:
    """Milliseconds in a duration written ``"90s"``, ``"2m"``, ``"1h"``,
    ``"500ms"`` or ``"30"`` (seconds); whole numbers only, at most
    2**53 - 1 ms, the longest every language holds exactly (core's one rule
    for every binding). :class:`SpecError` (``invalid_arguments``, field
    ``duration``; rule ``wrong_type``, or ``out_of_range`` when longer) for
    anything else.

    >>> import waitfor
    >>> waitfor.parse_duration("2m")
    120000
    """
    ms: int = _native.parse_duration(text if isinstance(text, str) else None)
    return ms


def _milliseconds(duration: object) -> float | None:
    """A number of milliseconds as the engine takes it (``None``: not a
    number): a ``timedelta`` to the nearest float, any real number (``int``,
    ``float``, ``Fraction``, NumPy's) as a float, an integer too large for a
    float as an infinity of its sign (refused as out of range)."""
    if isinstance(duration, datetime.timedelta):
        return duration / datetime.timedelta(milliseconds=1)
    if isinstance(duration, bool) or not isinstance(duration, numbers.Real):
        return None
    # Any real number compares with 0; typeshed's numbers.Real does not say so.
    number: Any = duration
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def format_duration(duration: SupportsFloat | datetime.timedelta) -> str:
    """The shortest exact text for a duration (milliseconds, an ``int`` or a
    ``float``, or a ``timedelta``) that :func:`parse_duration` reads back,
    by the rule every language follows: a fraction is rounded to the
    nearest millisecond, a half upwards (``1.5`` and
    ``timedelta(microseconds=1500)`` are ``"2ms"``). NaN, a negative value,
    an infinity or more than 2**53 - 1 ms raise :class:`SpecError`
    (``invalid_arguments``, field ``duration``), and so does a value that
    is no number.

    >>> import waitfor
    >>> waitfor.format_duration(90_000)
    '90s'
    >>> waitfor.format_duration(1.5)
    '2ms'
    """
    return _native.format_duration(_milliseconds(duration))


def validate_wait(envelope: Any) -> dict[str, Any]:
    """Checks an Ouro ``wait/1`` envelope (``ouro/wait``'s output): its
    shape, and that a wait that can go on says how to resume and a
    satisfied one carries its events. ``{"ok": bool, "errors": [...]}``,
    each error starting with its field.

    >>> import waitfor
    >>> waitfor.validate_wait(None)
    {'ok': False, 'errors': ['wait: must be an object']}
    """
    validation: dict[str, Any] = _native.validate_wait(envelope)
    return validation


def record_send_keys(
    pane_id: str,
    keys: Sequence[str],
    *,
    socket_name: str | None = None,
    literal: bool = False,
    enter: bool = False,
    grants: Grants | None = None,
) -> None:
    """Records keys this server just sent to tmux pane ``pane_id`` (``%N``)
    with ``send-keys`` (its key arguments; ``literal`` for ``-l``; ``enter``
    when an ``Enter`` followed), so pane waits (the ``wait_for_text``
    profiles) do not take their echo for new output. Records expire on
    their own.

    ``socket_name`` ``None`` or empty is the default socket. Refused with
    :class:`SpecError` (``invalid_arguments``) as the C door refuses it:
    ``socket_name`` as the ``wait_for_text`` profiles refuse it (field
    ``socket_name``: a NUL byte, rule ``contains_nul``; a path unless
    ``grants`` allow tmux socket paths, rule ``not_granted``), then a
    ``pane_id`` not of the form ``%N`` (field ``pane_id``, rule
    ``invalid_pane_id``).

    >>> import waitfor
    >>> waitfor.record_send_keys("%3", ["make test"], socket_name="demo", literal=True, enter=True)
    >>> try:
    ...     waitfor.record_send_keys("%3", ["ls"], socket_name="/tmp/tmux-0/default")
    ... except waitfor.SpecError as err:
    ...     (err.field, err.rule)
    ('socket_name', 'not_granted')
    """
    if isinstance(keys, str):
        raise TypeError("keys is a list of send-keys arguments, not a str")
    if socket_name is not None and not isinstance(socket_name, str):
        raise TypeError(f"socket_name must be a str or None, not {type(socket_name).__name__}")
    _native.record_send_keys(
        socket_name, pane_id, list(keys), literal=literal, enter=enter, grants=_native_grants(grants)
    )
