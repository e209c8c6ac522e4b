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
"""Seconds between two looks at the requests running: one seen at two looks in a row (it has run for at least
that long) has its connection watched for the client going away. One timer for them all, not one each."""


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class StatelessHandler:
    """Serves one stateless message that the endpoint has read and classified."""

    def __init__(self, server: MCPServer, *, keepalive: float) -> None:
        self.server = server
        self.keepalive = keepalive
        self.answers: set[_Answer] = set()
        """The requests being answered now, each in the task that received it."""
        self._looking: asyncio.TimerHandle | None = None
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
        answer = _Answer(self, inbound, scope, receive, send)
        self.answers.add(answer)
        if self._looking is None:
            self._looking = asyncio.get_running_loop().call_later(_WATCH_AFTER, self._look)
        try:
            await answer.run(caller)
        finally:
            self.answers.discard(answer)

    def _look(self) -> None:
        """Watch the connections of the requests that have run for a while (``_WATCH_AFTER``)."""
        self._looking = None
        for answer in self.answers:
            if answer.seen:
                answer.watch()
            answer.seen = True
        if self.answers:
            self._looking = asyncio.get_running_loop().call_later(_WATCH_AFTER, self._look)

    def stream_opened(self) -> None:
        self.streams_open += 1

    def stream_closed(self) -> None:
        self.streams_open -= 1

    async def close(self, grace: float = 1.0) -> None:
        """The server is closing: let ``subscriptions/listen`` requests send their clean end first (the bus was
        just ended), then cut off every request still running (answered with the shutdown's retryable error),
        and wait until they are answered."""
        listening = [answer.task for answer in self.answers if answer.listening]
        if listening:
            await asyncio.wait(listening, timeout=grace)
        answers = list(self.answers)
        for answer in answers:
            answer.cut_off()
        if answers:
            await asyncio.wait([answer.task for answer in answers])


class _Answer:
    """One stateless request, served in the task that received it (no task of its own): answered with JSON,
    or, from the first message related to it that the handler sends, with an SSE stream (no event ids, no
    resumption), whose writing task is then the only one made for it. Closing the connection (watched once
    the request has run for a moment: ``_WATCH_AFTER``) or the stream before the answer cancels the request."""

    __slots__ = ("closing", "gone", "handler", "inbound", "listening", "receive", "scope", "seen", "send", "serving",
                 "stream", "task", "watcher")

    def __init__(self, handler: StatelessHandler, inbound: Inbound, scope: Scope, receive: Receive,
                 send: SendASGI) -> None:
        task = asyncio.current_task()
        assert task is not None, "served in a task, as every ASGI call is"
        self.task = task
        self.handler = handler
        self.inbound = inbound
        self.listening = inbound.request.method == "subscriptions/listen"
        self.scope = scope
        self.receive = receive
        self.send = send
        self.serving = True
        """The handler runs (``serve``): until then, the request can be cancelled."""
        self.gone = False
        """The client went away before the answer: the request was cancelled for it."""
        self.closing = False
        """The server cut the request off as it closed."""
        self.watcher: asyncio.Task[None] | None = None
        self.stream: _Stream | None = None
        self.seen = False
        """Running when the handler last looked (``StatelessHandler._look``)."""

    async def run(self, caller: Caller) -> None:
        server, request = self.handler.server, self.inbound.request
        done: Outcome | None
        try:
            done = await serve(server, self.inbound, self._related, principal=caller.principal, peer=caller.peer)
        except asyncio.CancelledError:
            if not (self.gone or self.closing):
                raise
            self.task.uncancel()
            # the client's cancellation has no answer; a request the close cut off, past the drain's cut-off, is
            # answered as the cut-off answers
            done = None if self.gone else cut_off_outcome(server, request.id)
        finally:
            self.serving = False
            if self.watcher is not None:
                self.watcher.cancel()
        if self.stream is not None:
            await self.stream.finish(done)
        elif done is not None:
            await respond_outcome(self.send, self.scope, done, stateless=True)

    def cut_off(self) -> None:
        """The server closes: cancel the request, to be answered with the shutdown's retryable error."""
        if self.serving and not (self.gone or self.closing):
            self.closing = True
            self.task.cancel()

    def cancel_for_the_client(self) -> None:
        """The client closed the connection or the stream before the answer: that is cancellation in this era."""
        if self.serving and not (self.gone or self.closing):
            self.gone = True
            self.task.cancel()

    def watch(self) -> None:
        """The request has run for a moment: watch its connection for the client going away (an SSE stream
        watches its own)."""
        if self.serving and self.stream is None and self.watcher is None:
            self.watcher = asyncio.get_running_loop().create_task(_disconnected(self.receive))
            self.watcher.add_done_callback(self._went_away)

    def _went_away(self, watcher: asyncio.Task[None]) -> None:
        if not watcher.cancelled() and watcher.exception() is None:
            self.cancel_for_the_client()

    async def _related(self, message: JSONObject) -> None:
        """A message the handler sends before its answer: the answer becomes an SSE stream, this its first event."""
        stream = self.stream
        if stream is None:
            if self.watcher is not None:  # the stream reads the connection from now on
                self.watcher.cancel()
                self.watcher = None
            stream = self.stream = _Stream(self)
        await stream.put(message)


class _Stream:
    """The SSE answer of one stateless request: its related messages in order, then the answer."""

    __slots__ = ("answer", "done", "outcome", "queue", "room", "writer")

    def __init__(self, answer: _Answer) -> None:
        self.answer = answer
        self.queue: asyncio.Queue[JSONObject] = asyncio.Queue()
        self.room = asyncio.Event()  # set while the stream's reader keeps up
        self.outcome: Outcome | None = None
        self.done = False
        handler = answer.handler
        self.writer = asyncio.get_running_loop().create_task(sse.serve_sse(
            self._events(), answer.scope, answer.receive, answer.send, keepalive=handler.keepalive,
            counted=handler))

    async def put(self, message: JSONObject) -> None:
        self.queue.put_nowait(message)
        if self.queue.qsize() >= _BACKLOG:  # the client reads slowly: the handler waits for it
            self.room.clear()
            await self.room.wait()

    async def finish(self, outcome: Outcome | None) -> None:
        """The request is over (``outcome`` None: cancelled for the client): end the stream with the answer."""
        self.outcome, self.done = outcome, True
        self.queue.put_nowait(_DONE)
        await self.writer

    async def _events(self) -> AsyncIterator[sse.Event]:
        try:
            while (message := await self.queue.get()) is not _DONE:
                if self.queue.qsize() < _BACKLOG // 2:
                    self.room.set()
                yield sse.event(message)
            if self.outcome is not None:
                yield sse.event(self.outcome.message)
        finally:
            self.room.set()
            if not self.done:
                self.answer.cancel_for_the_client()  # the stream closed before the answer: cancel the request
