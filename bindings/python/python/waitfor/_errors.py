"""The exceptions of waitfor: a small hierarchy with a stable ``code``.

A normal ending of a wait (a timeout, a stop marker, a probe that kept
failing) is a result, not an exception. Exceptions are for input that was
refused before any probe call (:class:`SpecError`), a profile call that
could not give its tool's output (:class:`ToolError`), a result whose
probe failure the caller chose to raise (:class:`ProbeError`), and bugs
(:class:`InternalError`).
"""

from __future__ import annotations


class WaitforError(Exception):
    """Base of every waitfor exception.

    ``code`` is stable and made for branching on; the message is for
    people. Every exception has the shape core gives errors in every
    language: ``code``, ``field`` and ``rule`` (``None`` unless the error
    is about one field of the input) and ``message``. The codes:
    ``invalid_spec`` (a wait spec), ``invalid_arguments`` (a tool call's
    or a function's arguments), ``unknown_profile``, ``runtime``,
    ``probe_error``, ``invalid_wait``, ``bad_cursor``, ``source_replaced``,
    ``io``, ``internal``, ``too_many_calls``.

    >>> try:
    ...     raise ToolError("no such profile", code="unknown_profile")
    ... except WaitforError as err:
    ...     err.code
    'unknown_profile'
    """

    code: str = "error"
    field: str | None = None
    rule: str | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.field = field
        self.rule = rule


class SpecError(WaitforError, ValueError):
    """A spec or tool input was refused before any probe call.

    ``field`` is the path of the offending field (``until.matches``; ``""``
    for the input as a whole) and ``rule`` the stable name of the broken
    rule (``invalid_regex``, ``unknown_field``, ``not_granted``, ...).
    ``code`` is ``invalid_spec`` for a wait spec (:func:`waitfor.wait`,
    :func:`waitfor.check_spec`), ``invalid_arguments`` for a profile's
    arguments and other function arguments (a pane id, an
    :class:`~waitfor.Observation`'s ``json``).

    >>> import waitfor
    >>> try:
    ...     waitfor.wait({"regex": True, "until": {"matches": "("}}, lambda: "")
    ... except waitfor.SpecError as err:
    ...     (err.field, err.rule)
    ('until.matches', 'invalid_regex')
    """

    code = "invalid_spec"
    field: str
    rule: str

    def __init__(
        self,
        message: str,
        *,
        field: str = "",
        rule: str = "",
        code: str | None = None,
    ) -> None:
        super().__init__(message, code=code, field=field, rule=rule)


class ProbeError(WaitforError):
    """The probe failed beyond the spec's error policy.

    Raised by :meth:`waitfor.WaitResult.raise_for_probe_error`; the probe's
    own last exception, when it was a Python probe, is ``__cause__``.
    """

    code = "probe_error"


class ToolError(WaitforError):
    """A profile call gave no tool output.

    ``code`` is ``unknown_profile`` (no profile has that id or tool
    name), ``runtime`` (the wait could not finish normally: an MCP server
    returns it as a tool result with ``isError: true``) or
    ``too_many_calls`` (the process already runs as many profile calls as
    :func:`waitfor.set_max_tool_calls` allows; refused at once, and an MCP
    server returns it as ``isError`` too). A failing Python tool caller's
    exception is ``__cause__``.
    """

    code = "runtime"


class InternalError(WaitforError):
    """A bug in waitfor; please report it."""

    code = "internal"
