"""The per-connection runner for message streams (stdio, in-memory): frames in, messages out.

It decodes each frame, answers what is malformed, runs every request in its own
task (so a slow tool never blocks ``ping``), routes the client's responses to the
handlers waiting on them, and writes every outgoing message through one callback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from app import jsonrpc
from app.modern import declares_modern
from app.session import ServerSession
from app.types import JSONObject

log = logging.getLogger("mcpwire.connection")

Write = Callable[[JSONObject | list[JSONObject]], Awaitable[None]]


class Connection:
    """One client on one message stream, served by one ``ServerSession``."""

    def __init__(self, session: ServerSession, write: Write, *, max_concurrent: int = 1024) -> None:
        self.session = session
        self._write = write
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(max_concurrent)

    async def _send(self, message: JSONObject) -> None:
        await self._write(message)

    async def feed(self, frame: bytes | str, principal: Any = None) -> None:
        """Handle one frame (a line on stdio). Requests are started, not awaited. ``principal``: who sent
        it, where the transport authenticates each message (HTTP+SSE)."""
        decoded = jsonrpc.decode(frame)
        if isinstance(decoded, list):
            await self._batch(decoded)
            return
        if isinstance(decoded, jsonrpc.Request):
            # At most ``max_concurrent`` requests run at once; past that, reading waits (backpressure).
            await self._slots.acquire()
            if decoded.method == "initialize" or not (self.session.state.initialized
                                                      or declares_modern(decoded.params)):
                # the handshake is serialized with what comes before and after it: a request that
                # arrives before initialize is judged (refused) on arrival, not when a task gets to it;
                # stateless requests (served whatever the session) run concurrently from the start
                await self._run_in_slot(decoded, principal)
            else:
                self._spawn(self._run_in_slot(decoded, principal))
        elif isinstance(decoded, jsonrpc.Notification):
            self.session.handle_notification(decoded)
        elif isinstance(decoded, jsonrpc.Response):
            self.session.handle_response(decoded)
        elif decoded.reply is not None:
            await self._write(decoded.reply)

    def _spawn(self, work: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_in_slot(self, request: jsonrpc.Request, principal: Any = None) -> None:
        try:
            await self._run(request, principal)
        finally:
            self._slots.release()

    async def _run(self, request: jsonrpc.Request, principal: Any = None) -> None:
        response = await self.session.handle_request(request, self._send, principal=principal)
        if response is not None:
            await self._write(response)

    async def _batch(self, items: list[jsonrpc.Message]) -> None:
        sorted_batch = self.session.sort_batch(items)
        if isinstance(sorted_batch, dict):
            await self._write(sorted_batch)
            return
        requests, replies = sorted_batch
        if requests:
            self._spawn(self._run_batch(requests, replies))
        elif replies:
            await self._write(replies)

    async def _run_batch(self, requests: list[jsonrpc.Request], replies: list[JSONObject]) -> None:
        async def one(request: jsonrpc.Request) -> JSONObject | None:
            return await self.session.handle_request(request, self._send)

        results = await asyncio.gather(*(asyncio.ensure_future(one(r)) for r in requests))
        replies.extend(r for r in results if r is not None)
        if replies:
            await self._write(replies)

    async def drain(self, timeout: float) -> None:
        """Give requests in flight up to ``timeout`` seconds to finish."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)

    async def close(self) -> None:
        """Cancel every request still running and wait until they are gone."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self.session.close()
