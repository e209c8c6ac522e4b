"""stdio: newline-delimited JSON-RPC on stdin and stdout.

stdout is the wire and nothing else. Before serving, the real stdout is moved to a
private file descriptor and fd 1 is pointed at stderr, so a stray ``print()`` in user
code, or the output of a child process, lands on stderr instead of corrupting the
stream. The process stops on stdin EOF or SIGTERM, cancelling work in flight.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import logging
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator

from app import jsonrpc
from app.connection import Connection
from app.errors import INVALID_REQUEST
from app.server import MCPServer
from app.session import ServerSession
from app.threads import run_sync
from app.types import JSONObject

log = logging.getLogger("mcpwire.stdio")

CHUNK = 1 << 16
DEFAULT_MAX_MESSAGE_BYTES = 4 << 20
QUEUE_SIZE = 1024
PACE = 128
"""With this many requests in flight, reading waits (briefly) for some to finish: a pipelining client
is served in waves whose state stays in the CPU's caches (``Connection``'s ``pace``)."""


def _is_stream(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def _chunks(fd: int) -> AsyncIterator[bytes]:
    """Raw bytes from ``fd`` until EOF, without blocking the event loop."""
    loop = asyncio.get_running_loop()
    if _is_stream(fd):
        reader = asyncio.StreamReader(limit=CHUNK)
        pipe = os.fdopen(fd, "rb", buffering=0, closefd=False)
        try:
            transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        except (OSError, ValueError):
            transport = None
        if transport is not None:
            try:
                while chunk := await reader.read(CHUNK):
                    yield chunk
            finally:
                transport.close()
            return
    while chunk := await run_sync(os.read, fd, CHUNK):
        yield chunk


async def read_line_batches(fd: int, max_bytes: int) -> AsyncIterator[list[bytes | None]]:
    """Complete lines from ``fd``, as many at a time as one read brings, in order; blank lines are
    skipped. A line longer than ``max_bytes`` is dropped and stands as a ``None`` where it was."""
    pending = bytearray()  # the start of a line whose end has not arrived yet
    discarding = False  # inside a line already reported as too long
    async for chunk in _chunks(fd):
        parts = chunk.split(b"\n")
        rest = parts.pop()  # after the last newline: the start of the next line
        if parts:
            if discarding:  # the end of the oversized line
                discarding = False
                parts[0] = b""
            elif pending:
                pending += parts[0]
                parts[0] = bytes(pending)
                pending.clear()
            lines: list[bytes | None] = [line if len(line) <= max_bytes else None for line in parts
                                         if len(line) > max_bytes or (line and not line.isspace())]
            if lines:
                yield lines
        if not discarding:
            pending += rest
            if len(pending) > max_bytes:
                pending.clear()
                discarding = True
                yield [None]
    if pending and not pending.isspace() and not discarding:
        yield [bytes(pending)]


class _Writer:
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
        if _is_stream(self._fd):
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


def protect_stdout() -> int:
    """Move the real stdout to a private fd for the wire; fd 1 and ``sys.stdout`` become stderr."""
    sys.stdout.flush()
    wire = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return wire


async def serve_stdio(server: MCPServer, *, stdin_fd: int = 0, stdout_fd: int | None = None,
                      max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, drain_seconds: float = 0.3) -> None:
    """Serve ``server`` on stdin/stdout until EOF or SIGTERM.

    On EOF, requests still running get ``drain_seconds`` to finish (so a piped script of
    requests gets its answers); then they are cancelled. SIGTERM cancels at once.
    """
    wire = protect_stdout() if stdout_fd is None else stdout_fd
    gc.freeze()  # start-up objects live as long as the process; keep them out of full collections
    writer = _Writer(wire)
    await writer.start()
    writer_task = asyncio.create_task(writer.run())
    connection = Connection(ServerSession(server, post=writer.post), writer.write, pace=PACE)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)

    def too_long() -> None:
        writer.post(jsonrpc.error(None, INVALID_REQUEST, f"Invalid Request: message larger than {max_message_bytes} bytes"))

    async def pump() -> None:
        feed = connection.feed
        async for lines in read_line_batches(stdin_fd, max_message_bytes):
            for line in lines:
                if line is None:
                    too_long()
                else:
                    await feed(line)

    reader_task = asyncio.create_task(pump())
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({reader_task, stopper, writer_task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        eof = reader_task.done() and not stop.is_set()
        server.bus.end_all()  # open subscriptions/listen requests answer and end
        reader_task.cancel()
        stopper.cancel()
        if eof:
            await connection.drain(drain_seconds)
        await connection.close()
        if server.has_task_runner:  # the one client is gone: its tasks end here, failed, saying why
            with contextlib.suppress(Exception):
                await server.task_runner.shutdown()
        await writer.close()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(writer_task, 1.0)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        if reader_task.done() and not reader_task.cancelled() and reader_task.exception() is not None:
            log.error("stdin reader failed: %s", reader_task.exception())
