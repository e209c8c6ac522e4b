"""The stdout side of stdio: JSON-RPC messages written to the wire as lines, in order, one write per batch.

Pipes, sockets and terminals are written through the event loop; anything else (a regular file,
``/dev/null``) with blocking calls off the loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import stat

from wiremcp import jsonrpc
from wiremcp.threads import run_sync
from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.stdio")

QUEUE_SIZE = 1024
"""Lines queued for a wire slower than the answers; past it ``write`` waits and ``post`` drops."""


def is_stream(fd: int) -> bool:
    """Whether ``fd`` can be polled: a pipe, a socket or a terminal. Other character devices
    (``/dev/null``) and regular files cannot; epoll refuses them."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


class LineWriter:
    """Serializes outgoing messages onto the wire, one line each, in order. What is queued while the
    wire is busy goes out together: one write per batch, not per message."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lines: list[bytes] = []
        self._stream: asyncio.StreamWriter | None = None
        self._ready: asyncio.Future[None] | None = None  # the writer waits for lines
        self._room: collections.deque[asyncio.Future[None]] = collections.deque()  # write() waits for room
        self._closed = False

    async def start(self) -> None:
        if is_stream(self._fd):
            loop = asyncio.get_running_loop()
            pipe = os.fdopen(self._fd, "wb", buffering=0, closefd=False)
            with contextlib.suppress(OSError, ValueError):
                transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
                self._stream = asyncio.StreamWriter(transport, protocol, None, loop)

    def _push(self, line: bytes) -> None:
        if self._closed:
            return
        self._lines.append(line)
        ready = self._ready
        if ready is not None:
            self._ready = None
            if not ready.done():
                ready.set_result(None)

    async def write(self, message: JSONObject | list[JSONObject]) -> None:
        line = jsonrpc.dumps(message)
        while len(self._lines) >= QUEUE_SIZE and not self._closed:  # the wire is slower than the answers
            room = asyncio.get_running_loop().create_future()
            self._room.append(room)
            await room
        self._push(line)

    def post(self, message: JSONObject) -> None:
        if len(self._lines) >= QUEUE_SIZE:
            log.warning("output queue full; dropping %s", message.get("method"))
            return
        self._push(jsonrpc.dumps(message))

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._lines:
                if self._closed:
                    return
                self._ready = loop.create_future()
                await self._ready
                continue
            lines, self._lines = self._lines, []
            while self._room:  # every waiting write() re-checks
                room = self._room.popleft()
                if not room.done():
                    room.set_result(None)
            lines.append(b"")
            data = b"\n".join(lines)
            try:
                if self._stream is not None:
                    self._stream.write(data)
                    await self._stream.drain()
                else:
                    while data:
                        data = data[await run_sync(os.write, self._fd, data):]
            except (BrokenPipeError, ConnectionResetError):
                log.info("stdout closed by the client")
                return

    async def close(self) -> None:
        """Write what is queued, then stop; what comes later is dropped."""
        self._closed = True
        for waiter in (self._ready, *self._room):
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        self._ready = None
        self._room.clear()


