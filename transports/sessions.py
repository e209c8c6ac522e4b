"""Handshake-era sessions over HTTP: the ``SessionManager``, which keeps the live parts (``LiveSession``:
requests in flight, open streams) beside the state in a ``SessionStore`` (``wiremcp.session_store``), and
hears from the other replicas (``ClusterEvents``) when the store is shared.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Coroutine
from typing import Any

from wiremcp import jsonrpc
from wiremcp.backend import Backend
from wiremcp.inlet import forwarded_response
from wiremcp.replica_link import ClusterEvents
from wiremcp.server import MCPServer
from wiremcp.session_store import SERVER, Asker, serves
from wiremcp.state import SessionState
from wiremcp.transports.allocator import FallFromPeak, release_freed_memory
from wiremcp.transports.live_session import LiveSession
from wiremcp.transports.shared_streams import STANDALONE_STREAM
from wiremcp.types import JSONObject
from wiremcp.unavailable import StoreUnavailable

log = logging.getLogger("wiremcp.sessions")


RENEW_SLACK = 1.0
"""Seconds of work after a self-expiring store last renewed a session that need no renewal of their own."""


def new_session_id() -> str:
    """256 random bits as visible ASCII (URL-safe base64), as the spec asks."""
    return secrets.token_urlsafe(32)


WRITE_BATCH = 64
"""Sessions a change is written to at once (their states read and their streams appended concurrently)."""
CHANGE_RETRY_SECONDS = 30.0
"""How long a change is tried again while the shared store is away, before it is given up (and logged)."""


class SessionLimitReached(Exception):
    pass


class SessionManager(ClusterEvents):
    """Creates, finds, expires and deletes sessions in ``backend`` (the server's runtime's unless given); with
    a link to other replicas, hears about them from the other replicas."""

    def __init__(self, server: MCPServer, backend: Backend | None = None, *, idle_timeout: float = 1800.0,
                 max_sessions: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.server = server
        self.backend = backend = backend or server.runtime.backend
        self.store = backend.sessions
        self.events = backend.events
        self.link = backend.link
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self._clock = clock
        self.live: dict[str, LiveSession] = {}
        self._reaper: asyncio.Task[None] | None = None
        self.draining = False
        """Set on shutdown: no new sessions (503), streams are closed so that clients reconnect elsewhere."""
        self._background: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._writing = asyncio.Lock()
        """Changes published here are written one after the other, in the order they were published."""
        self.release_rule = FallFromPeak()
        """When the memory of ended sessions goes back to the system (``_give_back``): the live count is
        followed as sessions are added and checked at each sweep."""
        if self.link is not None:
            self.link.listen(self)
        if self.shared:
            server.runtime.change_writers.append(self.change_published)

    @property
    def shared(self) -> bool:
        """Other replicas serve the same sessions (a link to them and a shared event store)."""
        return self.backend.shared

    async def create(self, owner: str | None = None) -> LiveSession:
        """A new session, bound to ``owner`` (the authenticated identity's key) if there is one."""
        state = SessionState(id=new_session_id(), owner=owner)
        if not await self.store.create(state, self.max_sessions):
            # Make room from idle sessions before refusing.
            await self.expire_idle()
            if not await self.store.create(state, self.max_sessions):
                raise SessionLimitReached
        return self._serve_here(state)

    def _serve_here(self, state: SessionState) -> LiveSession:
        """Serve ``state``'s session from this process: counted for the release rule, forgotten when idle (a
        copy of a session made on another replica, like one made here)."""
        live = LiveSession(self.server, state, self.events, self.link, self._clock)
        self.live[live.id] = live
        self.release_rule.rose(len(self.live))
        self._start_reaper()
        return live

    async def get(self, session_id: str, asker: Asker = SERVER) -> LiveSession | None:
        """The session, served from this process; None if the store no longer has it, or if ``asker`` (the
        caller's identity) is not its owner: another principal's session is as good as unknown, a session id is
        never a credential. Ownership is decided here, before anything about the session changes (its idle
        clock in this process and in the store).

        The store is asked, so that a session ended elsewhere (DELETE or expiry on another replica
        sharing the store) gets 404 here too, and state changed there is seen here. (A shared store may
        answer from a copy of its own: ``RedisSessionStore``'s, kept while fresh and dropped when another
        replica announces a change.)
        """
        state = await self.store.get(session_id, asker)
        if state is None:
            self._forget(session_id)
            return None
        if not serves(state, asker):
            return None
        live = self.live.get(session_id)  # again: a concurrent request may have made or dropped it meanwhile
        if live is None:
            live = self._serve_here(state)
        elif live.session.state is not state:
            live.session.state = state
        live.last_seen = live.renewed = self._clock()  # a lookup renews a self-expiring store's expiry
        return live

    async def save(self, live: LiveSession) -> None:
        live.last_seen = self._clock()
        await self.store.save(live.session.state)  # a shared store tells the other replicas (their copies are stale)

    async def delete(self, session_id: str) -> bool:
        live = self.live.pop(session_id, None)
        if live is not None:
            live.close()
        await self._end_tasks(session_id)
        found = await self.store.delete(session_id)
        await self.events.drop_session(session_id)
        await self.backend.stream_holds.forget(session_id)
        if self.link is not None:
            await self.link.broadcast_delete(session_id)  # other replicas stop its work and streams
        return found or live is not None

    def session_deleted(self, session_id: str) -> None:
        """Another replica ended the session: drop this process's copy and stop the tasks it owned here."""
        self._forget(session_id)
        self._spawn(self._end_tasks(session_id))

    async def _end_tasks(self, session_id: str) -> None:
        """A session's own tasks (no principal) cannot be reached once it has ended: cancel them."""
        if self.server.runtime.has_task_runner:
            with contextlib.suppress(Exception):
                await self.server.runtime.task_runner.cancel_owned(f"session:{session_id}")

    def _forget(self, session_id: str) -> None:
        """Drop this process's copy of a session (ended elsewhere, or idle here)."""
        live = self.live.pop(session_id, None)
        if live is not None:
            live.close()

    async def expire_idle(self) -> int:
        """End sessions idle for longer than the timeout; never one with work in flight.

        With a store that expires sessions itself (Redis), this process only forgets its own idle
        copies (the session lives on for the other replicas) and keeps busy ones alive in the store."""
        now = self._clock()
        horizon = now - self.idle_timeout
        if self.store.self_expiring:
            horizon = now - min(self.idle_timeout, 60.0)
            idle = [sid for sid, live in self.live.items() if live.idle_since < horizon and not live.busy]
            ended = len(idle)
            while idle:  # popped: none of their ids is left when their memory is given back
                self._forget(idle.pop())
            self._give_back()
            for sid, live in list(self.live.items()):
                # Busy now, or busy until after the store last renewed it: the store's idle clock is
                # restarted, so that it too counts from the end of the work.
                if live.busy or live.idle_since - live.renewed > RENEW_SLACK:
                    with contextlib.suppress(StoreUnavailable):
                        await self.store.touch(sid)
                        live.renewed = now
            return ended
        idle = [sid for sid, live in self.live.items() if live.idle_since < horizon and not live.busy]
        ended = len(idle)
        idle.reverse()
        while idle:  # in order, popped: none of their ids is left when their memory is given back
            await self.delete(idle.pop())
        if ended:
            log.info("expired %d idle sessions", ended)
        self._give_back()
        return ended

    def _give_back(self) -> None:
        """Once the live count has fallen far enough below its peak since the last time (``release_rule``,
        ``FallFromPeak``: by a quarter of that peak and by at least 256 sessions, in one sweep or in many,
        by expiry or by DELETE), return the memory the ended sessions held instead of keeping it for the
        next ones: the tables that listed them are rebuilt at the size they need now (a dict or set never
        shrinks as items leave it), then the interpreter's and the C library's free memory goes back to the
        system (``release_freed_memory``). Costs O(sessions left): a full collection, 3-4 ms per 1,000
        sessions left.

        Asked at every sweep, whatever it ended: sessions also end between sweeps (DELETE, or ended on
        another replica), and the reaper sweeps once more after the last one went. With a store that expires
        sessions itself (Redis), the live count is this process's copies of sessions, and the store's own
        copies (``RedisSessionStore``'s cache) are dropped at the same time (``compact``)."""
        left, peak = len(self.live), self.release_rule.peak
        if not self.release_rule.release_due(left):
            return
        started = time.perf_counter()
        kept = dict(self.live)
        self.live.clear()  # in place: the same dict, with a table sized for what is left
        self.live.update(kept)
        del kept
        self.store.compact()
        self.server.runtime.compact_sessions()
        release_freed_memory()
        log.info("gave back the memory of ended sessions: %d live, %d at most since the last time (%.1f ms)",
                 left, max(peak, left), 1000 * (time.perf_counter() - started))

    # -- messages from other replicas ------------------------------------------------------------
    def response_arrived(self, session_id: str, raw: bytes) -> None:
        live = self.live.get(session_id)
        response = forwarded_response(raw)
        if live is not None and response is not None:
            live.session.handle_response(response)

    def request_cancelled(self, session_id: str, params: JSONObject) -> None:
        live = self.live.get(session_id)
        if live is not None:
            live.session.handle_notification(jsonrpc.Notification("notifications/cancelled", params))

    # -- changes published here, for the sessions of every replica ------------------------------------
    def change_published(self, event: JSONObject) -> None:
        """A server-wide notification published on this replica (``Runtime.changed``; from any thread): this
        replica writes it into the GET stream of every session that listens and wants it, on whichever
        replica that stream is open, if it is open at all (a client reconnecting reads it when it resumes).
        Not only the replica holding a stream: one that drains has given its streams up, and no replica holds
        them until their clients are back."""
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None and self._loop in (None, running):
            self._loop = running
            self._spawn(self._write_change(event))
        elif self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(lambda: self._spawn(self._write_change(event)))
        else:
            log.warning("a change published before any session was served was not written to any session: %s",
                        event.get("method"))

    async def _write_change(self, event: JSONObject) -> None:
        """Write ``event`` to every session that listens and wants it. A store that is away for a moment (Redis
        restarting) is tried again, the sessions not written yet only, for ``CHANGE_RETRY_SECONDS``; the
        changes published meanwhile wait their turn, so that each session gets them in order."""
        once = secrets.token_hex(8)  # tried again after an answer lost with Redis, an append is not made twice
        async with self._writing:
            pending: list[str] | None = None  # None: which sessions listen is not known yet
            pause, deadline = 0.05, time.monotonic() + CHANGE_RETRY_SECONDS
            while True:
                try:
                    if pending is None:
                        pending = await self.backend.stream_holds.listening()
                    left: list[str] = []
                    for start in range(0, len(pending), WRITE_BATCH):
                        batch = pending[start:start + WRITE_BATCH]
                        written = await asyncio.gather(*(self._write_to(sid, event, once) for sid in batch))
                        left.extend(sid for sid, done in zip(batch, written, strict=True) if not done)
                    pending = left
                    if not pending:
                        return
                    failure = f"{len(pending)} sessions could not be written"
                except StoreUnavailable as exc:
                    failure = str(exc)
                if time.monotonic() + pause > deadline:
                    log.warning("a change notification (%s) was lost for %s sessions: %s", event.get("method"),
                                "every" if pending is None else len(pending), failure)
                    return
                await asyncio.sleep(pause)  # the store's way back has no event to wait on
                pause = min(pause * 2, 1.0)

    async def _write_to(self, sid: str, event: JSONObject, once: str) -> bool:
        """Write ``event`` to one session's GET stream if it wants it; False if the store was away."""
        try:
            state = await self.store.get(sid)
            if state is None:
                await self.backend.stream_holds.forget(sid)  # ended (expired) since it listened
            elif state.wants(event):
                await self.events.append_next(sid, STANDALONE_STREAM, event, once=once)
        except StoreUnavailable:
            return False
        return True

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _reap(self) -> None:
        interval = max(0.05, min(self.idle_timeout / 4, 30.0))
        while self.live:
            await asyncio.sleep(interval)
            try:
                await self.expire_idle()
            except Exception:
                log.exception("session expiry failed")

    async def close(self) -> None:
        writers = self.server.runtime.change_writers
        if self.change_published in writers:
            writers.remove(self.change_published)
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for sid in list(self.live):
            if self.store.self_expiring:
                self._forget(sid)  # the session lives on for the other replicas
            else:
                await self.delete(sid)
