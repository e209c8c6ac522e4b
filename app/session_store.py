"""The session store: where handshake-era session state lives, the ``SessionStore`` interface and its
in-memory implementation.

Any process holding the store can serve any session: ``SessionState`` is plain data, and the transports'
``SessionManager`` keeps the live parts (requests in flight, open streams) beside it.
``wiremcp.transports.redis.sessions`` shares the store between replicas.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import Final, Literal

from wiremcp.state import SessionState


class _Server(enum.Enum):
    SERVER = "the server"


SERVER: Final = _Server.SERVER
"""Who asks for a session when the server itself does (to write a change into it): every session is its own."""
Asker = str | None | Literal[_Server.SERVER]
"""Who asks for a session: the caller's identity (``Principal.key``; None: an anonymous caller), or ``SERVER``."""


def serves(state: SessionState, asker: Asker) -> bool:
    """Whether ``asker`` may use the session: its owner (the same identity, or both anonymous), or the server.
    Anyone else is answered as if the session did not exist, and changes nothing about it."""
    return asker is SERVER or state.owner == asker


class SessionStore(ABC):
    """Where session state lives; any process holding the store can serve any session."""

    self_expiring = False
    """True when the store ends idle sessions itself (Redis TTLs); this process then only forgets
    its own copies of idle sessions instead of deleting them for everyone."""

    @abstractmethod
    async def create(self, state: SessionState, limit: int | None = None) -> bool:
        """Add a session unless ``limit`` sessions exist already (False then)."""

    @abstractmethod
    async def get(self, session_id: str, asker: Asker = SERVER) -> SessionState | None:
        """The session's state, None if it is gone. A lookup restarts a self-expiring store's idle clock, only
        for an ``asker`` it ``serves``: a stranger's lookup (refused by the caller) leaves the session as it was."""

    @abstractmethod
    async def save(self, state: SessionState) -> None:
        """Persist changed state and restart the idle clock."""

    @abstractmethod
    async def delete(self, session_id: str) -> bool:
        """Forget a session; False if it was not there."""

    @abstractmethod
    async def count(self) -> int: ...

    async def touch(self, session_id: str) -> None:  # noqa: B027 - optional: only self-expiring stores need it
        """Restart the idle clock of a session that is busy without requests (a long call)."""

    def compact(self) -> None:  # noqa: B027 - optional: only stores holding sessions in this process need it
        """Shrink what this process holds to the sessions left (after many ended at once)."""


class InMemorySessionStore(SessionStore):
    def __init__(self) -> None:
        self._states: dict[str, SessionState] = {}

    async def create(self, state: SessionState, limit: int | None = None) -> bool:
        assert state.id is not None
        if limit is not None and len(self._states) >= limit:
            return False
        self._states[state.id] = state
        return True

    async def get(self, session_id: str, asker: Asker = SERVER) -> SessionState | None:
        return self._states.get(session_id)  # no clock here: the manager keeps the idle time

    async def save(self, state: SessionState) -> None:
        assert state.id is not None
        self._states[state.id] = state

    async def delete(self, session_id: str) -> bool:
        return self._states.pop(session_id, None) is not None

    async def count(self) -> int:
        return len(self._states)

    def compact(self) -> None:
        # A dict keeps the table of its largest size otherwise. Rebuilt in place: a new dict, made among the
        # memory just freed, would hold the arena it landed in for as long as the store lives.
        left = dict(self._states)
        self._states.clear()
        self._states.update(left)
