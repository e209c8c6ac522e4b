"""Following a stream in a shared event store: how a replica serves an SSE stream that other replicas
write (a session's GET stream) or wrote (a request's stream resumed after its replica went away).

The follower reads the store after the last event it sent, then waits for a wake-up (any replica's
append publishes one), its stop signal, or the poll interval, and reads again.

The rule for a request whose replica died: it is not run again (a tool may have had effects), and it
is not left hanging. Its stream keeps every event produced before the replica stopped; once that
replica's lease has lapsed, the follower appends a JSON-RPC error answering the request
(-32603, ``data.retryable: true``), so the client learns the outcome and may retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from wiremcp import jsonrpc
from wiremcp.errors import INTERNAL_ERROR, INVALID_REQUEST
from wiremcp.event_store import EventStore, StoredEvent
from wiremcp.protocol import at_least
from wiremcp.replica_link import ReplicaLink
from wiremcp.replicas import replica_of
from wiremcp.stream_holds import StreamHolds
from wiremcp.transports import sse
from wiremcp.transports.asgi import Receive, Scope, SendASGI, respond_error
from wiremcp.types import JSONObject, RequestId
from wiremcp.unavailable import StoreUnavailable

if TYPE_CHECKING:
    from wiremcp.transports.live_session import LiveSession
    from wiremcp.transports.sessions import SessionManager

STANDALONE_STREAM = "get"
PRIMING_SINCE = "2025-11-25"

ORPHANED = "The replica serving this request stopped before it finished; the request was not completed"


class Follower:
    """The stop switch of one follower (closing a stream early: drain, a deleted session, a newer GET)."""

    __slots__ = ("stopped", "wake")

    def __init__(self) -> None:
        self.wake = asyncio.Event()
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True
        self.wake.set()


def is_response(message: JSONObject | None) -> bool:
    return message is not None and "method" not in message and ("result" in message or "error" in message)


def orphaned_answer(request_id: RequestId, owner: str) -> JSONObject:
    """The answer of a request whose replica's life (``owner``) ended before it finished."""
    return jsonrpc.error(request_id, INTERNAL_ERROR, ORPHANED, {"replica": replica_of(owner), "retryable": True})


async def follow(events: EventStore, link: ReplicaLink, session_id: str, stream: str, first: list[StoredEvent],
                 after: int, follower: Follower, *, request_stream: bool, holds: StreamHolds | None = None,
                 hold: str | None = None, poll: float = 1.0) -> AsyncIterator[tuple[int, JSONObject | None]]:
    """Events of ``stream`` after ``after`` (``first``: those already read), live, until the stream's
    answer (a request stream), the stop switch, a lost hold (a GET stream: ``hold``, its token in
    ``holds``), or a store failure."""
    last = after
    owner: str | None = None
    request_id: RequestId | None = None
    batch = first
    with link.watch(session_id, follower.wake):
        try:
            while True:
                for event in batch:
                    owner = event.owner or owner
                    request_id = event.request_id if event.request_id is not None else request_id
                    if event.seq <= last:
                        if request_stream and is_response(event.message):
                            return  # answered where the client resumes: nothing more comes
                        continue
                    last = event.seq
                    yield event.seq, event.message
                    if request_stream and is_response(event.message):
                        return
                if follower.stopped:
                    return
                if holds is not None and hold is not None and not await holds.renew(session_id, hold):
                    return  # another GET took the stream over
                if request_stream and owner is not None and not await link.alive(owner):
                    if request_id is None:
                        return
                    await events.append(session_id, stream, last + 1, orphaned_answer(request_id, owner))
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(follower.wake.wait(), poll)
                follower.wake.clear()
                if follower.stopped:
                    return
                # One event back, so that the newest one (its producer, its request) is always known;
                # unless it expired (a quiet stream): then what came after it.
                batch = (await events.after(session_id, stream, max(last - 1, -1))
                         or await events.after(session_id, stream, last) or [])
        except StoreUnavailable:
            return  # the client reconnects with Last-Event-ID once Redis is back
        finally:
            if holds is not None and hold is not None:
                await holds.release(session_id, hold)


class SharedStreams:
    """The handshake-era GET stream and resumed streams when sessions live in a shared store."""

    def __init__(self, manager: SessionManager, *, retry_ms: int, keepalive: float) -> None:
        assert manager.link is not None
        self.manager = manager
        self.link = manager.link
        self.events = manager.events
        self.holds = manager.backend.stream_holds
        self.retry_ms = retry_ms
        self.keepalive = keepalive

    async def get(self, live: LiveSession, scope: Scope, receive: Receive, send: SendASGI) -> None:
        """A new GET stream: one per session across all replicas (409 for a second one)."""
        hold = secrets.token_hex(8)
        if not await self.holds.hold(live.id, hold, take_over=False):
            await respond_error(send, 409, INVALID_REQUEST, "Conflict: this session already has a GET stream open")
            return
        if at_least(live.version, PRIMING_SINCE):
            after = await self.events.append_next(live.id, STANDALONE_STREAM, None) - 1
        else:
            after = await self.events.last(live.id, STANDALONE_STREAM)
        await self._serve(live, STANDALONE_STREAM, [], after, hold, scope, receive, send)

    async def resume(self, live: LiveSession, stream: str, seq: int, scope: Scope, receive: Receive,
                     send: SendASGI) -> None:
        """``Last-Event-ID`` for a stream this process does not write: replay, then follow."""
        stored = await self.events.after(live.id, stream, seq - 1 if seq > 0 else seq)
        if stored is None:
            await respond_error(send, 400, INVALID_REQUEST,
                                "Bad Request: Last-Event-ID is unknown or its events have expired")
            return
        hold = None
        if stream == STANDALONE_STREAM:
            hold = secrets.token_hex(8)
            await self.holds.hold(live.id, hold, take_over=True)  # the resuming client replaces its old one
        await self._serve(live, stream, stored, seq, hold, scope, receive, send)

    async def _serve(self, live: LiveSession, stream: str, first: list[StoredEvent], after: int, hold: str | None,
                     scope: Scope, receive: Receive, send: SendASGI) -> None:
        retry = self.retry_ms
        polling = at_least(live.version, PRIMING_SINCE)
        follower = Follower()
        standalone = stream == STANDALONE_STREAM
        link, events = self.link, self.events

        async def stream_events() -> AsyncIterator[sse.Event]:
            live.followers.add(follower)
            answered = False
            try:
                async for seq, message in follow(events, link, live.id, stream, first, after, follower,
                                                 request_stream=not standalone, holds=self.holds, hold=hold,
                                                 poll=min(1.0, link.lease / 3)):
                    answered = not standalone and is_response(message)
                    yield sse.event(message, stream, seq, retry)
                if polling and not answered:
                    yield sse.retry_hint(retry)  # closed early: say when to come back
            finally:
                live.followers.discard(follower)

        await sse.serve_sse(stream_events(), scope, receive, send, keepalive=self.keepalive, counted=live)
