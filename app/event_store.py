"""The event store behind resumable SSE: the ``EventStore`` interface, its event ids, and a bounded
in-memory implementation (``wiremcp.transports.redis.events`` shares the streams between replicas).

Every event sent on a handshake-era SSE stream gets an id ``<stream>_<seq>``: unique
across the session, and naming the stream it belongs to, so that a ``GET`` with
``Last-Event-ID`` replays that stream and no other.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass

import orjson

from wiremcp.types import JSONObject, RequestId


@dataclass(slots=True)
class StoredEvent:
    stream: str
    seq: int
    message: JSONObject | None  # None: the priming event (id, empty data)
    owner: str | None = None
    """The replica that appended it (shared stores only)."""
    request_id: RequestId | None = None
    """The request whose response stream it belongs to, when known (shared stores only)."""

    @property
    def id(self) -> str:
        return format_event_id(self.stream, self.seq)


def format_event_id(stream: str, seq: int) -> str:
    return f"{stream}_{seq}"


MAX_SEQ = (1 << 63) - 2
"""The largest event number: every store can hold it (Redis stream ids are ``0-<seq + 1>``, 64-bit)."""
_EVENT_ID = re.compile(r"([\x21-\x7e]{1,190})_([0-9]{1,19})")


def parse_event_id(event_id: str) -> tuple[str, int] | None:
    """(stream, seq) of an event id as this server writes them, or None for anything else (a client's
    ``Last-Event-ID`` is checked here, once, before any store sees it)."""
    match = _EVENT_ID.fullmatch(event_id)
    if match is None or int(match.group(2)) > MAX_SEQ:
        return None
    return match.group(1), int(match.group(2))


class EventStore(ABC):
    """Keeps the events of each session's streams so that a client can resume after a disconnect."""

    shared = False
    """True when other processes append to and read the same streams (Redis): readers then follow
    the store rather than this process's own deliveries."""

    @abstractmethod
    async def append(self, session_id: str, stream: str, seq: int, message: JSONObject | None,
                     request_id: RequestId | None = None) -> None:
        """Store one event; ``seq`` increases by one per stream. A ``seq`` already taken is ignored
        (shared stores: the first writer wins). ``request_id``: the request the stream answers."""

    async def append_next(self, session_id: str, stream: str, message: JSONObject | None, *,
                          once: str | None = None) -> int:
        """Store one event under the stream's next number, which is returned (for streams with
        several writers, such as a session's GET stream written by every replica). ``once``: an id for an
        append that may be tried again after a failure whose outcome is unknown (a store that went away
        mid-answer); an event with the same id among the stream's newest is not stored twice. (A store in this
        process never half-fails, so it needs no id.)"""
        seq = await self.last(session_id, stream) + 1
        await self.append(session_id, stream, seq, message)
        return seq

    async def last(self, session_id: str, stream: str) -> int:
        """The number of the stream's newest event; -1 if it has none."""
        return -1

    @abstractmethod
    async def after(self, session_id: str, stream: str, seq: int) -> list[StoredEvent] | None:
        """The stream's events after ``seq``; None if ``seq`` is unknown or already evicted."""

    @abstractmethod
    async def drop_session(self, session_id: str) -> None:
        """Forget everything stored for a session."""

    async def close(self) -> None:
        """Stop any background work (a shared store's retries of events not stored yet), bounded in time."""
        return


class InMemoryEventStore(EventStore):
    """Bounded by event count, bytes and age; the oldest events are evicted first."""

    def __init__(self, *, max_events: int = 100_000, max_bytes: int = 64 << 20, max_age: float = 600.0) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.max_age = max_age
        self._streams: dict[tuple[str, str], _Stream] = {}
        self._by_session: dict[str, set[str]] = {}
        # Global append order for eviction; entries of dropped sessions are skipped lazily.
        self._order: deque[tuple[_Stream, float]] = deque()
        self._count = 0
        self._bytes = 0

    @property
    def size(self) -> tuple[int, int]:
        """(events, bytes) held now."""
        return self._count, self._bytes

    async def append(self, session_id: str, stream: str, seq: int, message: JSONObject | None,
                     request_id: RequestId | None = None) -> None:
        key = (session_id, stream)
        entry = self._streams.get(key)
        if entry is None:
            entry = self._streams[key] = _Stream()
            self._by_session.setdefault(session_id, set()).add(stream)
        elif seq <= entry.last:
            return  # taken: the first event under a number stays
        size = 64 + (len(orjson.dumps(message)) if message is not None else 0)
        entry.events.append((StoredEvent(stream, seq, message), size))
        entry.last = seq
        self._order.append((entry, time.monotonic()))
        self._count += 1
        self._bytes += size
        self._evict()

    def _evict(self) -> None:
        horizon = time.monotonic() - self.max_age
        order = self._order
        while order and (self._count > self.max_events or self._bytes > self.max_bytes or order[0][1] < horizon):
            entry, _ = order.popleft()
            if entry.dropped or not entry.events:
                continue
            event, size = entry.events.popleft()
            entry.evicted_upto = event.seq
            self._count -= 1
            self._bytes -= size

    async def after(self, session_id: str, stream: str, seq: int) -> list[StoredEvent] | None:
        self._evict()
        entry = self._streams.get((session_id, stream))
        if entry is None or seq > entry.last or seq < entry.evicted_upto:
            return None
        return [event for event, _ in entry.events if event.seq > seq]

    async def last(self, session_id: str, stream: str) -> int:
        entry = self._streams.get((session_id, stream))
        return -1 if entry is None else entry.last

    async def drop_session(self, session_id: str) -> None:
        for stream in self._by_session.pop(session_id, ()):
            entry = self._streams.pop((session_id, stream), None)
            if entry is not None:
                entry.dropped = True
                self._count -= len(entry.events)
                self._bytes -= sum(size for _, size in entry.events)
                entry.events.clear()
        if len(self._order) > 2 * self._count + 1024:  # compact the stale entries, amortized
            self._order = deque(item for item in self._order if not item[0].dropped)


class _Stream:
    __slots__ = ("dropped", "events", "evicted_upto", "last")

    def __init__(self) -> None:
        self.events: deque[tuple[StoredEvent, int]] = deque()
        self.last = -1
        self.evicted_upto = -1
        self.dropped = False
