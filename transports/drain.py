"""Graceful drain on SIGTERM: stop taking new sessions, let calls in flight finish, then close every
stream resumably (with ``retry``) so that clients reconnect, through the load balancer, elsewhere.

uvicorn, on SIGTERM, stops accepting connections and waits (``--timeout-graceful-shutdown``) for the
open ones before it runs the lifespan shutdown; SSE streams never end by themselves, so the drain has
to start at the signal, not at the lifespan. It chains onto uvicorn's signal handlers (and tells
sse-starlette to leave the streams to it), and runs:

1. ``draining`` on: ``initialize`` (and a new HTTP+SSE stream) answers 503, ``/readyz`` says unready;
2. ``subscriptions/listen`` requests answer and close; GET streams close with ``retry``;
3. requests in flight, on every transport and in both eras (the runtime's ``RequestsInFlight``), get
   ``drain_seconds`` to finish (their streams carry their answers);
4. those still running are cut off: answered with the shutdown's retryable error (``wiremcp.shutdown``:
   a JSON answer is a 503), their handlers cancelled;
5. whatever still streams is closed (Streamable HTTP resumably, HTTP+SSE once what it carries is sent),
   and sse-starlette is told to end the rest.

Every request has its answer before its stream closes, so no connection holds the process open past the
drain: uvicorn reaches its lifespan shutdown, and the process exits, ``drain_seconds`` after the signal
and little more.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any

from wiremcp.shutdown import CUT_OFF_BOUND, STEP_BOUND, shut_down
from wiremcp.transports import sse
from wiremcp.transports.legacy_sse import LegacySSEEndpoints
from wiremcp.transports.sessions import SessionManager

log = logging.getLogger("wiremcp.drain")

_coordinators: weakref.WeakSet[Drain] = weakref.WeakSet()
_hooked = False


class Drain:
    """The drain of one app; ``begin`` may be called from a signal handler (any thread)."""

    def __init__(self, manager: SessionManager, legacy: LegacySSEEndpoints | None = None, *,
                 seconds: float = 10.0) -> None:
        self.manager = manager
        self.legacy = legacy
        """The 2024-11-05 HTTP+SSE endpoints, when served: their streams end after the cut-off answers."""
        self.seconds = seconds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._signalled = False
        self.done = asyncio.Event()

    @property
    def draining(self) -> bool:
        return self.manager.draining

    def install(self) -> None:
        """Start listening for uvicorn's exit (call from the running loop, at startup)."""
        self._loop = asyncio.get_running_loop()
        _coordinators.add(self)
        _hook_uvicorn()

    def begin(self) -> None:
        """Start draining (from uvicorn's exit signal)."""
        self._signalled = True
        loop = self._loop
        if loop is None or loop.is_closed() or self._task is not None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._start()
        else:
            loop.call_soon_threadsafe(self._start)

    def _start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        """The drain itself (also awaited by the lifespan shutdown, which is idempotent with it)."""
        manager = self.manager
        if manager.draining:
            await self.done.wait()
            return
        manager.draining = True
        try:
            log.info("draining: no new sessions; %d requests in flight get up to %.1fs",
                     len(manager.server.runtime.requests), self.seconds)
            left = await shut_down(manager.server, grace=self.seconds, quiesce=self._quiesce)
            for live in list(manager.live.values()):
                live.close_streams()
            if self.legacy is not None:
                self.legacy.close_streams()
            if left:
                log.warning("drain: %d requests still running after %.1fs were cut off (answered: retryable)",
                            left, self.seconds)
            if self._signalled:
                # The process is exiting: sse-starlette may end whatever still streams. (Process-wide, so
                # never for an app merely shut down in a process that goes on, such as a test run.)
                sse.release_streams()
        finally:
            self.done.set()  # whatever happened, the lifespan shutdown waiting for it goes on

    @property
    def bound(self) -> float:
        """Seconds the whole drain takes at most: the grace, the cut-off answers, failing the tasks left."""
        return self.seconds + CUT_OFF_BOUND + STEP_BOUND

    def _quiesce(self) -> None:
        for live in list(self.manager.live.values()):
            live.standalone.close()  # GET streams: the client reconnects elsewhere
            live.close_followers()


def _hook_uvicorn() -> None:
    """Chain onto the exit signal handlers uvicorn installed (it binds them before the app starts, so
    they are wrapped where they are registered); sse-starlette then leaves the streams to the drain."""
    global _hooked
    if _hooked:
        return
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)
            if callable(previous):
                signal.signal(sig, _chained(previous))
    except ValueError:  # not the main thread: uvicorn's own handling (and sse-starlette's) stays as it is
        return
    _hooked = True
    sse.leave_exit_to_drain()


def _chained(previous: Callable[[int, FrameType | None], Any]) -> Callable[[int, FrameType | None], None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        for drain in list(_coordinators):
            drain.begin()
        previous(signum, frame)

    return handler
