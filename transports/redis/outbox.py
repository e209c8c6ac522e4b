"""Events on their way to Redis: a request's stream keeps its order and has no silent gap, whatever Redis does.

Each stream's events go to Redis in order, through its ``Outbox``; ``Outboxes`` holds those of one process:

- An event that cannot be appended (Redis unreachable, a failover under way) is kept, with every later event
  of its stream behind it, and appended in order once Redis answers again; ``put`` returns at once then, so
  that a handler is never held up by an unreachable Redis. Rounds of retries come ``RETRY_FIRST`` apart at
  first, and up to ``RETRY_MOST`` apart while they fail. What is kept is bounded: ``max_bytes`` for the whole
  process, and ``max_age`` (an event older than that would have expired from Redis anyway).
- An event Redis took stays kept until enough replicas have it, when the store asks for that (``WAIT``): a
  failover that loses it from the primary then gets it again from here.
- When Redis shows a gap before an event (its primary took the events before it, and died before passing
  them on, and this process let them go), or when what is kept overflows, the stream ends with
  ``lost_answer``, a JSON-RPC error answering its request, appended just after what Redis has; nothing
  after it is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson

from wiremcp import jsonrpc
from wiremcp.errors import INTERNAL_ERROR
from wiremcp.types import JSONObject, RequestId
from wiremcp.unavailable import StoreUnavailable

log = logging.getLogger("wiremcp.events")

TAKEN = -1
"""What an append answers when its number was taken already (the first writer won, or it was appended before)."""
GAP = -2
"""What an append answers, less the stream's newest number, when events are missing between that number and
its own: ``GAP - newest`` (``gap_after`` reads it back)."""
MAX_KEPT_BYTES = 32 << 20
"""The most a process keeps of events on their way to Redis (their messages' bytes, plus ``ENTRY_BYTES`` each)."""
ENTRY_BYTES = 64
RETRY_FIRST = 0.05
"""Seconds before the first round of retries; each round that leaves as much kept doubles it, up to
``RETRY_MOST``."""
RETRY_MOST = 1.0
BATCH = 256
"""Kept events sent in one round trip, at most."""

EVENTS_LOST = "Events of this stream were lost while Redis failed over; the request's outcome is unknown"

Key = tuple[str, str]
"""A stream: (session id, stream name)."""


def gap_after(answer: int) -> int | None:
    """The stream's newest number if an append answered ``GAP - newest``; else None."""
    return GAP - answer if answer <= GAP else None


def lost_answer(request_id: RequestId) -> JSONObject:
    """The answer that ends a request's stream in which events were lost."""
    return jsonrpc.error(request_id, INTERNAL_ERROR, EVENTS_LOST, {"retryable": True, "eventsLost": True})


@dataclass(slots=True, eq=False)
class KeptEvent:
    """One event a process keeps until Redis has it."""

    seq: int | None
    """None: the stream's next number (``lost_answer``, which ends a stream)."""
    payload: bytes
    """The message, serialized (empty: the priming event)."""
    request_id: RequestId | None
    since: float
    final: bool = False
    """Nothing after it is stored."""
    appended: bool = False
    """Redis took it, but fewer replicas than the store asks for have it yet."""
    size: int = 0
    """What it counts for against ``max_bytes``."""

    def __post_init__(self) -> None:
        self.size = len(self.payload) + ENTRY_BYTES


Send = Callable[[Key, list[KeptEvent]], Awaitable[tuple[list[int], str | None]]]
"""Append events of one stream in order: for each, its number, ``TAKEN`` or ``GAP - newest``; and None if enough
replicas have them all, else what is missing. ``StoreUnavailable`` if Redis cannot be reached."""
SendOne = Callable[[Key, int, bytes, RequestId | None], Awaitable[int]]
"""Append one event, when what Redis takes counts as stored (no ``WAIT``): as ``Send`` answers for it."""


class Outbox:
    """A stream's events on their way to Redis, in order."""

    __slots__ = ("ended", "entries", "reported", "sent", "stalled", "writing")

    def __init__(self) -> None:
        self.entries: deque[KeptEvent] = deque()
        self.writing = False
        """A call is sending them: events for the stream queue behind it."""
        self.stalled = False
        """The last send failed or was not confirmed: events queue for the next round of retries."""
        self.reported = False
        """A stall was logged (its end is logged too)."""
        self.ended = False
        """The stream ends with ``lost_answer``: nothing after it is stored."""
        self.sent: asyncio.Event | None = None
        """Set when the current send ends (for the events queued behind it)."""


class Outboxes:
    """The outboxes of one process's streams, and the retries of those that stalled."""

    def __init__(self, send: Send, *, send_one: SendOne | None = None, max_age: float,
                 max_bytes: int = MAX_KEPT_BYTES) -> None:
        """``send_one``: for an event that has nothing before it on its way, and needs no confirmation."""
        self._send_events = send
        self._send_one = send_one
        self._alone: set[Key] = set()
        """Streams with one event on its way through ``send_one``: the next ones queue behind it."""
        self._max_age = max_age
        self._max_bytes = max_bytes
        self._outboxes: dict[Key, Outbox] = {}
        self._bytes = 0
        self._retrying: asyncio.Task[None] | None = None
        self._retry_now = asyncio.Event()
        self._closed = False

    @property
    def kept(self) -> int:
        """Events kept now."""
        return sum(len(outbox.entries) for outbox in self._outboxes.values())

    def waiting(self, key: Key) -> list[KeptEvent]:
        """The stream's events kept now, in order (Redis may have some of them already)."""
        outbox = self._outboxes.get(key)
        return list(outbox.entries) if outbox is not None else []

    async def put(self, key: Key, seq: int, payload: bytes, request_id: RequestId | None) -> None:
        """Send one event after the stream's others; return once Redis has it, or once it is kept."""
        outbox = self._outboxes.get(key)
        if outbox is None and self._send_one is not None and key not in self._alone:
            await self._put_alone(key, seq, payload, request_id)
            return
        if outbox is None:
            outbox = self._outboxes[key] = Outbox()
        elif outbox.ended:
            return
        entry = KeptEvent(seq, payload, request_id, time.monotonic())
        if not self._admit(key, outbox, entry):
            if not outbox.writing and not outbox.stalled and key not in self._alone:
                await self._send(key, outbox)  # the error that now ends the stream
            return
        outbox.entries.append(entry)
        self._bytes += entry.size
        if outbox.stalled:
            return  # the next round of retries takes it, in order
        if outbox.writing or key in self._alone:
            if outbox.sent is None:
                outbox.sent = asyncio.Event()
            await outbox.sent.wait()
            return
        await self._send(key, outbox)

    async def _put_alone(self, key: Key, seq: int, payload: bytes, request_id: RequestId | None) -> None:
        """The common case, an event with nothing before it on its way: one call, and no bookkeeping unless it
        fails, finds a gap, or others queued behind it meanwhile."""
        send_one = self._send_one
        assert send_one is not None
        self._alone.add(key)
        failure = None
        try:
            answer = await send_one(key, seq, payload, request_id)
        except StoreUnavailable as exc:
            answer, failure = TAKEN, str(exc)
        except BaseException:  # cancelled on its way (Redis may have it or not): the retries send it again
            self._alone.discard(key)
            outbox = self._outboxes.setdefault(key, Outbox())
            entry = KeptEvent(seq, payload, request_id, time.monotonic())
            if self._admit(key, outbox, entry):
                outbox.entries.appendleft(entry)
                self._bytes += entry.size
            self._stall(key, outbox, "its sender was cancelled")
            self._release(key, outbox)
            raise
        self._alone.discard(key)
        behind = self._outboxes.get(key)
        newest = gap_after(answer)
        if failure is None and newest is None and behind is None:
            return
        outbox = behind if behind is not None else self._outboxes.setdefault(key, Outbox())
        if newest is not None:
            self._gap(key, outbox, seq, newest, request_id)
        elif failure is not None:
            entry = KeptEvent(seq, payload, request_id, time.monotonic())
            if self._admit(key, outbox, entry):
                outbox.entries.appendleft(entry)
                self._bytes += entry.size
                self._stall(key, outbox, failure)
                self._release(key, outbox)
                return
        await self._send(key, outbox)  # what queued behind it, or the error that ends the stream

    def drop(self, session_id: str) -> None:
        """Forget what is kept for a session's streams."""
        for key in [key for key in self._outboxes if key[0] == session_id]:
            outbox = self._outboxes.pop(key)
            for entry in outbox.entries:
                self._bytes -= entry.size
            outbox.entries.clear()
            outbox.ended = True

    # -- sending -------------------------------------------------------------------------------------------
    async def _send(self, key: Key, outbox: Outbox) -> None:
        """Send the outbox's events, in order, until it is empty, or a send fails or is not confirmed (then
        the retries take over)."""
        outbox.writing = True
        try:
            while outbox.entries and not outbox.stalled:
                entries = outbox.entries
                batch = [entries[0]] if len(entries) == 1 else list(itertools.islice(entries, BATCH))
                try:
                    results, unconfirmed = await self._send_events(key, batch)
                except StoreUnavailable as exc:
                    self._stall(key, outbox, str(exc))
                    break
                if self._settle(key, outbox, batch, results):
                    continue  # the stream now ends with lost_answer: send that
                if unconfirmed is not None:
                    self._stall(key, outbox, unconfirmed)
                    break
                if outbox.reported:
                    log.info("the kept events of stream %s of session %s are in Redis", key[1], key[0])
                    outbox.reported = False
                for entry in batch:
                    if outbox.entries and outbox.entries[0] is entry:
                        outbox.entries.popleft()
                        self._bytes -= entry.size
        except BaseException:  # cancelled: what is left goes to the retries
            if outbox.entries and not outbox.stalled:
                self._stall(key, outbox, "its sender was cancelled")
            raise
        finally:
            outbox.writing = False
            self._release(key, outbox)

    def _release(self, key: Key, outbox: Outbox) -> None:
        """A send ended: the events that waited behind it return, and an empty outbox goes."""
        if outbox.sent is not None:
            outbox.sent.set()
            outbox.sent = None
        if not outbox.entries and self._outboxes.get(key) is outbox:
            del self._outboxes[key]

    def _settle(self, key: Key, outbox: Outbox, batch: list[KeptEvent], results: list[int]) -> bool:
        """Mark what Redis took; True if a gap was found (the stream then ends with ``lost_answer``)."""
        for entry, answer in zip(batch, results, strict=True):
            if (newest := gap_after(answer)) is not None:
                self._gap(key, outbox, entry.seq, newest, entry.request_id)
                return True
            entry.appended = True
        return False

    def _gap(self, key: Key, outbox: Outbox, seq: int | None, newest: int, request_id: RequestId | None) -> None:
        log.warning("events %d to %d of stream %s of session %s are missing from Redis (lost in a failover); the "
                    "stream ends with an error", newest + 1, (seq or 0) - 1, key[1], key[0])
        self._end(key, outbox, request_id)

    def _admit(self, key: Key, outbox: Outbox, entry: KeptEvent) -> bool:
        """Room for one more event: the kept ones Redis took already (not confirmed by enough replicas) are let
        go first; if there is still none, the stream ends with ``lost_answer``."""
        if self._bytes + entry.size <= self._max_bytes:
            return True
        let_go = 0
        for box in self._outboxes.values():
            while box.entries and box.entries[0].appended and not box.writing:
                self._bytes -= box.entries.popleft().size
                let_go += 1
        if let_go:
            log.warning("let go of %d events Redis took before enough replicas had them (no room to keep more)",
                        let_go)
        if self._bytes + entry.size <= self._max_bytes:
            return True
        log.warning("no room to keep the events of stream %s of session %s until Redis has them; the stream ends "
                    "with an error", key[1], key[0])
        self._end(key, outbox, entry.request_id)
        return False

    def _end(self, key: Key, outbox: Outbox, request_id: RequestId | None) -> None:
        """Drop the stream's kept events: it ends with ``lost_answer`` (just after what Redis has), and nothing
        after it is stored. A stream that answers no request just stops being stored."""
        for entry in outbox.entries:
            self._bytes -= entry.size
        outbox.entries.clear()
        outbox.ended = True
        if request_id is None:
            return
        answer = KeptEvent(None, orjson.dumps(lost_answer(request_id)), request_id, time.monotonic(), final=True)
        outbox.entries.append(answer)
        self._bytes += answer.size

    def _stall(self, key: Key, outbox: Outbox, why: str) -> None:
        if not outbox.reported:
            outbox.reported = True
            log.warning("stream %s of session %s: its events are kept until Redis has them (%s)", key[1], key[0],
                        why)
        outbox.stalled = True
        if self._closed:
            return
        if self._retrying is None or self._retrying.done():
            self._retrying = asyncio.get_running_loop().create_task(self._retry())
        else:
            self._retry_now.set()

    # -- retrying ------------------------------------------------------------------------------------------
    async def _retry(self) -> None:
        """Send the stalled outboxes again, all at once, until none is left; between rounds that leave as much
        kept, wait longer each time. Events older than ``max_age`` are dropped: Redis would have expired them
        (what came after them then finds the gap)."""
        delay = RETRY_FIRST
        while True:
            self._retry_now.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._retry_now.wait(), delay)
            self._expire()
            stalled = [(key, box) for key, box in self._outboxes.items()
                       if box.stalled and not box.writing and key not in self._alone]
            if not stalled:
                return
            for _, box in stalled:
                box.stalled = False
            before = self.kept
            try:
                await asyncio.gather(*(self._send(key, box) for key, box in stalled))
            except Exception:  # never let the retries die: what they keep would be stuck
                log.exception("retrying the kept events failed")
            delay = RETRY_FIRST if self.kept < before else min(RETRY_MOST, delay * 2)

    def _expire(self) -> None:
        horizon = time.monotonic() - self._max_age
        for key, box in list(self._outboxes.items()):
            while box.entries and box.entries[0].since < horizon and not box.writing:
                self._bytes -= box.entries.popleft().size
            if not box.entries and not box.writing:
                del self._outboxes[key]

    async def close(self) -> None:
        """Stop retrying, after one last attempt to send what is kept (each send bounded by the Redis timeout)."""
        self._closed = True
        await self._stop_retrying()
        stalled = [(key, box) for key, box in self._outboxes.items() if not box.writing and key not in self._alone]
        for _, box in stalled:
            box.stalled = False
        with contextlib.suppress(Exception):
            await asyncio.gather(*(self._send(key, box) for key, box in stalled))
        entries = [entry for box in self._outboxes.values() for entry in box.entries]
        if unstored := sum(not entry.appended for entry in entries):
            log.warning("%d events were never stored: Redis did not take them before shutdown", unstored)
        if unconfirmed := len(entries) - unstored:
            log.warning("%d events Redis took were not confirmed by enough replicas before shutdown", unconfirmed)

    async def _stop_retrying(self) -> None:
        task, self._retrying = self._retrying, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
