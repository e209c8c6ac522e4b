"""The per-connection runner for message streams (stdio, in-memory): frames in, messages out.

Each frame goes through the inlet (``wiremcp.inlet``: decoded, classified and sorted by kind there); a
``Connection`` is the inlet's handlers for one message stream: it answers what is malformed or rejected,
runs every request (through ``wiremcp.entry``) in its own task (so a slow tool never blocks ``ping``),
routes the client's responses to the handlers waiting on them, and writes every outgoing message through
one callback. A transport with one client per connection (stdio, in memory, HTTP+SSE, a WebSocket) feeds
it frames.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from wiremcp import jsonrpc
from wiremcp.entry import Batch, notify, serve, serve_batch
from wiremcp.inbound import Inbound
from wiremcp.inlet import NOBODY, Caller, take
from wiremcp.outcome import Outcome
from wiremcp.principal import Principal
from wiremcp.session import ServerSession
from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.connection")

Write = Callable[[JSONObject | list[JSONObject]], Awaitable[None]]


def _resolve(future: asyncio.Future[bool], value: bool) -> None:
    if not future.done():
        future.set_result(value)


class Connection:
    """One client on one message stream, served by one ``ServerSession``.

    At most ``max_concurrent`` requests run at once; past that, reading waits (backpressure). With
    ``pace``, once that many are in flight, reading first waits (at most ``pace_wait`` seconds) for
    half of them to finish: a client that pipelines many requests is then served in waves, and each
    request is cheaper for it (less state live at once, fewer cache misses and GC traversals). If they
    do not finish in time (slow tools), reading goes on, and waits again only once they have.
    """

    def __init__(self, session: ServerSession, write: Write, *, max_concurrent: int = 1024,
                 pace: int | None = None, pace_wait: float = 0.002) -> None:
        self.session = session
        self._write = write
        self._tasks: set[asyncio.Task[None]] = set()
        """Batches being answered (each leaves when done)."""
        self._requests: dict[int, asyncio.Task[None]] = {}
        """The tasks of requests being answered, by the id of the request's ``Inbound`` (alive as long as its
        task): a task leaves by that key, with no look-up of the current task."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._max = max_concurrent
        self._pace = pace
        self._pace_wait = pace_wait
        self._caught_up: asyncio.Future[bool] | None = None
        self._stalled = False
        self._free = max_concurrent
        """Request slots free; a request holds one until it is answered."""
        self._waiting: deque[asyncio.Future[None]] = deque()
        """Readers waiting for a slot, first come first served; a freed slot is handed to the first."""

    async def _send(self, message: JSONObject) -> None:
        await self._write(message)

    def feed(self, frame: bytes | str, principal: Principal | None = None) -> Awaitable[None]:
        """Handle one frame (a line on stdio) through the inlet: await what this returns (the handler of the
        frame's kind, with no frame of this method's in between). Requests are started, not awaited.
        ``principal``: who sent it, where the transport authenticates each message (HTTP+SSE)."""
        return take(frame, self.session.server, self, NOBODY if principal is None else Caller(principal))

    # -- the inlet's handlers (``wiremcp.inlet.Handlers``) -------------------------------------------
    async def request(self, inbound: Inbound, caller: Caller) -> None:
        """Start a request in a slot of its own (waiting for one past ``max_concurrent``)."""
        if self._pace is not None and self._max - self._free >= self._pace and not self._stalled:
            await self._catch_up()
        # At most ``max_concurrent`` requests run at once; past that, reading waits (backpressure).
        if self._free > 0 and not self._waiting:
            self._free -= 1
        else:
            await self._slot()
        principal = caller.principal
        if inbound.request.method == "initialize" or not (self.session.state.initialized or inbound.stateless):
            # the handshake is serialized with what comes before and after it: a request that
            # arrives before initialize is judged (refused) on arrival, not when a task gets to it;
            # stateless requests (served whatever the session) run concurrently from the start
            await self._run_in_slot(inbound, principal)
        else:
            loop = self._loop
            if loop is None:
                loop = self._loop = asyncio.get_running_loop()
            self._requests[id(inbound)] = loop.create_task(self._run_in_slot(inbound, principal, True))

    async def notification(self, inbound: Inbound, caller: Caller) -> None:
        """Handle a notification on this session, in the era the inlet classified it in."""
        note = inbound.message
        assert isinstance(note, jsonrpc.Notification)
        await notify(self.session.server, note, session=self.session, principal=caller.principal,
                     stateless=inbound.stateless)

    async def response(self, response: jsonrpc.Response, caller: Caller) -> None:
        """Hand the client's response to the handler waiting on it."""
        self.session.handle_response(response)

    async def batch(self, items: list[Inbound | Outcome], caller: Caller) -> None:
        """Start a batch's requests; its answers go out together once they are all answered."""
        batch = serve_batch(self.session.server, items, self._send, session=self.session, principal=caller.principal)
        if isinstance(batch, dict):  # batches are not allowed here
            await self._write(batch)
        elif batch.running:
            self._spawn(self._answer_batch(batch))
        elif batch.replies:
            await self._write(batch.replies)

    async def malformed(self, invalid: jsonrpc.Invalid, caller: Caller) -> None:
        """Answer a frame that is not JSON-RPC, when it has an answer."""
        if invalid.reply is not None:
            await self._write(invalid.reply)

    async def rejected(self, outcome: Outcome, caller: Caller) -> None:
        """Answer a message refused before it runs."""
        await self._write(outcome.message)

    async def _slot(self) -> None:
        """Wait until a slot is handed over (by ``_release``)."""
        handed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(handed)
        try:
            await handed
        except asyncio.CancelledError:
            if handed.done() and not handed.cancelled():
                self._release()  # handed a slot just as this reader was cancelled: pass it on
            raise

    async def _catch_up(self) -> None:
        """``pace`` requests are in flight: let them finish, down to half as many, before starting more
        (so that the state of fewer requests is live at once: each is cheaper), but wait at most
        ``pace_wait`` seconds; if they do not finish by then, stop waiting until they do."""
        loop = asyncio.get_running_loop()
        caught_up = self._caught_up = loop.create_future()
        timer = loop.call_later(self._pace_wait, _resolve, caught_up, False)
        try:
            self._stalled = not await caught_up
        finally:
            timer.cancel()
            self._caught_up = None

    def _release(self) -> None:
        while self._waiting:
            handed = self._waiting.popleft()
            if not handed.done():  # (a cancelled reader's future is done)
                handed.set_result(None)
                return
        self._free += 1
        if self._pace is not None and self._max - self._free <= self._pace // 2:
            self._stalled = False
            if self._caught_up is not None:
                _resolve(self._caught_up, True)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_in_slot(self, inbound: Inbound, principal: Principal | None = None,
                           spawned: bool = False) -> None:
        """Answer one request in the slot taken for it. ``spawned``: in a task of its own, in ``_requests``,
        which it leaves itself when done (cheaper than a done callback: no extra loop callback)."""
        try:
            done = await serve(self.session.server, inbound, self._send, session=self.session, principal=principal)
            if done is not None:
                await self._write(done.message)
        finally:
            self._release()
            if spawned:
                self._requests.pop(id(inbound), None)

    async def _answer_batch(self, batch: Batch) -> None:
        replies = await batch.answers()
        if replies:
            await self._write(replies)

    def running(self) -> list[asyncio.Task[None]]:
        """The requests (and batches) being answered now."""
        return [*self._requests.values(), *self._tasks]

    async def close(self) -> None:
        """Cancel every request still running and wait until they are gone."""
        tasks = self.running()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self.session.close()
