"""Who holds each session's GET stream: ``StreamHolds``, and its in-memory implementation.

A handshake-era session has at most one GET stream open at a time, across every replica serving it (a
second one is refused with 409, a resumed one takes the stream over). Where sessions are shared, the hold
is kept where every replica sees it (``wiremcp.transports.redis.stream_holds``), and lasts a lease: the
replica serving the stream renews it while the stream is open, so a stream whose replica stopped frees the
session's GET after one lease at most.

The holds also remember which sessions listen: every session that opened a GET stream, until the session
ends (``forget``). A notification unrelated to any request (a resource updated, a list changed) is kept in
the GET stream of each of them whether a stream is open at that moment or not, so that one sent while the
client reconnects (to another replica, after a drain) is read when it resumes.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable


class StreamHolds(ABC):
    """Holds on sessions' GET streams, one holder per session, each lasting ``lease`` seconds unrenewed."""

    lease: float
    """Seconds a hold lasts unrenewed."""

    @abstractmethod
    async def hold(self, session_id: str, token: str, *, take_over: bool) -> bool:
        """Become the holder (``token``) of the session's GET stream; False if another holds it. ``take_over``:
        end any other holder's hold (it learns so at its next ``renew``) and hold it anyway."""

    @abstractmethod
    async def renew(self, session_id: str, token: str) -> bool:
        """Extend the hold for another lease; False once another holder took it over, or it lapsed."""

    @abstractmethod
    async def release(self, session_id: str, token: str) -> None:
        """Give the hold up, unless another holder took it over (never raises: called as a stream ends)."""

    @abstractmethod
    async def listening(self) -> list[str]:
        """The sessions that have held a GET stream (``hold``) and were not forgotten since, in any order."""

    @abstractmethod
    async def forget(self, session_id: str) -> None:
        """The session ended: it listens no more (never raises)."""


class InMemoryStreamHolds(StreamHolds):
    """The holds of one process's sessions."""

    def __init__(self, *, lease: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.lease = lease
        self._clock = clock
        self._holds: dict[str, tuple[str, float]] = {}
        """Session id -> (its holder's token, held until then)."""
        self._listening: set[str] = set()

    def _holder(self, session_id: str) -> str | None:
        held = self._holds.get(session_id)
        if held is None:
            return None
        if held[1] <= self._clock():
            del self._holds[session_id]
            return None
        return held[0]

    async def hold(self, session_id: str, token: str, *, take_over: bool) -> bool:
        if not take_over and self._holder(session_id) is not None:
            return False
        self._holds[session_id] = (token, self._clock() + self.lease)
        self._listening.add(session_id)
        return True

    async def renew(self, session_id: str, token: str) -> bool:
        if self._holder(session_id) != token:
            return False
        self._holds[session_id] = (token, self._clock() + self.lease)
        return True

    async def release(self, session_id: str, token: str) -> None:
        if self._holder(session_id) == token:
            del self._holds[session_id]

    async def listening(self) -> list[str]:
        return list(self._listening)

    async def forget(self, session_id: str) -> None:
        self._listening.discard(session_id)
        self._holds.pop(session_id, None)
