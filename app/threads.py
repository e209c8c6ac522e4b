"""Where a plain (sync) handler function runs: on the event loop's thread, or on a daemon worker thread.

A sync function that does no I/O costs less called where it is than handed to a thread and back, so it is
called on the loop's thread (``SyncFunction``), unless its author marked it ``blocking=True``. One call that
holds the loop longer than ``HOLD_LIMIT`` shows that it blocks after all: from then on its calls go to a
worker, and a warning says so once. ``blocking=False`` keeps it on the loop whatever a call takes.

The default executor's threads are joined at interpreter exit, so one stuck
sync tool would keep a stdio server alive after its client hung up. These
workers are daemons: the process can always exit promptly.

Hand-offs are batched both ways, so that many cheap calls (a pipelining client) cost a few thread
switches, not two each: calls wait in one queue that the awake workers drain, and a worker wakes
the event loop once per batch of results, not once per call (``_Inbox``). Only when no worker is
awake is one woken (or started).

A call must never wait long behind one that blocks (``time.sleep``, blocking I/O), nor may the
loop: while calls are queued behind busy workers, a timer on the submitting loop checks every
``_STALL`` seconds that calls are finishing. If none has, the running ones are taken to block: a
worker is woken (or started) for every queued call, up to ``_MAX_WORKERS``, and for the next
``_EAGER`` seconds every call gets a worker of its own at once, as if each had its own thread. (So
the first call queued behind a blocking one waits up to ``_STALL`` seconds longer than with a thread
per call; later ones do not.)
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

log = logging.getLogger("wiremcp.threads")

HOLD_LIMIT = 0.01
"""Seconds a sync handler not marked either way may hold the event loop's thread: a call that takes longer
sends its later calls to a worker thread."""

_MAX_WORKERS = 64
_STALL = 0.01
"""Seconds without a finished call, with calls queued, after which the running calls count as blocking."""
_EAGER = 5.0
"""Seconds after a stall during which every call wakes a worker of its own."""


class _Inbox:
    """One event loop's finished calls, settled on that loop in batches."""

    __slots__ = ("__weakref__", "_done", "_loop", "_scheduled", "_watching")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)
        self._done: deque[tuple[asyncio.Future[Any], Any, BaseException | None]] = deque()
        self._scheduled = False
        self._watching = False

    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop()

    def put(self, fut: asyncio.Future[Any], value: Any, exc: BaseException | None) -> None:
        """From a worker: queue a result; wake the loop unless a wake-up is already on its way."""
        self._done.append((fut, value, exc))
        if not self._scheduled:
            self._scheduled = True
            loop = self._loop()
            try:
                if loop is None:
                    raise RuntimeError("the event loop is gone")
                loop.call_soon_threadsafe(self._settle)
            except RuntimeError:  # the loop is closed or gone: nobody is waiting
                self._done.clear()
                self._scheduled = False

    def _settle(self) -> None:
        """On the loop: settle every result that has arrived (those arriving meanwhile too)."""
        self._scheduled = False  # before taking: a result queued after this point schedules another call
        done = self._done
        while done:
            fut, value, exc = done.popleft()
            if fut.cancelled():
                continue
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(value)

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the loop: check for a stall in ``_STALL`` seconds, unless a check is already due."""
        if not self._watching:
            self._watching = True
            loop.call_later(_STALL, self._check, _finished)

    def _check(self, seen: int) -> None:
        self._watching = False
        if not _work:
            return
        if _finished == seen:
            _stalled()
        loop = self._loop()
        if loop is not None:
            self.watch(loop)


_Item = tuple[contextvars.Context, Callable[..., Any], tuple[Any, ...], dict[str, Any], asyncio.Future[Any], _Inbox]

_lock = threading.Lock()
_work: deque[_Item] = deque()
_parked: list[threading.Lock] = []
"""One held lock per parked worker; releasing it wakes that worker."""
_workers = 0
"""Threads started."""
_awake = 0
"""Workers not parked: running a call or looking for the next."""
_finished = 0
"""Calls finished (only ever compared for a change)."""
_eager_until = 0.0
_inboxes: weakref.WeakValueDictionary[int, _Inbox] = weakref.WeakValueDictionary()
"""By ``id(loop)``; an inbox lives while calls (or ``_last``) refer to it, and never keeps its loop alive."""
_last: _Inbox | None = None


def _inbox(loop: asyncio.AbstractEventLoop) -> _Inbox:
    global _last
    inbox = _last
    if inbox is not None and inbox.loop() is loop:
        return inbox
    with _lock:
        inbox = _inboxes.get(id(loop))
        if inbox is None or inbox.loop() is not loop:
            inbox = _inboxes[id(loop)] = _Inbox(loop)
    _last = inbox
    return inbox


def _wake(n: int) -> int:
    """With ``_lock`` held: make up to ``n`` more workers awake, parked ones first; how many threads
    the caller must start (after releasing the lock)."""
    global _workers, _awake
    start = 0
    while n > 0 and _parked:
        _parked.pop().release()
        _awake += 1
        n -= 1
    while n > 0 and _workers < _MAX_WORKERS:
        _workers += 1
        _awake += 1
        start += 1
        n -= 1
    return start


def _start(count: int) -> None:
    for _ in range(count):
        gate = threading.Lock()
        gate.acquire()
        threading.Thread(target=_worker, args=(gate,), name="wiremcp-worker", daemon=True).start()


def _stalled() -> None:
    """No call finished for a while with calls queued: the running ones block. Give every queued call
    a worker, and every call for the next ``_EAGER`` seconds."""
    global _eager_until
    with _lock:
        _eager_until = time.monotonic() + _EAGER
        start = _wake(len(_work))
    _start(start)


def _worker(gate: threading.Lock) -> None:
    global _awake
    work = _work
    while True:
        try:
            item = work.popleft()
        except IndexError:
            with _lock:
                if work:
                    continue
                _awake -= 1
                _parked.append(gate)
            gate.acquire()  # released by whoever wakes this worker (and counts it awake again)
            continue
        _call(*item)
        del item  # hold nothing of it while parked


def _call(ctx: contextvars.Context, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
          fut: asyncio.Future[Any], inbox: _Inbox) -> None:
    global _finished
    if fut.cancelled():  # cancelled while it waited: never started
        _finished += 1
        return
    try:
        value, exc = ctx.run(fn, *args, **kwargs), None
    except BaseException as e:
        value, exc = None, e
    _finished += 1
    inbox.put(fut, value, exc)


def run_sync(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> asyncio.Future[T]:
    """Call ``fn`` on a worker thread, carrying the caller's context variables; await the result.

    A plain function returning the future (not a coroutine): one frame less between the awaiting
    task and the result. Call it from a running event loop and await it at once."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()
    inbox = _inbox(loop)
    _work.append((contextvars.copy_context(), fn, args, kwargs, fut, inbox))
    start = 0
    with _lock:
        busy = _awake > 0  # then this call may be queued behind one that blocks
        if not busy or (_eager_until and time.monotonic() < _eager_until):
            start = _wake(1)
    if start:
        _start(start)
    if busy:
        inbox.watch(loop)
    return fut


class SyncFunction:
    """A sync handler function and where its calls run. ``blocking``: True, on a worker thread; False, on the
    event loop's thread; None (not said), on the loop's thread until one call holds it longer than
    ``HOLD_LIMIT``, then on a worker. ``what`` names it in that warning (``tool 'search'``)."""

    __slots__ = ("blocking", "fn", "learning", "what")

    def __init__(self, fn: Callable[..., Any], blocking: bool | None, what: str) -> None:
        if blocking is not None and not isinstance(blocking, bool):
            raise TypeError(f"blocking= must be True, False or None, not {blocking!r}")
        self.fn = fn
        self.blocking = blocking is True
        """Whether its calls go to a worker thread (``run_sync``) now."""
        self.learning = blocking is None
        self.what = what

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Call it here, on the loop's thread (when not ``blocking``)."""
        if not self.learning:
            return self.fn(*args, **kwargs)
        start = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            held = time.perf_counter() - start
            if held > HOLD_LIMIT:
                self._blocks(held)

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call it where it runs now, and await the result."""
        if self.blocking:
            return await run_sync(self.fn, *args, **kwargs)
        return self.call(*args, **kwargs)

    def _blocks(self, held: float) -> None:
        self.blocking, self.learning = True, False
        log.warning("%s held the event loop for %.0f ms: its calls run on a worker thread from now on. Mark it "
                    "blocking=True to start there, or blocking=False to keep it on the loop", self.what, held * 1000)
