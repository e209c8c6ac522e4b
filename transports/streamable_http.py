"""Streamable HTTP for the handshake era (2025-11-25, 2025-06-18, 2025-03-26): POST, GET and DELETE on one endpoint.

A request is answered with ``application/json`` when its handler finishes without
sending anything else first; as soon as it sends a notification or a request (or
runs longer than ``sse_after`` seconds) the answer becomes an SSE stream, whose
events are numbered and stored so that a client that lost the connection can
resume with ``GET`` and ``Last-Event-ID``.

A POST's body goes through the inlet (``wiremcp.inlet``), which decodes, classifies and sorts it; what the
endpoint does with each kind is ``wiremcp.transports.http_post``'s. The caller (``wiremcp.transports.identity``) is read from the
ASGI scope once per request and handed down.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, MutableMapping
from dataclasses import dataclass
from typing import Any

from wiremcp import jsonrpc, methods
from wiremcp.entry import notify, serve, serve_batch
from wiremcp.errors import INTERNAL_ERROR, INVALID_REQUEST
from wiremcp.event_store import parse_event_id
from wiremcp.inbound import Inbound
from wiremcp.inlet import Caller, take
from wiremcp.outcome import Outcome
from wiremcp.protocol import HANDSHAKE_VERSIONS, at_least
from wiremcp.refusals import SHUTTING_DOWN, STORE_UNAVAILABLE, TOO_MANY_SESSIONS
from wiremcp.transports import identity, sse
from wiremcp.transports.asgi import (
    ClientDisconnected,
    Receive,
    Scope,
    SendASGI,
    header,
    headers,
    read_json_body,
    refuse,
    respond,
    respond_error,
    respond_json,
)
from wiremcp.transports.channels import EventChannel, Item
from wiremcp.transports.http_post import PostHandlers
from wiremcp.transports.live_session import LiveSession, new_stream_id
from wiremcp.transports.outcomes import respond_outcome
from wiremcp.transports.request_run import RequestRun
from wiremcp.transports.sessions import SessionLimitReached, SessionManager
from wiremcp.transports.shared_streams import (
    PRIMING_SINCE,
    STANDALONE_STREAM,
    SharedStreams,
    is_response,
)
from wiremcp.transports.stateless_http import StatelessHandler
from wiremcp.types import JSONObject
from wiremcp.unavailable import StoreUnavailable

log = logging.getLogger("wiremcp.http")

SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"


@dataclass(frozen=True, slots=True)
class HttpOptions:
    json_response: bool = False
    """Answer every request with application/json; related messages then go to the GET stream."""
    max_body_bytes: int = 4 << 20
    sse_after: float = 0.5
    """A request still running after this long gets an SSE stream (so it can be resumed)."""
    sse_keepalive: float = 15.0
    """Seconds between keep-alive comments on an idle SSE stream."""
    sse_retry_ms: int = 1000
    """The ``retry`` a 2025-11-25 client gets in the priming event."""


_POST_ACCEPTS = ("application/json", "text/event-stream")
"""What a POST's ``Accept`` must list."""


def _accepts(scope: Scope, *types: str) -> bool:
    return _offers(header(scope, b"accept") or "", types)


@functools.lru_cache(maxsize=256)  # clients send the same Accept value with every request
def _offers(accept: str, types: tuple[str, ...]) -> bool:
    offered = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return "*/*" in offered or all(t in offered for t in types)


class StreamableHTTPEndpoint:
    """The MCP endpoint as a plain ASGI app; mount it anywhere."""

    def __init__(self, manager: SessionManager, options: HttpOptions | None = None) -> None:
        self.manager = manager
        self.options = options or HttpOptions()
        self.stateless = StatelessHandler(manager.server, keepalive=self.options.sse_keepalive)
        self.shared = SharedStreams(manager, retry_ms=self.options.sse_retry_ms,
                                    keepalive=self.options.sse_keepalive) if manager.shared else None

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if scope["type"] == "http":
            await self.answer(scope, receive, send)

    def answer(self, scope: Scope, receive: Receive, send: SendASGI) -> Awaitable[None]:
        """What answers an HTTP request (``scope["type"]`` is ``"http"``), handed back to be awaited: the
        routes in front (``wiremcp.transports.routes``) hand it on in turn, so that no frame of the endpoint's
        own is resumed with the request's at each turn it waits."""
        if self.manager.link is not None:
            return self._guarded(scope, receive, send)
        return self._route(scope, receive, send)

    def _route(self, scope: Scope, receive: Receive, send: SendASGI) -> Awaitable[None]:
        """What serves the request, by its HTTP method; handed back to be awaited, so that no frame of this
        one's is resumed with the request's at each turn it waits."""
        method = scope["method"]
        if method == "POST":
            return self._post(scope, receive, send)
        if method == "GET":
            return self._get(scope, receive, send)
        if method == "DELETE":
            return self._delete(scope, send)
        return respond_error(send, 405, INVALID_REQUEST, "Method Not Allowed: use POST, GET or DELETE",
                             headers=[(b"allow", b"GET, POST, DELETE")])

    async def _guarded(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        """With a shared store: a store that cannot be reached answers 503, and the next request tries again."""
        started = False

        async def tracked(message: MutableMapping[str, Any]) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await self._route(scope, receive, tracked)
        except StoreUnavailable as exc:
            log.warning("%s", exc)
            if not started:
                await refuse(send, STORE_UNAVAILABLE)

    # -- shared checks ------------------------------------------------------------------------------
    async def _session(self, scope: Scope, send: SendASGI, caller: Caller) -> LiveSession | None:
        """The session named by the request's header, if ``caller`` may use it; or None after answering
        400/404."""
        sid = header(scope, SESSION_HEADER)
        if not sid:
            await respond_error(send, 400, INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required")
            return None
        live = await self.manager.get(sid, caller.owner)  # another principal's session is as good as unknown
        if live is None:
            await respond_error(send, 404, INVALID_REQUEST, "Not Found: unknown or expired session")
            return None
        version = header(scope, VERSION_HEADER)
        if version is not None:
            negotiated = live.version
            if version not in HANDSHAKE_VERSIONS:
                await respond_error(send, 400, INVALID_REQUEST,
                                    f"Bad Request: unsupported MCP-Protocol-Version {version!r}; "
                                    f"supported: {', '.join(HANDSHAKE_VERSIONS)}")
                return None
            if version > negotiated:
                # Older supported values are let through: clients built on the 2025-03-26
                # transport keep sending that value on later-negotiated sessions.
                await respond_error(send, 400, INVALID_REQUEST,
                                    f"Bad Request: MCP-Protocol-Version {version!r} does not match the "
                                    f"negotiated version {negotiated!r}")
                return None
        return live

    # -- POST ----------------------------------------------------------------------------------------
    async def _post(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if not _offers(header(scope, b"accept") or "", _POST_ACCEPTS):
            await respond_error(send, 406, INVALID_REQUEST,
                                "Not Acceptable: Accept must list application/json and text/event-stream")
            return
        try:
            body = await read_json_body(scope, receive, send, self.options.max_body_bytes)
        except ClientDisconnected:  # gone before its body came: nothing to answer
            return
        if body is None:
            return
        await take(body, self.manager.server, PostHandlers(self, body, scope, receive, send), identity.caller(scope),
                   headers(scope))

    async def _notified(self, live: LiveSession, note: jsonrpc.Notification, caller: Caller, send: SendASGI) -> None:
        await notify(self.manager.server, note, session=live.session, principal=caller.principal, peer=caller.peer)
        if note.method == "notifications/initialized":
            await self.manager.save(live)
        elif note.method == "notifications/cancelled" and self.manager.link is not None:
            rid = note.params.get("requestId")
            if not (isinstance(rid, str | int) and live.session.running(rid)):
                await self.manager.link.broadcast_cancel(live.id, note.params)  # running elsewhere
        await respond(send, 202)

    async def _responded(self, live: LiveSession, response: jsonrpc.Response, body: bytes, send: SendASGI) -> None:
        link = self.manager.link
        owner = link.owner_of(response.id) if link is not None else None
        if link is not None and owner is not None and owner != link.replica:
            await link.forward_response(owner, live.id, body)  # its handler waits on that replica
        else:
            live.session.handle_response(response)
        await respond(send, 202)

    async def _initialize(self, inbound: Inbound, caller: Caller, scope: Scope, send: SendASGI) -> None:
        request = inbound.request
        if self.manager.draining and not self.manager.shared:  # a shared session lives on elsewhere
            await refuse(send, SHUTTING_DOWN, id=request.id)
            return
        try:
            live = await self.manager.create(caller.owner)
        except SessionLimitReached:
            await refuse(send, TOO_MANY_SESSIONS, id=request.id)
            return
        done = await serve(self.manager.server, inbound, live.standalone.send, session=live.session,
                           principal=caller.principal, peer=caller.peer)
        if done is None or "error" in done.message:
            await self.manager.delete(live.id)
            if done is None:
                await respond_json(send, 200, jsonrpc.error(request.id, INTERNAL_ERROR, "Internal error"))
            else:
                await respond_outcome(send, scope, done, stateless=False)
            return
        await self.manager.save(live)
        await respond_json(send, 200, done.message, [(SESSION_HEADER, live.id.encode())])

    async def _batch(self, live: LiveSession, items: list[Inbound | Outcome], caller: Caller, send: SendASGI) -> None:
        # Related messages of batched requests go to the GET stream; the answers come back together.
        batch = serve_batch(self.manager.server, items, live.standalone.send, session=live.session,
                            principal=caller.principal, peer=caller.peer)
        if isinstance(batch, dict):  # batches are not allowed here
            await respond_json(send, 400, batch)
            return
        replies = await batch.answers()
        if any(isinstance(item, Inbound) and isinstance(item.message, jsonrpc.Request)
               and item.message.method in methods.CHANGES_SESSION for item in items):
            await self.manager.save(live)
        if replies:
            await respond_json(send, 200, replies)
        else:
            await respond(send, 202)

    async def _request(self, inbound: Inbound, caller: Caller, scope: Scope, receive: Receive,
                       send: SendASGI) -> None:
        """A handshake-era request (but ``initialize``), on the session it names."""
        live = await self._session(scope, send, caller)
        if live is None:
            return
        request = inbound.request
        run = RequestRun(live, inbound, to_standalone=self.options.json_response, principal=caller.principal,
                         peer=caller.peer)
        task = asyncio.get_running_loop().create_task(run.execute())
        live.spawn(task)
        if self.options.json_response:
            await asyncio.shield(task)
        else:
            # One loop turn first: most requests are answered in their task's first step, and then no
            # timer or waiter is made for them.
            await asyncio.sleep(0)
            if not run.changed:
                await run.wait(self.options.sse_after)
        if run.done and not run.buffer:
            if request.method in methods.CHANGES_SESSION:
                await self.manager.save(live)
            done = run.outcome
            if done is None:
                await respond(send, 202)  # cancelled by the client: there is no answer
            else:
                await respond_outcome(send, scope, done, stateless=False)
            return
        version = live.version
        channel = EventChannel(live.id, new_stream_id(), self.manager.events, request.id)
        live.channels[channel.stream] = channel
        # Room for what was buffered (and the priming event and the answer): it is all delivered before
        # the stream is read, and a burst larger than the queue would cut the stream off.
        reader = channel.attach(room=len(run.buffer) + 2)
        await run.to_sse(channel, prime=at_least(version, PRIMING_SINCE))
        if run.close_requested:
            channel.close()
        await self._stream(live, channel, reader, [], scope, receive, send)

    # -- SSE -----------------------------------------------------------------------------------------
    async def _stream(self, live: LiveSession, channel: EventChannel | None, reader: asyncio.Queue[Item] | None,
                      replay: list[tuple[int, JSONObject | None]], scope: Scope, receive: Receive,
                      send: SendASGI, stream_name: str | None = None) -> None:
        name = channel.stream if channel is not None else stream_name or ""
        retry = self.options.sse_retry_ms
        polling = at_least(live.version, PRIMING_SINCE)

        async def events() -> AsyncIterator[sse.Event]:
            last = -1
            try:
                for seq, message in replay:
                    last = seq
                    yield sse.event(message, name, seq, retry)
                    if is_response(message) and name != STANDALONE_STREAM:
                        return
                if reader is None:
                    return
                while (item := await reader.get()) is not None:
                    seq, message = item
                    if seq <= last:
                        continue
                    yield sse.event(message, name, seq, retry)
                if polling and channel is not None and not channel.finished:
                    # Closed before its end (SSE polling, a slow reader, a newer GET): say when to come back.
                    yield sse.retry_hint(retry)
            finally:
                if channel is not None and reader is not None:
                    channel.detach(reader)

        await sse.serve_sse(events(), scope, receive, send, keepalive=self.options.sse_keepalive, counted=live)

    # -- GET -----------------------------------------------------------------------------------------
    async def _get(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if header(scope, SESSION_HEADER) is None:
            await _no_session_stream(send)
            return
        if not _accepts(scope, "text/event-stream"):
            await respond_error(send, 406, INVALID_REQUEST, "Not Acceptable: Accept must list text/event-stream")
            return
        last_event_id = header(scope, b"last-event-id")
        resume_from = parse_event_id(last_event_id) if last_event_id else None
        if last_event_id and resume_from is None:
            # checked before any store sees it: the same 400 with every backend
            await respond_error(send, 400, INVALID_REQUEST, "Bad Request: Last-Event-ID is not one of this server's")
            return
        live = await self._session(scope, send, identity.caller(scope))
        if live is None:
            return
        if resume_from is not None:
            await self._resume(live, resume_from, scope, receive, send)
            return
        if self.shared is not None:
            await self.shared.get(live, scope, receive, send)
            return
        channel = live.standalone
        if channel.attached:
            await respond_error(send, 409, INVALID_REQUEST, "Conflict: this session already has a GET stream open")
            return
        reader = channel.attach()
        if at_least(live.version, PRIMING_SINCE):
            await channel.emit(None)
        await self._stream(live, channel, reader, [], scope, receive, send)

    async def _resume(self, live: LiveSession, resume_from: tuple[str, int], scope: Scope, receive: Receive,
                      send: SendASGI) -> None:
        events = self.manager.events
        stream, seq = resume_from
        if self.shared is not None and (stream == STANDALONE_STREAM or stream not in live.channels):
            await self.shared.resume(live, stream, seq, scope, receive, send)
            return
        channel = live.standalone if stream == STANDALONE_STREAM else live.channels.get(stream)
        reader = channel.attach() if channel is not None and not channel.finished else None
        stored = await events.after(live.id, stream, seq)
        if stored is None:
            if channel is not None and reader is not None:
                channel.detach(reader)
            await respond_error(send, 400, INVALID_REQUEST,
                                "Bad Request: Last-Event-ID is unknown or its events have expired")
            return
        replay = [(e.seq, e.message) for e in stored]
        await self._stream(live, channel, reader, replay, scope, receive, send, stream_name=stream)

    # -- DELETE --------------------------------------------------------------------------------------
    async def _delete(self, scope: Scope, send: SendASGI) -> None:
        if header(scope, SESSION_HEADER) is None:
            await _no_session_stream(send)
            return
        live = await self._session(scope, send, identity.caller(scope))
        if live is None:
            return
        await self.manager.delete(live.id)
        await respond(send, 200)


async def _no_session_stream(send: SendASGI) -> None:
    """GET and DELETE without a session: the stateless era has neither (and a handshake-era client always
    names its session), so 405 as the spec asks, with a JSON-RPC body."""
    await respond_error(send, 405, INVALID_REQUEST,
                        "Method Not Allowed: GET and DELETE need an Mcp-Session-Id (handshake era only)",
                        headers=[(b"allow", b"POST")])

