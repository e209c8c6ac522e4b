"""Streamable HTTP for the stateless era (2026-07-28): one POST, one request, no session.

Each request, classified and checked by the inlet (headers against body, ``_meta``: ``wiremcp.inlet``,
``wiremcp.inbound``), is run for the caller the endpoint read once from the request, and answered with
``application/json`` when its handler sends nothing but the result, or with an SSE
stream (no event ids, no resumption) when it sends notifications first, as
``subscriptions/listen`` does. Closing the stream, or the connection before the answer,
cancels the request. A request the server's shutdown cuts off is answered with the shutdown's retryable
error (``wiremcp.shutdown``; as a JSON answer, 503 with ``Retry-After``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from wiremcp import jsonrpc
from wiremcp.entry import notify, serve
from wiremcp.inbound import Inbound
from wiremcp.inlet import Caller
from wiremcp.outcome import Outcome
from wiremcp.server import MCPServer
from wiremcp.shutdown import cut_off_outcome
from wiremcp.transports import sse
from wiremcp.transports.asgi import Receive, Scope, SendASGI, respond
from wiremcp.transports.outcomes import respond_outcome
from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.http")

_BACKLOG = 1024
"""Messages a request may have queued for a slow stream before its handler waits."""

_DONE: JSONObject = {}
"""Queued after the last related message of a request: the answer is ready."""


_WATCH_AFTER = 0.05
"""Seconds a request runs before its connection is watched for the client going away."""


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class StatelessHandler:
    """Serves one stateless message that the endpoint has read and classified."""

    def __init__(self, server: MCPServer, *, keepalive: float) -> None:
        self.server = server
        self.keepalive = keepalive
        self.tasks: set[asyncio.Task[Outcome | None]] = set()
        self.listens: set[asyncio.Task[Outcome | None]] = set()
        self.streams_open = 0
        """SSE answers being streamed now (for the metrics)."""

    async def handle(self, inbound: Inbound, caller: Caller, scope: Scope, receive: Receive, send: SendASGI) -> None:
        """Serve a stateless request or notification (as the inlet sorted it) from ``caller``."""
        if isinstance(inbound.message, jsonrpc.Notification):
            # a notification: nothing to do but what middleware does; on HTTP, cancelling is closing the stream
            await notify(self.server, inbound.message, session=None, stateless=True, principal=caller.principal,
                         peer=caller.peer)
            await respond(send, 202)
            return
        request = inbound.request
        buffered: list[JSONObject] = []
        queue: asyncio.Queue[JSONObject] | None = None
        wake: asyncio.Future[None] | None = None  # made only for a request not answered in its first step

        def woken(_: object = None) -> None:
            if wake is not None and not wake.done():
                wake.set_result(None)

        async def related(message: JSONObject) -> None:
            if queue is None:
                buffered.append(message)
                woken()
                return
            queue.put_nowait(message)
            if queue.qsize() >= _BACKLOG:  # the client reads slowly: the handler waits for it
                room.clear()
                await room.wait()

        async def run() -> Outcome | None:
            try:
                return await serve(self.server, inbound, related, principal=caller.principal, peer=caller.peer)
            finally:  # said from inside the task, not by done callbacks: the answer goes out a loop turn sooner
                self.tasks.discard(task)
                woken()

        loop = asyncio.get_running_loop()
        task = loop.create_task(run())
        self.tasks.add(task)
        if request.method == "subscriptions/listen":
            self.listens.add(task)
            task.add_done_callback(self.listens.discard)
        # One loop turn first: most requests are answered in their task's first step (or send a related
        # message in it), and then nothing is made to wait for them. Closing the connection cancels the
        # request. Most requests end sooner than a client gives up, so the connection is only watched once one
        # has run for a moment.
        await asyncio.sleep(0)
        watcher: asyncio.Task[None] | None = None
        if not task.done() and not buffered:
            waiting = wake = loop.create_future()

            def watch() -> None:
                nonlocal watcher
                if not waiting.done():
                    watcher = loop.create_task(_disconnected(receive))
                    watcher.add_done_callback(woken)

            timer = loop.call_later(_WATCH_AFTER, watch)
            try:
                await waiting
            finally:
                timer.cancel()
                if watcher is not None:
                    watcher.cancel()
        if watcher is not None and watcher.done() and not watcher.cancelled() and not task.done():
            task.cancel()  # the client went away: that is cancellation in this era
            return
        if task.cancelled():  # by the lifespan's close, past the drain's cut-off: answered as the cut-off answers
            await respond_outcome(send, scope, cut_off_outcome(self.server, request.id), stateless=True)
            return
        if task.done() and not buffered:
            done = task.result()
            assert done is not None  # no session: only closing the stream cancels, and it has not
            await respond_outcome(send, scope, done, stateless=True)
            return
        room = asyncio.Event()  # set while the stream's reader keeps up
        queue = asyncio.Queue()
        task.add_done_callback(lambda _: queue.put_nowait(_DONE) if queue is not None else None)

        async def events() -> AsyncIterator[sse.Event]:
            try:
                for message in buffered:
                    yield sse.event(message)
                assert queue is not None
                while (message := await queue.get()) is not _DONE:
                    if queue.qsize() < _BACKLOG // 2:
                        room.set()
                    yield sse.event(message)
                done = cut_off_outcome(self.server, request.id) if task.cancelled() else task.result()
                if done is not None:
                    yield sse.event(done.message)
            finally:
                room.set()
                if not task.done():
                    task.cancel()  # the stream closed before the answer: cancel the request

        await sse.serve_sse(events(), scope, receive, send, keepalive=self.keepalive, counted=self)

    def stream_opened(self) -> None:
        self.streams_open += 1

    def stream_closed(self) -> None:
        self.streams_open -= 1

    async def close(self, grace: float = 1.0) -> None:
        if self.listens:  # the bus was just ended: let listen requests send their clean end first
            await asyncio.wait(list(self.listens), timeout=grace)
        for task in list(self.tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self.tasks, return_exceptions=True)

