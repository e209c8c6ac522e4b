"""The one SSE writer of every transport and era: events (``event``: a JSON-RPC message or the priming
event, numbered with ``wiremcp.event_store.format_event_id`` when the stream is resumable; ``retry_hint``;
``endpoint_event`` for HTTP+SSE), encoded here once as bytes, and ``serve_sse``, which streams them with
keep-alive comments and counts the stream as open while it lasts (metrics, idle expiry).

sse-starlette (with starlette and anyio) is imported with the first stream, not with the server: a JSON
answer needs none of it, and it is ~20 ms of a cold start. ``leave_exit_to_drain`` and ``release_streams``
are the drain's side of sse-starlette's own exit handling, whenever it is imported.
"""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator
from typing import Any, Protocol

from wiremcp import jsonrpc
from wiremcp.event_store import format_event_id
from wiremcp.transports.asgi import Receive, Scope, SendASGI
from wiremcp.types import JSONObject

Event = bytes
"""One encoded SSE event, fields and the blank line that ends it (``\\r\\n`` line ends, as sse-starlette's)."""

_END = b"\r\n"
_LINES = re.compile(r"\r\n|\r|\n")
_drain_owns_exit = False


class OpenStreams(Protocol):
    """Whoever counts the SSE streams open (a session, the stateless handler)."""

    def stream_opened(self) -> None: ...

    def stream_closed(self) -> None: ...


def event(message: JSONObject | list[JSONObject] | None, stream: str | None = None, seq: int = 0,
          retry: int | None = None) -> Event:
    """One SSE event: ``message`` as ``event: message``, or (None) the priming event, empty, with ``retry``.
    With ``stream``, its id is ``stream`` and ``seq`` (a client resumes after it with ``Last-Event-ID``).
    The JSON is one line: the encoder escapes every line break inside strings."""
    head = b"id: " + format_event_id(stream, seq).encode() + _END if stream is not None else b""
    if message is None:
        return head + b"data: " + _END + (retry_hint(retry) if retry is not None else _END)
    return head + b"event: message" + _END + b"data: " + jsonrpc.dumps(message) + _END + _END


def retry_hint(retry: int) -> Event:
    """A stream closed before its end (SSE polling, a slow reader): when to come back, in milliseconds."""
    return b"retry: %d" % retry + _END + _END


def endpoint_event(url: str) -> Event:
    """HTTP+SSE (2024-11-05): where the client posts its messages."""
    data = b"".join(b"data: " + line.encode() + _END for line in _LINES.split(url))
    return b"event: endpoint" + _END + data + _END


async def serve_sse(events: AsyncIterator[Event], scope: Scope, receive: Receive, send: SendASGI, *,
                    keepalive: float, counted: OpenStreams) -> None:
    """Answer with an SSE stream of ``events``, a keep-alive comment every ``keepalive`` seconds of quiet."""
    response = _sse_starlette().EventSourceResponse(events, ping=keepalive)
    counted.stream_opened()
    try:
        await response(scope, receive, send)
    finally:
        counted.stream_closed()


def leave_exit_to_drain() -> None:
    """The drain has taken over the exit signals: sse-starlette must not end the streams itself at the signal
    (now if it is imported, else as it is)."""
    global _drain_owns_exit
    _drain_owns_exit = True
    if "sse_starlette.sse" in sys.modules:
        sys.modules["sse_starlette.sse"].AppStatus.disable_automatic_graceful_drain()


def release_streams() -> None:
    """The drain is over: sse-starlette ends whatever it still streams (nothing to do if it never streamed)."""
    if "sse_starlette.sse" in sys.modules:
        sys.modules["sse_starlette.sse"].AppStatus.should_exit = True


def _sse_starlette() -> Any:
    imported = "sse_starlette.sse" in sys.modules
    import sse_starlette.sse

    if not imported and _drain_owns_exit:
        sse_starlette.sse.AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]
    return sse_starlette.sse
