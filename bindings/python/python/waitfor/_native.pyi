"""Type stubs of the native module (Rust, pyo3)."""

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, final

RESULT_SCHEMA: str
UNKNOWN_TOOL: str
MAX_ERROR_BYTES: int
SPEC_SCHEMA: str

@final
class Observation:
    """One observation of a probe: text, structured json, exit code, gone."""

    def __init__(
        self,
        text: str | None = None,
        *,
        json: Any = None,
        exit_code: int | None = None,
        gone: bool = False,
    ) -> None: ...
    @property
    def text(self) -> str: ...
    @property
    def json(self) -> Any: ...
    @property
    def exit_code(self) -> int | None: ...
    @property
    def gone(self) -> bool: ...

@final
class ProbeContext:
    """What a probe call is told about itself."""

    @property
    def sample(self) -> int: ...
    @property
    def elapsed(self) -> float: ...
    @property
    def budget(self) -> float: ...
    @property
    def cancelled(self) -> bool: ...
    def wait_cancelled(self, timeout: float) -> bool: ...

@final
class Progress:
    """Progress of a running wait."""

    @property
    def samples(self) -> int: ...
    @property
    def elapsed_ms(self) -> int: ...
    @property
    def last_line(self) -> str | None: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class ToolProgress:
    """A tool call's progress, as its profile reports it."""

    @property
    def progress(self) -> float: ...
    @property
    def total(self) -> float | None: ...
    @property
    def message(self) -> str | None: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class LoopInbox:
    """Where the engine queues one event loop's probe calls."""

    def fileno(self) -> int: ...
    def drain(self) -> None: ...

@final
class NativeHandle:
    def cancel(self) -> None: ...
    def wake(self) -> None: ...
    def done(self) -> bool: ...
    def result(self, timeout: float | None = None) -> Any: ...

def start(
    spec: Mapping[str, Any] | str,
    probe: Callable[..., Any] | None = None,
    *,
    takes_ctx: bool = False,
    stream: bool = False,
    on_progress: Callable[[Progress], Any] | None = None,
    on_done: Callable[[], None] | None = None,
    event_loop: asyncio.AbstractEventLoop | None = None,
    inbox: LoopInbox | None = None,
    max_wait_ceiling: float | None = None,
    output_cap: int | None = None,
    grants: Mapping[str, Any] | None = None,
) -> NativeHandle: ...
def call_tool(
    profile: str,
    arguments: Mapping[str, Any] | str,
    *,
    tools: Callable[..., Any] | None = None,
    on_progress: Callable[[ToolProgress], Any] | None = None,
    on_log: Callable[[str, str], Any] | None = None,
    on_done: Callable[[], None] | None = None,
    event_loop: asyncio.AbstractEventLoop | None = None,
    max_wait_ceiling: float | None = None,
    grants: Mapping[str, Any] | None = None,
) -> NativeHandle: ...
def definitions() -> list[tuple[str, dict[str, Any]]]: ...
def simulate(vector: Mapping[str, Any] | str) -> dict[str, Any]: ...
def check_spec(spec: Mapping[str, Any] | str) -> None: ...
def check_arguments(
    profile: str, arguments: Mapping[str, Any] | str, *, grants: dict[str, Any] | None = ...
) -> str: ...
def find_profile(name: str) -> tuple[str, dict[str, Any]]: ...
def parse_pane_id(pane_id: str) -> int: ...
def validate_wait(envelope: Any) -> dict[str, Any]: ...
def parse_duration(text: str | None) -> int: ...
def format_duration(ms: float | None) -> str: ...
def record_send_keys(
    socket_name: str | None,
    pane_id: str,
    keys: list[str],
    *,
    literal: bool = False,
    enter: bool = False,
    grants: Mapping[str, Any] | None = None,
) -> None: ...
def check_timeout(name: str, timeout: float | None) -> None: ...
def _shutdown() -> None: ...
