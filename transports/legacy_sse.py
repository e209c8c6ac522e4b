"""The deprecated HTTP+SSE transport of 2024-11-05, for old hosts.

``GET /sse`` opens a stream whose first event (``endpoint``) names the URL to POST
messages to; every message from the server (responses included) then travels on
that stream. Sessions come from the same ``SessionManager`` as Streamable HTTP.

On SIGTERM (``wiremcp.transports.drain``) a new stream is refused (503), the calls in flight get the
drain's time to finish, or are answered with the shutdown's retryable error, and each stream ends once
it has carried their answers (``close_streams``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from urllib.parse import parse_qs

from wiremcp.connection import Connection
from wiremcp.errors import INVALID_REQUEST
from wiremcp.refusals import SHUTTING_DOWN, TOO_MANY_SESSIONS
from wiremcp.transports import sse
from wiremcp.transports.asgi import (
    ClientDisconnected,
    Receive,
    Scope,
    SendASGI,
    read_json_body,
    refuse,
    respond,
    respond_error,
)
from wiremcp.transports.identity import caller
from wiremcp.transports.sessions import SessionLimitReached, SessionManager
from wiremcp.transports.streamable_http import HttpOptions
from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.legacy_sse")

QUEUE = 1024


class LegacySSEEndpoints:
    """Serves ``GET <sse_path>`` and ``POST <messages_path>?session_id=...``."""

    def __init__(self, manager: SessionManager, *, messages_path: str, options: HttpOptions | None = None) -> None:
        self.manager = manager
        self.messages_path = messages_path
        self.options = options or HttpOptions()
        self._connections: dict[str, tuple[Connection, asyncio.Queue[JSONObject | list[JSONObject] | None]]] = {}

    async def stream(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if scope["method"] != "GET":
            await respond_error(send, 405, INVALID_REQUEST, "Method Not Allowed", headers=[(b"allow", b"GET")])
            return
        if self.manager.draining:
            await refuse(send, SHUTTING_DOWN)
            return
        try:
            live = await self.manager.create(caller(scope).owner)
        except SessionLimitReached:
            await refuse(send, TOO_MANY_SESSIONS)
            return
        queue: asyncio.Queue[JSONObject | list[JSONObject] | None] = asyncio.Queue(QUEUE)

        async def write(message: JSONObject | list[JSONObject]) -> None:
            await queue.put(message)

        def post(message: JSONObject) -> None:
            if not queue.full():
                queue.put_nowait(message)

        live.session.post_to(post)  # unrelated notifications share the one stream
        connection = Connection(live.session, write)
        self._connections[live.id] = (connection, queue)
        root = scope.get("root_path", "")
        endpoint = f"{root}{self.messages_path}?session_id={live.id}"

        async def events() -> AsyncIterator[sse.Event]:
            try:
                yield sse.endpoint_event(endpoint)
                while (message := await queue.get()) is not None:
                    yield sse.event(message)
            finally:
                self._connections.pop(live.id, None)
                await connection.close()
                await self.manager.delete(live.id)

        await sse.serve_sse(events(), scope, receive, send, keepalive=self.options.sse_keepalive, counted=live)

    async def message(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if scope["method"] != "POST":
            await respond_error(send, 405, INVALID_REQUEST, "Method Not Allowed", headers=[(b"allow", b"POST")])
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        sid = (query.get("session_id") or [None])[0]
        if not sid:
            await respond_error(send, 400, INVALID_REQUEST, "Bad Request: session_id is required")
            return
        who = caller(scope)  # read once, for the whole request
        entry = self._connections.get(sid)
        if entry is None or entry[0].session.state.owner != who.owner:
            await respond_error(send, 404, INVALID_REQUEST, "Not Found: unknown session")
            return
        try:
            body = await read_json_body(scope, receive, send, self.options.max_body_bytes)
        except ClientDisconnected:
            return
        if body is None:
            return
        connection, _ = entry
        live = await self.manager.get(sid, who.owner)
        if live is None:
            await respond_error(send, 404, INVALID_REQUEST, "Not Found: unknown session")
            return
        await connection.feed(body, principal=who.principal)
        await respond(send, 202, b"Accepted", content_type=b"text/plain")

    def close_streams(self) -> None:
        """End every stream once it has sent what it holds now (the drain, after the calls in flight have
        their answers). A stream whose reader is so far behind that nothing more fits is ended by the drain's
        release of the streams instead."""
        for _, queue in self._connections.values():
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)
