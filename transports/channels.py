"""One SSE stream of a session: numbered events, stored for replay, delivered to at most one live reader."""

from __future__ import annotations

import asyncio
import logging

from wiremcp.event_store import EventStore
from wiremcp.types import JSONObject, RequestId
from wiremcp.unavailable import StoreUnavailable

log = logging.getLogger("wiremcp.http")

READER_QUEUE = 1024

Item = tuple[int, JSONObject | None] | None
"""(seq, message) for an event, message None for the priming event; None alone ends the reader."""


class EventChannel:
    """Events of one stream (a POST's response stream, or the session's standalone GET stream)."""

    __slots__ = ("_reader", "_store", "_tasks", "finished", "request_id", "seq", "session_id", "stream")

    def __init__(self, session_id: str, stream: str, store: EventStore | None,
                 request_id: RequestId | None = None) -> None:
        self.session_id = session_id
        self.stream = stream
        self.request_id = request_id
        self._store = store
        self.seq = 0
        self._reader: asyncio.Queue[Item] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.finished = False

    async def emit(self, message: JSONObject | None, *, final: bool = False) -> str:
        """Number, store and deliver one event; returns its id."""
        seq = self.seq
        self.seq += 1
        self._deliver((seq, message))
        if final:
            self.finished = True
            self._deliver(None)
        if self._store is not None:
            try:
                await self._store.append(self.session_id, self.stream, seq, message, self.request_id)
            except StoreUnavailable as exc:
                # Delivered live all the same; only a resume after this point would miss it. (A store that
                # keeps what it cannot store yet, as Redis's does, never gets here.)
                log.warning("event %s_%d was not stored: %s", self.stream, seq, exc)
        if self._reader is not None and self._reader.qsize() >= self._reader.maxsize // 2:
            await asyncio.sleep(0)  # a handler sending a burst without yielding: let the reader catch up
        return f"{self.stream}_{seq}"

    async def send(self, message: JSONObject) -> None:
        """``emit`` as a ``Send`` callable (a message to the client on this stream)."""
        await self.emit(message)

    def emit_later(self, message: JSONObject) -> None:
        """``emit`` from synchronous code; events keep their order."""
        task = asyncio.get_running_loop().create_task(self._send_logged(message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_logged(self, message: JSONObject) -> None:
        try:
            await self.send(message)
        except StoreUnavailable as exc:
            log.warning("a message for stream %s was lost: %s", self.stream, exc)

    def _deliver(self, item: Item) -> None:
        reader = self._reader
        if reader is None:
            return
        try:
            reader.put_nowait(item)
        except asyncio.QueueFull:
            # A reader that does not keep up is cut off; it can resume from the store.
            log.warning("SSE reader of stream %s is too slow; closing it", self.stream)
            self._reader = None
            _end(reader)

    @property
    def attached(self) -> bool:
        return self._reader is not None

    def attach(self, room: int = 0) -> asyncio.Queue[Item]:
        """Become the live reader (replacing any other, which is ended); ``room``: events known to be coming."""
        if self._reader is not None:
            _end(self._reader)
        reader: asyncio.Queue[Item] = asyncio.Queue(READER_QUEUE + room)
        self._reader = reader
        if self.finished:
            reader.put_nowait(None)
        return reader

    def detach(self, reader: asyncio.Queue[Item]) -> None:
        if self._reader is reader:
            self._reader = None

    def close(self, *, final: bool = False) -> None:
        """End the live reader, if any: the stream is closed early (resumable), or with ``final`` for good."""
        if final:
            self.finished = True
        if self._reader is not None:
            _end(self._reader)
            self._reader = None


def _end(reader: asyncio.Queue[Item]) -> None:
    if reader.full():
        reader.get_nowait()
    reader.put_nowait(None)


class SharedChannel(EventChannel):
    """A stream that several replicas write (a session's GET stream over a shared store): the store
    numbers its events, and readers follow the store instead of this process's deliveries."""

    __slots__ = ("_lock",)

    def __init__(self, session_id: str, stream: str, store: EventStore) -> None:
        super().__init__(session_id, stream, store)
        self._lock: asyncio.Lock | None = None

    async def emit(self, message: JSONObject | None, *, final: bool = False) -> str:
        store = self._store
        assert store is not None
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # this process's messages keep their order
            seq = await store.append_next(self.session_id, self.stream, message)
        return f"{self.stream}_{seq}"
