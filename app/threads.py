"""Run blocking handler functions on daemon worker threads.

The default executor's threads are joined at interpreter exit, so one stuck
sync tool would keep a stdio server alive after its client hung up. These
workers are daemons: the process can always exit promptly.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_MAX_WORKERS = 64
_work: queue.SimpleQueue[tuple[Callable[[], Any], asyncio.AbstractEventLoop, asyncio.Future[Any]] | None] = (
    queue.SimpleQueue()
)
_lock = threading.Lock()
_workers = 0
_idle = 0


def _settle(fut: asyncio.Future[Any], value: Any, exc: BaseException | None) -> None:
    if fut.cancelled():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)


def _worker() -> None:
    global _idle
    while True:
        with _lock:
            _idle += 1
        item = _work.get()
        with _lock:
            _idle -= 1
        if item is None:
            return
        call, loop, fut = item
        try:
            value, exc = call(), None
        except BaseException as e:
            value, exc = None, e
        with contextlib.suppress(RuntimeError):  # the loop is gone; nobody is waiting
            loop.call_soon_threadsafe(_settle, fut, value, exc)


async def run_sync(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Call ``fn`` on a worker thread, carrying the caller's context variables."""
    global _workers
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()
    ctx = contextvars.copy_context()
    _work.put((lambda: ctx.run(fn, *args, **kwargs), loop, fut))
    with _lock:
        spawn = _workers < _MAX_WORKERS and _work.qsize() > _idle
        if spawn:
            _workers += 1
    if spawn:
        threading.Thread(target=_worker, name="mcpwire-worker", daemon=True).start()
    return await fut
