"""Handshake-era sessions over HTTP: the ``SessionStore`` interface, its in-memory implementation,
and the ``SessionManager`` that keeps the live parts (requests in flight, open streams) beside the state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

from app.server import MCPServer
from app.session import ServerSession
from app.state import SessionState
from transports.channels import EventChannel
from transports.events import EventStore

log = logging.getLogger("mcpwire.sessions")

STANDALONE_STREAM = "get"


def new_stream_id() -> str:
    """A stream name unique within its session on every replica (it prefixes the stream's event ids)."""
    return "p" + secrets.token_hex(6)


def new_session_id() -> str:
    """256 random bits as visible ASCII (URL-safe base64), as the spec asks."""
    return secrets.token_urlsafe(32)


class SessionStore(ABC):
    """Where session state lives; any process holding the store can serve any session."""

    @abstractmethod
    async def create(self, state: SessionState) -> None: ...

    @abstractmethod
    async def get(self, session_id: str) -> SessionState | None: ...

    @abstractmethod
    async def save(self, state: SessionState) -> None:
        """Persist changed state and restart the idle clock."""

    @abstractmethod
    async def delete(self, session_id: str) -> bool:
        """Forget a session; False if it was not there."""

    @abstractmethod
    async def count(self) -> int: ...


class InMemorySessionStore(SessionStore):
    def __init__(self) -> None:
        self._states: dict[str, SessionState] = {}

    async def create(self, state: SessionState) -> None:
        assert state.id is not None
        self._states[state.id] = state

    async def get(self, session_id: str) -> SessionState | None:
        return self._states.get(session_id)

    async def save(self, state: SessionState) -> None:
        assert state.id is not None
        self._states[state.id] = state

    async def delete(self, session_id: str) -> bool:
        return self._states.pop(session_id, None) is not None

    async def count(self) -> int:
        return len(self._states)


class LiveSession:
    """A session as served by this process: the protocol runner plus its SSE streams."""

    __slots__ = ("channels", "last_seen", "session", "standalone", "streams_open", "tasks")

    def __init__(self, server: MCPServer, state: SessionState, events: EventStore | None) -> None:
        assert state.id is not None
        self.standalone = EventChannel(state.id, STANDALONE_STREAM, events)
        self.session = ServerSession(server, state, post=self.standalone.emit_later)
        self.channels: dict[str, EventChannel] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.streams_open = 0
        self.last_seen = time.monotonic()

    @property
    def id(self) -> str:
        sid = self.session.state.id
        assert sid is not None
        return sid

    @property
    def busy(self) -> bool:
        return bool(self.tasks) or self.streams_open > 0 or self.session.inflight > 0

    def spawn(self, task: asyncio.Task[None]) -> None:
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        for channel in self.channels.values():
            channel.close(final=True)
        self.standalone.close(final=True)
        self.session.close()


class SessionLimitReached(Exception):
    pass


class SessionManager:
    """Creates, finds, expires and deletes sessions."""

    def __init__(self, server: MCPServer, store: SessionStore | None = None, events: EventStore | None = None, *,
                 idle_timeout: float = 1800.0, max_sessions: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.server = server
        self.store = store or InMemorySessionStore()
        self.events = events
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self._clock = clock
        self.live: dict[str, LiveSession] = {}
        self._reaper: asyncio.Task[None] | None = None

    async def create(self, principal: str | None = None) -> LiveSession:
        """A new session, bound to ``principal`` (the authenticated identity's key) if there is one."""
        if await self.store.count() >= self.max_sessions:
            # Make room from idle sessions before refusing.
            await self.expire_idle()
            if await self.store.count() >= self.max_sessions:
                raise SessionLimitReached
        state = SessionState(id=new_session_id(), principal=principal)
        await self.store.create(state)
        live = LiveSession(self.server, state, self.events)
        live.last_seen = self._clock()
        self.live[live.id] = live
        self._start_reaper()
        return live

    async def get(self, session_id: str) -> LiveSession | None:
        """The session, served from this process; None if the store no longer has it.

        The store is asked every time: a session ended elsewhere (DELETE or expiry on another
        replica sharing the store) must get 404 here too, and its state may have changed there.
        """
        state = await self.store.get(session_id)
        live = self.live.get(session_id)
        if state is None:
            if live is not None:
                del self.live[session_id]
                live.close()
            return None
        if live is None:
            live = LiveSession(self.server, state, self.events)
            self.live[session_id] = live
        elif live.session.state is not state:
            live.session.state = state
        live.last_seen = self._clock()
        return live

    async def save(self, live: LiveSession) -> None:
        live.last_seen = self._clock()
        await self.store.save(live.session.state)

    async def delete(self, session_id: str) -> bool:
        live = self.live.pop(session_id, None)
        if live is not None:
            live.close()
        found = await self.store.delete(session_id)
        if self.events is not None:
            await self.events.drop_session(session_id)
        return found or live is not None

    async def expire_idle(self) -> int:
        """Delete sessions idle for longer than the timeout; never one with work in flight."""
        horizon = self._clock() - self.idle_timeout
        idle = [sid for sid, live in self.live.items() if live.last_seen < horizon and not live.busy]
        for sid in idle:
            await self.delete(sid)
        if idle:
            log.info("expired %d idle sessions", len(idle))
        return len(idle)

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
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for sid in list(self.live):
            await self.delete(sid)
