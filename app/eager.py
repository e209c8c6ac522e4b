"""Eager starts: a coroutine's first step runs at once, in the caller's turn of the loop, and a task is made
for it only if it has to wait (what asyncio's eager tasks do from Python 3.12, done here for 3.11).

Most requests are answered without waiting for anything (a list, a read, an async tool that computes):
started eagerly they cost no task, no scheduling and no loop turn for the caller that waits on them. One
that waits goes on in a task, which the caller waits on or cancels as usual.

The first step runs in a copy of the caller's context, and the task continues in that same copy (so a
context variable set before the first wait and reset after it is reset where it was set). While it runs,
``asyncio.current_task()`` is still the caller's task: code that keeps the current task to cancel it later
(``ServerSession.begin``) is told the task that goes on (``ServerSession.follow``).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Finished(Generic[T]):
    """A coroutine that ended in its first step: its result, or the exception it raised."""

    __slots__ = ("error", "value")

    def __init__(self, value: T | None, error: BaseException | None = None) -> None:
        self.value = value
        self.error = error

    def result(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


def start(coro: Coroutine[Any, Any, T]) -> Finished[T] | asyncio.Task[T]:
    """Run ``coro``'s first step now: ``Finished`` if it ended there, else the task it goes on in."""
    context = contextvars.copy_context()
    try:
        waiting = context.run(coro.send, None)
    except StopIteration as stop:
        return Finished(stop.value)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # CancelledError included: as a task's first step would end
        return Finished(None, exc)
    return asyncio.get_running_loop().create_task(_GoOn(coro, waiting), context=context)


class _GoOn(Coroutine[Any, Any, T]):
    """A started coroutine as the task that goes on with it: its first step hands the task what the
    coroutine waits on; from then on what the task sends and throws (a cancellation, even one before the
    task's first step) goes to the coroutine."""

    __slots__ = ("coro", "waiting")

    def __init__(self, coro: Coroutine[Any, Any, T], waiting: Any) -> None:
        self.coro = coro
        self.waiting: Any = waiting

    def send(self, value: Any) -> Any:
        waiting = self.waiting
        if waiting is not _HANDED:
            self.waiting = _HANDED
            return waiting
        return self.coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        self.waiting = _HANDED
        if val is None and tb is None:
            return self.coro.throw(typ)
        return self.coro.throw(typ, val, tb)

    def close(self) -> None:
        self.coro.close()

    def __await__(self) -> Generator[Any, Any, T]:  # the task steps it; awaited, it works the same
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            try:
                waiting = self.send(sent) if thrown is None else self.throw(thrown)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            sent, thrown = None, None
            try:
                sent = yield waiting
            except BaseException as exc:
                thrown = exc


_HANDED = object()
"""``_GoOn.waiting`` once the task has been handed what the coroutine waited on."""
