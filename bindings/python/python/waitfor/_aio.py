"""asyncio glue for the engine's threads."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from . import _native

_inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _native.LoopInbox] = (
    weakref.WeakKeyDictionary()
)
# Loops of several threads look up and let go of inboxes at once.
_inboxes_lock = threading.Lock()


def _unlock_in_child() -> None:
    # A thread that held the lock at a fork is not in the child.
    global _inboxes_lock
    _inboxes_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unlock_in_child)


def inbox(loop: asyncio.AbstractEventLoop) -> _native.LoopInbox:
    """Where the engine queues ``loop``'s coroutine probe calls: one per
    loop, made on first use, which ``loop`` drains when its file
    descriptor is readable (run on ``loop``). Closed loops' inboxes are let
    go then, with their descriptors."""
    with _inboxes_lock:
        found = _inboxes.get(loop)
        if found is None:
            for closed in [other for other in _inboxes if other.is_closed()]:
                del _inboxes[closed]
            found = _native.LoopInbox()
            loop.add_reader(found.fileno(), found.drain)
            _inboxes[loop] = found
        return found


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def submit(
    awaitable: Awaitable[Any], loop: asyncio.AbstractEventLoop
) -> concurrent.futures.Future[Any]:
    """Runs ``awaitable`` on ``loop`` from another thread (the engine's
    worker calling a tools callable, or a plain probe that returned an
    awaitable), in the current context: the
    scheduled callback runs in a copy of it and the task it makes copies
    that (the engine calls this inside the caller's context)."""
    coro = awaitable if asyncio.iscoroutine(awaitable) else _await(awaitable)
    return asyncio.run_coroutine_threadsafe(coro, loop)


def settle(future: asyncio.Future[None]) -> None:
    """Resolves the future an ``*_async`` call awaits (run on its loop)."""
    if not future.done():
        future.set_result(None)


def on_loop(
    callback: Callable[..., Any] | None, tasks: set[asyncio.Task[Any]]
) -> Callable[..., None] | None:
    """A progress (or log) callback run on the loop: a coroutine it
    returns becomes a task, kept in ``tasks`` until it ends."""
    if callback is None:
        return None

    def report(*args: Any) -> None:
        answer = callback(*args)
        if inspect.isawaitable(answer):
            task = asyncio.ensure_future(answer)
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    return report


DRAIN_GRACE = 0.05
"""The longest a call's answer waits for its callbacks' tasks, in seconds:
a notice is sent in a moment, and one that takes longer (an ``async def``
that sleeps, a client that reads slowly) must not hold the answer past the
call's deadline."""


async def drain(tasks: set[asyncio.Task[Any]]) -> None:
    """Waits, at most :data:`DRAIN_GRACE`, for the callbacks' tasks still
    running (a call's last notices), so that they are sent before its
    answer; one still running then goes on after it. Their errors are
    theirs (the loop reports them)."""
    if tasks:
        await asyncio.wait(set(tasks), timeout=DRAIN_GRACE)


def is_async(func: Any) -> bool:
    """Whether calling ``func`` gives a coroutine (``async def``, also as
    ``__call__``)."""
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 (its method, not callability)
    )
