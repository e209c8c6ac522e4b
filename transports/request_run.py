"""One handshake-era request being answered over Streamable HTTP (``RequestRun``): it runs the handler and
buffers what the handler sends until the endpoint picks a JSON answer or an SSE stream, then writes the
rest to that stream.
"""

from __future__ import annotations

import asyncio

from wiremcp.entry import serve
from wiremcp.inbound import Inbound
from wiremcp.outcome import Outcome
from wiremcp.principal import Principal
from wiremcp.transports.channels import EventChannel
from wiremcp.transports.live_session import LiveSession
from wiremcp.types import JSONObject


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class RequestRun:
    """One request being answered: buffers what the handler sends until the endpoint picks JSON or SSE."""

    __slots__ = ("_waiter", "buffer", "changed", "channel", "close_requested", "done", "inbound", "live", "outcome",
                 "peer", "principal", "to_standalone")

    def __init__(self, live: LiveSession, inbound: Inbound, to_standalone: bool,
                 principal: Principal | None = None, peer: str | None = None) -> None:
        self.live = live
        self.peer = peer
        self.inbound = inbound
        self.principal = principal
        self.outcome: Outcome | None = None
        self.buffer: list[JSONObject] = []
        self.changed = False
        """Something the endpoint waits for happened (``wait``): the handler sent a message, the answer is
        ready, or the stream was asked to close."""
        self._waiter: asyncio.Future[None] | None = None
        self.channel: EventChannel | None = None
        self.done = False
        self.to_standalone = to_standalone
        self.close_requested = False

    def _changed(self) -> None:
        self.changed = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, timeout: float) -> None:
        """Until ``changed``, or ``timeout`` seconds, whichever comes first (a future and a timer: cheaper than
        an Event and ``wait_for``, and made only for a request that is not answered at once)."""
        if self.changed:
            return
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(timeout, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()

    @property
    def response(self) -> JSONObject | None:
        """The answer (None: none yet, or the client cancelled the request)."""
        return self.outcome.message if self.outcome is not None else None

    def close_stream(self) -> bool:
        """``StreamControl``: end the SSE connection now; the client resumes with ``Last-Event-ID``."""
        if self.to_standalone or self.done:
            return False
        self.close_requested = True
        if self.channel is not None:
            self.channel.close()
        else:
            self._changed()  # wake the endpoint: it switches to SSE (priming event), then closes
        return True

    async def send(self, message: JSONObject) -> None:
        if self.to_standalone:
            await self.live.standalone.emit(message)
        elif self.channel is not None:
            await self.channel.emit(message)
        else:
            self.buffer.append(message)
            self._changed()

    async def execute(self) -> None:
        try:
            session = self.live.session
            self.outcome = await serve(session.server, self.inbound, self.send, session=session, control=self,
                                       principal=self.principal, peer=self.peer)
        finally:
            self.done = True
            self._changed()
            if self.channel is not None:
                await self._finish(self.channel)

    async def _finish(self, channel: EventChannel) -> None:
        if channel.finished:
            return
        if self.response is not None:
            await channel.emit(self.response, final=True)
        else:  # cancelled: the stream ends without an answer
            channel.close(final=True)
        self.live.channels.pop(channel.stream, None)

    async def to_sse(self, channel: EventChannel, prime: bool) -> None:
        """Switch to streaming: number and store everything from here on."""
        if prime:
            await channel.emit(None)
        while self.buffer:
            buffered, self.buffer = self.buffer, []
            for message in buffered:
                await channel.emit(message)
        self.channel = channel
        if self.done:
            await self._finish(channel)
