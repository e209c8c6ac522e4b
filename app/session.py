"""A handshake-era session: its serializable state and the live runner around the dispatcher.

``SessionState`` is plain data (what a ``SessionStore`` keeps). ``ServerSession`` adds
the live parts of one process: requests in flight (for cancellation) and requests
sent to the client that wait for an answer. Requests come in through ``wiremcp.entry``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wiremcp import jsonrpc
from wiremcp.errors import INTERNAL_ERROR, ClientError, ClientTimeout, InvalidRequest
from wiremcp.outcome import Outcome
from wiremcp.state import SessionState
from wiremcp.types import JSONObject, RequestId, Send

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
    """The live side of one session (one per stdio process or HTTP session): what it is answering, and what
    it asked the client."""

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
        server.runtime.attach(self)

    # -- incoming ------------------------------------------------------------------------------
    def begin(self, request: jsonrpc.Request, task: asyncio.Task[Any] | None) -> Outcome | None:
        """A request of this session starts (``wiremcp.entry.serve``) in ``task``, the running one: it can be
        cancelled from now on. The refusal if its id is already in use."""
        rid = request.id
        if rid in self._inflight:
            return Outcome.failed(rid, InvalidRequest(f"Request id {rid!r} is already in use"))
        if task is not None:
            self._inflight[rid] = (task, request.method)
        return None

    def cancelled_by_client(self, request_id: RequestId) -> bool:
        """Whether the request's cancellation came from the client (``notifications/cancelled``): then it
        has no answer, and its task goes on (un-cancelled)."""
        entry = self._inflight.get(request_id)
        if request_id in self._cancelled and entry is not None:
            entry[0].uncancel()
            return True
        return False

    def end(self, request_id: RequestId) -> None:
        self._inflight.pop(request_id, None)
        self._cancelled.discard(request_id)
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
            self.server.runtime.dispatcher.notify(method, note.params, self)

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
    async def request_client(self, method: str, params: JSONObject | None, send: Send,
                             timeout: float | None) -> JSONObject:
        """Send a request to the client on ``send`` (the stream of the request it is related to) and wait for
        its result (or raise ClientError/ClientTimeout)."""
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

    def post_to(self, post: Post) -> None:
        """From now on, deliver messages unrelated to any request with ``post`` (a transport whose one stream
        carries everything: HTTP+SSE)."""
        self._post = post

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
        self.server.runtime.detach(self)

    @property
    def inflight(self) -> int:
        return len(self._inflight)
