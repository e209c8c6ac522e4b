"""Graceful drain on SIGTERM: stop taking new connections, let calls in flight finish, then close every
stream resumably (with ``retry``) so that clients reconnect, through the load balancer, elsewhere, and
exit without closing a connection a proxy may be writing a request on.

uvicorn, on SIGTERM, stops accepting connections, closes the idle ones at once and waits
(``--timeout-graceful-shutdown``) for the others before it runs the lifespan shutdown. Two things in that
are wrong for a replica behind a load balancer: SSE streams never end by themselves, so the drain has to
start at the signal, not at the lifespan; and an idle keep-alive connection closed by the server races a
proxy that has just written a request on it (nginx, rightly, does not send a POST again: its client gets
a 502). So the drain chains onto uvicorn's signal handlers (and tells sse-starlette to leave the streams to
it), holds uvicorn's exit back, and runs:

0. ``leaving`` on: ``/readyz`` says unready, and every response from now on says ``Connection: close``
   (``ClosingConnections``), so that no connection it answers is kept for another request; then
   ``settle_seconds`` (``WIREMCP_DRAIN_SETTLE_SECONDS``) of normal service, for a balancer that reads
   readiness (Kubernetes) to stop sending new connections here; then the listening sockets close (a proxy
   connecting now is refused, which is safe to try elsewhere), and the idle connections are left to close
   themselves: each one the proxy still sends a request on is answered (with ``Connection: close``), and the
   proxy's idle timeout, shorter than the server's, or else uvicorn's own keep-alive timeout ends the others,
   as at any other time. That takes at most the keep-alive timeout (5 s by default) and a second, with every
   request served as usual meanwhile;
1. ``draining`` on: with sessions in memory, ``initialize`` (and a new HTTP+SSE stream) answers 503 with
   ``Retry-After`` (a session in a shared store is served: it lives on elsewhere);
2. ``subscriptions/listen`` requests answer and close; GET streams close with ``retry``;
3. requests in flight, on every transport and in both eras (the runtime's ``RequestsInFlight``), get
   ``drain_seconds`` to finish (their streams carry their answers);
4. those still running are cut off: answered with the shutdown's retryable error (``wiremcp.shutdown``:
   a JSON answer is a 503), their handlers cancelled;
5. whatever still streams is closed (Streamable HTTP resumably, HTTP+SSE once what it carries is sent),
   and sse-starlette is told to end the rest.

6. the connections the drain's closed streams leave idle are left to close the same way (the same bound);
   then uvicorn's exit runs.

Every request has its answer before its stream closes, so no connection holds the process open past the
drain: uvicorn reaches its lifespan shutdown, and the process exits ``settle_seconds + drain_seconds`` after
the signal and a few seconds more (the idle connections' wait, and the drain's bounded cut-off). A second SIGTERM or SIGINT exits at once (as uvicorn does: a third
SIGINT forces it). Served some other way than by uvicorn's ``Server`` (its handlers not found), the drain
runs at the signal and the server's own exit goes on beside it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import signal
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any

from wiremcp.shutdown import CUT_OFF_BOUND, STEP_BOUND, shut_down
from wiremcp.transports import sse
from wiremcp.transports.legacy_sse import LegacySSEEndpoints
from wiremcp.transports.listening import refuse_new_connections
from wiremcp.transports.sessions import SessionManager

log = logging.getLogger("wiremcp.drain")

_coordinators: weakref.WeakSet[Drain] = weakref.WeakSet()
_hooked = False
_exits: set[asyncio.Task[None]] = set()
"""The exit in progress (settle, drain, quiet connections, then uvicorn's exit), once a signal started it."""
_exit_started = False

ACCEPT_BOUND = 1.0
"""Seconds, at most, for the server to accept the connections queued when the listening socket closes."""
QUIET_TICK = 0.05
QUIET_MARGIN = 1.0
"""Seconds past the server's keep-alive timeout that the exit waits, at most, for idle connections to close
(before the drain, and again after it)."""


class Drain:
    """The drain of one app; ``begin`` may be called from a signal handler (any thread)."""

    def __init__(self, manager: SessionManager, legacy: LegacySSEEndpoints | None = None, *,
                 seconds: float = 10.0, settle_seconds: float = 0.0) -> None:
        self.manager = manager
        self.legacy = legacy
        """The 2024-11-05 HTTP+SSE endpoints, when served: their streams end after the cut-off answers."""
        self.seconds = seconds
        self.settle_seconds = settle_seconds
        """After the signal, how long the replica goes on serving, unready, before it stops accepting."""
        self.leaving = False
        """Set at the signal: ``/readyz`` is unready and every response closes its connection."""
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

    def signalled(self) -> None:
        """The process got its exit signal: unready and closing connections from now on, and the drain's end
        may release sse-starlette's streams (the process is going away)."""
        self._signalled = True
        self.leaving = True

    def begin(self) -> None:
        """Start draining now (from the exit signal, when uvicorn's exit is not held for it)."""
        self.signalled()
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
        self.leaving = True
        try:
            log.info("draining: %d requests in flight get up to %.1fs",
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


class UvicornExit:
    """uvicorn's exit (its ``Server.handle_exit``), held back while the drains run, and the parts of its
    ``Server`` the exit needs: its listening sockets and its open connections."""

    __slots__ = ("handle_exit", "server")

    def __init__(self, handle_exit: Callable[[int, FrameType | None], Any], server: Any) -> None:
        self.handle_exit = handle_exit
        self.server = server

    @classmethod
    def of(cls, handler: Any) -> UvicornExit | None:
        """The held exit of a signal handler that is a uvicorn ``Server``'s, else None."""
        server = getattr(handler, "__self__", None)
        state = getattr(server, "server_state", None)
        # (Its listening sockets are made after the lifespan startup, where the handlers are chained.)
        if getattr(handler, "__name__", None) != "handle_exit" or not isinstance(getattr(state, "connections", None), set):
            return None
        return cls(handler, server)

    async def stop_accepting(self) -> None:
        """Close the listening sockets (a proxy's new connection is refused: safe to try elsewhere) once the
        connections the kernel has queued for them are accepted (``wiremcp.transports.listening``). The open
        connections are left as they are: one whose answer began before the signal (without ``Connection:
        close``) is kept by the proxy once the answer ends, and closing it then races the proxy's next request
        on it, as closing an idle one does."""
        listeners = list(getattr(self.server, "servers", ()))
        sockets = [sock for listening in listeners for sock in (getattr(listening, "sockets", None) or ())]
        refusing = [held for sock in sockets if (held := refuse_new_connections(sock)) is not None]
        try:
            if not await self.until(lambda: not any(held.queued for held in refusing), ACCEPT_BOUND):
                log.warning("connections still queued %.1fs after the listening socket stopped taking new ones",
                            ACCEPT_BOUND)
            for listening in listeners:
                listening.close()
        finally:
            for held in refusing:
                held.release()  # a socket shared with another process takes connections again, for it

    def _connections(self) -> list[Any]:
        return list(self.server.server_state.connections)

    @property
    def connections(self) -> int:
        return len(self.server.server_state.connections)

    @property
    def idle_connections(self) -> int:
        return sum(1 for connection in self._connections() if _idle(connection))

    @property
    def keep_alive_seconds(self) -> float:
        return float(getattr(self.server.config, "timeout_keep_alive", 5))

    async def until(self, done: Callable[[], bool], seconds: float) -> bool:
        """Wait until ``done()`` (uvicorn's connections have no event to wait on), ``seconds`` at most."""
        for _ in range(math.ceil(seconds / QUIET_TICK)):
            if done():
                return True
            await asyncio.sleep(QUIET_TICK)
        return done()


def _idle(connection: Any) -> bool:
    """Whether a uvicorn connection waits for its next request (none yet, or its last one answered)."""
    cycle = getattr(connection, "cycle", None)
    return cycle is None or bool(getattr(cycle, "response_complete", False))


async def leave(drains: list[Drain], held: UvicornExit, signum: int) -> None:
    """The exit of a process served by uvicorn, from the first signal: unready with connections closing
    after each answer, the settle delay, no new connections, the idle ones left to close (requests that
    still come on them served as usual), the drains, then uvicorn's own exit."""
    try:  # (the drains know of the signal already: ``_chained``)
        settle = max(drain.settle_seconds for drain in drains)
        if settle > 0:
            log.info("leaving: unready; serving for %.1fs more before closing the listening socket", settle)
            await asyncio.sleep(settle)  # the settle delay itself: the balancer's time to stop sending here
        await held.stop_accepting()
        bound = held.keep_alive_seconds + QUIET_MARGIN
        if not await held.until(lambda: held.idle_connections == 0, bound):
            log.info("%d idle connections still open %.1fs after the listening socket closed",
                     held.idle_connections, bound)
        await asyncio.gather(*(drain.run() for drain in drains), return_exceptions=True)
        # The streams the drain closed leave their connections idle: left to close the same way.
        await held.until(lambda: held.connections == 0, bound)
    except Exception:
        log.exception("the drain failed; exiting")
    finally:
        held.handle_exit(signum, None)


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
    held = UvicornExit.of(previous)

    def handler(signum: int, frame: FrameType | None) -> None:
        global _exit_started
        drains = [drain for drain in _coordinators if drain._loop is not None and not drain._loop.is_closed()]
        if held is None or _exit_started or not drains:
            # Not uvicorn's Server, or a second signal: the drains start (if they have not) and the exit goes on.
            for drain in list(_coordinators):
                drain.begin()
            previous(signum, frame)
            return
        loop = drains[0]._loop
        assert loop is not None

        def start() -> None:
            task = loop.create_task(leave(drains, held, signum), name="wiremcp exit")
            _exits.add(task)
            task.add_done_callback(_exits.discard)

        _exit_started = True
        for drain in drains:
            drain.signalled()  # unready from the signal on, not from the loop's next turn
        loop.call_soon_threadsafe(start)

    return handler
