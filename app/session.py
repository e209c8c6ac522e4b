"""A handshake-era session: its serializable state and the live runner around the dispatcher.

``SessionState`` is plain data (what a ``SessionStore`` keeps). ``ServerSession`` adds
the live parts of one process: requests in flight (for cancellation) and requests
sent to the client that wait for an answer.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wiremcp import jsonrpc
from wiremcp.answer import Answer, answer
from wiremcp.errors import INTERNAL_ERROR, INVALID_REQUEST, ClientError, ClientTimeout
from wiremcp.protocol import BATCH_VERSIONS
from wiremcp.state import SessionState
from wiremcp.stateless import declares_stateless
from wiremcp.types import JSONObject, RequestId, Send, StreamControl

if TYPE_CHECKING:
    from wiremcp.server import MCPServer

log = logging.getLogger("wiremcp.session")

Post = Callable[[JSONObject], None]
"""Delivers a message unrelated to any request (list_changed, resources/updated); must not block."""


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class ServerSession:
    """Runs requests of one session through the dispatcher; one per stdio process or HTTP session."""

    def __init__(self, server: MCPServer, state: SessionState | None = None, *, post: Post | None = None,
                 request_ids: Callable[[], RequestId] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.server = server
        self._clock = clock
        self.settled_at = clock()
        """When the last request in flight ended (``clock`` time): a session's idle clock starts there."""
        self.state = state or SessionState()
        self._post = post
        self._inflight: dict[RequestId, tuple[asyncio.Task[Any], str]] = {}
        self._cancelled: set[RequestId] = set()
        self._pending: dict[RequestId, asyncio.Future[JSONObject]] = {}
        self._next_id: Callable[[], RequestId] = request_ids or itertools.count(1).__next__
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        server.attach(self)

    # -- incoming ------------------------------------------------------------------------------
    async def handle_request(self, request: jsonrpc.Request, send: Send,
                             control: StreamControl | None = None, principal: Any = None) -> JSONObject | None:
        """Answer one request. ``send`` carries messages related to it. None: it was cancelled."""
        done = await self.handle(request, send, control, principal)
        return done.message if done is not None else None

    async def handle(self, request: jsonrpc.Request, send: Send, control: StreamControl | None = None,
                     principal: Any = None) -> Answer | None:
        """``handle_request`` with the HTTP status the answer calls for (None: it was cancelled)."""
        rid = request.id
        task = asyncio.current_task()
        if rid in self._inflight:
            return Answer(jsonrpc.error(rid, -32600, f"Request id {rid!r} is already in use"))
        if task is not None:
            self._inflight[rid] = (task, request.method)
        try:
            # A request that describes itself in _meta is served statelessly, whatever the session.
            stateless = declares_stateless(request.params)
            return await answer(self.server, request, send, stateless=stateless, state=None if stateless else self.state,
                                session=self, control=control,
                                principal=principal if principal is not None else self.state.principal)
        except asyncio.CancelledError:
            if rid in self._cancelled and task is not None:
                task.uncancel()
                return None
            raise
        finally:
            self._inflight.pop(rid, None)
            self._cancelled.discard(rid)
            if not self._inflight:
                self.settled_at = self._clock()

    def handle_notification(self, note: jsonrpc.Notification) -> None:
        method = note.method
        if method == "notifications/cancelled":
            rid = note.params.get("requestId")
            entry = self._inflight.get(rid) if isinstance(rid, str | int) else None
            # initialize cannot be cancelled; unknown or finished ids are ignored
            if entry is not None and rid is not None and entry[1] != "initialize" and not entry[0].done():
                self._cancelled.add(rid)
                entry[0].cancel()
        elif method == "notifications/initialized":
            if self.state.initialized:
                self.state.ready = True
        else:
            self.server.dispatcher.notify(method, note.params, self)

    def sort_batch(self, items: list[jsonrpc.Message]) -> tuple[list[jsonrpc.Request], list[JSONObject]] | JSONObject:
        """Take a JSON-RPC batch apart: handle its notifications and responses now, and return its
        requests with the replies already due; or, if batches are not allowed here, the error reply."""
        if self.state.protocol_version not in BATCH_VERSIONS:
            return jsonrpc.error(None, INVALID_REQUEST,
                                 "Invalid Request: JSON-RPC batches are only accepted from 2025-03-26 clients")
        requests: list[jsonrpc.Request] = []
        replies: list[JSONObject] = []
        for item in items:
            if isinstance(item, jsonrpc.Request):
                if item.method == "initialize":
                    replies.append(jsonrpc.error(item.id, INVALID_REQUEST, "initialize must not be batched"))
                else:
                    requests.append(item)
            elif isinstance(item, jsonrpc.Notification):
                self.handle_notification(item)
            elif isinstance(item, jsonrpc.Response):
                self.handle_response(item)
            elif item.reply is not None:
                replies.append(item.reply)
        return requests, replies

    async def run_batch(self, requests: list[jsonrpc.Request], replies: list[JSONObject], send: Send,
                        principal: Any = None) -> list[JSONObject]:
        """Answer a batch's requests (``sort_batch``'s first half) concurrently, each as the caller
        (``principal``, as a single request would run), after ``replies`` already due: the batch's answer."""
        if requests:
            results = await asyncio.gather(*(
                asyncio.ensure_future(self.handle_request(r, send, principal=principal)) for r in requests))
            replies.extend(r for r in results if r is not None)
        return replies

    def expects(self, request_id: RequestId) -> bool:
        """A request this session sent to the client is waiting for this answer."""
        return request_id in self._pending

    def running(self, request_id: RequestId) -> bool:
        """A request of this id is being answered here."""
        return request_id in self._inflight

    def handle_response(self, response: jsonrpc.Response) -> None:
        future = self._pending.pop(response.id, None)
        if future is None or future.done():
            log.debug("dropping a response to unknown request %r", response.id)
            return
        if response.error is not None:
            err = response.error
            code = err.get("code")
            future.set_exception(ClientError(code if isinstance(code, int) else INTERNAL_ERROR,
                                             str(err.get("message", "error")), err.get("data")))
        else:
            future.set_result(response.result or {})

    # -- outgoing -----------------------------------------------------------------------------
    async def request_client(self, method: str, params: JSONObject | None, send: Send, timeout: float | None,
                             related: RequestId | None = None) -> JSONObject:
        """Send a request to the client and wait for its result (or raise ClientError/ClientTimeout)."""
        rid = self._next_id()
        future: asyncio.Future[JSONObject] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        try:
            await send(jsonrpc.request(rid, method, params))
            return await asyncio.wait_for(future, timeout if timeout is not None else self.server.request_timeout)
        except TimeoutError:
            await self._cancel_client_request(rid, send, "timed out")
            raise ClientTimeout(f"the client did not answer {method} in time") from None
        except asyncio.CancelledError:
            if rid in self._pending:
                await asyncio.shield(self._cancel_client_request(rid, send, "the request was cancelled"))
            raise
        finally:
            self._pending.pop(rid, None)

    async def _cancel_client_request(self, rid: RequestId, send: Send, reason: str) -> None:
        self._pending.pop(rid, None)
        try:
            await send(jsonrpc.notification("notifications/cancelled", {"requestId": rid, "reason": reason}))
        except Exception:
            log.debug("could not tell the client that request %r was cancelled", rid)

    def post(self, message: JSONObject) -> None:
        """Deliver a message unrelated to any request on the session's standalone channel, if it has one.

        Safe from any thread: a sync tool (on a worker thread) that changes a list is handed over to the
        session's event loop."""
        if self._post is None:
            return
        loop = self._loop
        if loop is not None and not _on_loop(loop):
            loop.call_soon_threadsafe(self._post, message)
        else:
            self._post(message)

    # -- teardown -------------------------------------------------------------------------------
    def close(self) -> None:
        """Cancel everything in flight and forget this session."""
        for task, _method in list(self._inflight.values()):
            task.cancel()
        for future in self._pending.values():
            if not future.done():
                future.cancel()
        self._pending.clear()
        self.server.detach(self)

    @property
    def inflight(self) -> int:
        return len(self._inflight)
