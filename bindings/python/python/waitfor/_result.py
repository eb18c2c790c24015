"""The result of a wait as typed Python objects."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

from ._errors import ProbeError

Outcome = Literal[
    "matched",
    "settled",
    "any_output",
    "stopped",
    "gone",
    "timeout",
    "cancelled",
    "probe_error",
    "error",
]


@dataclass(frozen=True)
class Tail:
    """A bounded tail of the last observation."""

    lines: tuple[str, ...]
    """The last lines, oldest first."""
    truncated: bool
    """Whether lines or bytes were left out at the front."""


@dataclass(frozen=True)
class ProbeAccounting:
    """How the probe fared."""

    errors: int
    """Probe calls that failed."""
    abandoned: int
    """Probe calls still running at the deadline or cancel."""
    last_error: str | None
    """The last failure's message."""


@dataclass(frozen=True)
class WaitResult:
    """Everything a wait reports. A timeout is a normal ending, not an error.

    The attributes are the engine's JSON fields; :meth:`to_dict` gives that
    JSON exactly.

    >>> import waitfor
    >>> r = waitfor.wait({"until": {"matches": "ready"}}, lambda: "ready")
    >>> (r.outcome, r.samples, r.ok)
    ('matched', 1, True)
    >>> r.to_dict()["outcome"]
    'matched'
    """

    outcome: Outcome
    """How the wait ended."""
    matched_index: int | None
    """Index into the pattern list (or ``stop`` when stopped) that hit."""
    matched_lines: tuple[str, ...]
    """The lines that matched."""
    matched_at_entry: bool
    """A success pattern matched what was there at entry and nothing new did."""
    saw_new_output: bool
    """Anything new appeared since the wait began."""
    tail: Tail
    """The end of the last observation."""
    exit_code: int | None
    """Exit status of the last command the probe ran."""
    samples: int
    """Probe calls that returned."""
    elapsed_ms: int
    """Time from the start to the end of the wait."""
    effective_max_wait_ms: int
    """The time limit enforced, after the host's ceiling."""
    clamped: bool
    """Whether the ceiling lowered the requested limit."""
    probe: ProbeAccounting
    """Probe failures and abandoned calls."""
    error: str | None
    """Why the wait ended with ``error`` or ``probe_error``."""
    resume: str | None
    """Where a later wait continues from (pass it as the spec's ``resume``)."""
    woken: bool
    """Whether the deciding sample came from a wake-up rather than the timer."""
    notices: tuple[str, ...]
    """What the wait's probe says of its ending, such as a tmux wait that
    got fewer samples than planned because this process's other waits on
    that server held every turn, or a command wait whose commands waited
    for a turn to start while this process's other commands held every
    turn; usually empty (then not in the JSON form)."""
    last_observation: str = field(repr=False)
    """The last observation's whole text (not in the JSON form)."""
    probe_exception: BaseException | None = field(repr=False, compare=False)
    """The last exception the Python probe raised, if any."""
    _json: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def _from_native(cls, native: tuple[dict[str, Any], str, BaseException | None]) -> WaitResult:
        d, last_observation, exception = native
        return cls(
            outcome=d["outcome"],
            matched_index=d["matched_index"],
            matched_lines=tuple(d["matched_lines"]),
            matched_at_entry=d["matched_at_entry"],
            saw_new_output=d["saw_new_output"],
            tail=Tail(tuple(d["tail"]["lines"]), d["tail"]["truncated"]),
            exit_code=d["exit_code"],
            samples=d["samples"],
            elapsed_ms=d["elapsed_ms"],
            effective_max_wait_ms=d["effective_max_wait_ms"],
            clamped=d["clamped"],
            probe=ProbeAccounting(**d["probe"]),
            error=d["error"],
            resume=d["resume"],
            woken=d["woken"],
            notices=tuple(d.get("notices", ())),
            last_observation=last_observation,
            probe_exception=exception,
            _json=d,
        )

    @property
    def ok(self) -> bool:
        """Whether a success condition held (matched, settled, any_output)."""
        return self.outcome in ("matched", "settled", "any_output")

    def to_dict(self) -> dict[str, Any]:
        """The engine's JSON form (see ``waitfor.RESULT_SCHEMA``), a fresh copy."""
        return copy.deepcopy(self._json)

    def raise_for_probe_error(self) -> WaitResult:
        """Raises :class:`ProbeError` (its ``__cause__`` the probe's own
        exception) if the wait ended with ``probe_error``; else returns self.

        >>> import waitfor
        >>> def probe() -> str:
        ...     raise ConnectionError("refused")
        >>> try:
        ...     waitfor.wait({"until": {"matches": "x"}}, probe).raise_for_probe_error()
        ... except waitfor.ProbeError as err:
        ...     type(err.__cause__).__name__
        'ConnectionError'
        """
        if self.outcome == "probe_error":
            raise ProbeError(self.error or "the probe failed") from self.probe_exception
        return self
