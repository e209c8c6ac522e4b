"""The one SSE writer of every transport and era: events (``event``: a JSON-RPC message or the priming
event, numbered with ``wiremcp.event_store.format_event_id`` when the stream is resumable; ``retry_hint``;
``endpoint_event`` for HTTP+SSE), and ``serve_sse``, which streams them with keep-alive comments and
counts the stream as open while it lasts (metrics, idle expiry).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from sse_starlette import EventSourceResponse, ServerSentEvent

from wiremcp import jsonrpc
from wiremcp.event_store import format_event_id
from wiremcp.transports.asgi import Receive, Scope, SendASGI
from wiremcp.types import JSONObject

Event = ServerSentEvent


class OpenStreams(Protocol):
    """Whoever counts the SSE streams open (a session, the stateless handler)."""

    def stream_opened(self) -> None: ...

    def stream_closed(self) -> None: ...


def event(message: JSONObject | list[JSONObject] | None, stream: str | None = None, seq: int = 0,
          retry: int | None = None) -> Event:
    """One SSE event: ``message`` as ``event: message``, or (None) the priming event, empty, with ``retry``.
    With ``stream``, its id is ``stream`` and ``seq`` (a client resumes after it with ``Last-Event-ID``)."""
    ident = format_event_id(stream, seq) if stream is not None else None
    if message is None:
        return ServerSentEvent(data="", id=ident, retry=retry)
    return ServerSentEvent(data=jsonrpc.dumps(message).decode(), id=ident, event="message")


def retry_hint(retry: int) -> Event:
    """A stream closed before its end (SSE polling, a slow reader): when to come back, in milliseconds."""
    return ServerSentEvent(retry=retry)


def endpoint_event(url: str) -> Event:
    """HTTP+SSE (2024-11-05): where the client posts its messages."""
    return ServerSentEvent(data=url, event="endpoint")


async def serve_sse(events: AsyncIterator[Event], scope: Scope, receive: Receive, send: SendASGI, *,
                    keepalive: float, counted: OpenStreams) -> None:
    """Answer with an SSE stream of ``events``, a keep-alive comment every ``keepalive`` seconds of quiet."""
    counted.stream_opened()
    try:
        await EventSourceResponse(events, ping=keepalive)(scope, receive, send)
    finally:
        counted.stream_closed()
