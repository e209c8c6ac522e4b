"""stdio: newline-delimited JSON-RPC on stdin and stdout.

stdout is the wire and nothing else. Before serving, the real stdout is moved to a
private file descriptor and fd 1 is pointed at stderr, so a stray ``print()`` in user
code, or the output of a child process, lands on stderr instead of corrupting the
stream. The process stops on stdin EOF or SIGTERM, cancelling work in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator, Callable

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


async def read_lines(fd: int, max_bytes: int, too_long: Callable[[], None]) -> AsyncIterator[bytes]:
    """Complete lines from ``fd``; a line longer than ``max_bytes`` is dropped and reported."""
    buffer = bytearray()
    discarding = False
    async for chunk in _chunks(fd):
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not discarding:
                    buffer += chunk[start:]
                    if len(buffer) > max_bytes:
                        buffer.clear()
                        discarding = True
                        too_long()
                break
            if discarding:
                discarding = False
            else:
                buffer += chunk[start:end]
                if len(buffer) > max_bytes:
                    too_long()
                elif buffer.strip():
                    yield bytes(buffer)
                buffer.clear()
            start = end + 1
    if buffer.strip() and not discarding:
        yield bytes(buffer)


class _Writer:
    """Serializes outgoing messages onto the wire, one line each, in order."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUE_SIZE)
        self._stream: asyncio.StreamWriter | None = None

    async def start(self) -> None:
        if _is_stream(self._fd):
            loop = asyncio.get_running_loop()
            pipe = os.fdopen(self._fd, "wb", buffering=0, closefd=False)
            with contextlib.suppress(OSError, ValueError):
                transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
                self._stream = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(self, message: JSONObject | list[JSONObject]) -> None:
        await self._queue.put(jsonrpc.dumps(message) + b"\n")

    def post(self, message: JSONObject) -> None:
        try:
            self._queue.put_nowait(jsonrpc.dumps(message) + b"\n")
        except asyncio.QueueFull:
            log.warning("output queue full; dropping %s", message.get("method"))

    async def run(self) -> None:
        while (line := await self._queue.get()) is not None:
            try:
                if self._stream is not None:
                    self._stream.write(line)
                    await self._stream.drain()
                else:
                    await run_sync(os.write, self._fd, line)
            except (BrokenPipeError, ConnectionResetError):
                log.info("stdout closed by the client")
                return

    async def close(self) -> None:
        await self._queue.put(None)


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
    connection = Connection(ServerSession(server, post=writer.post), writer.write)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)

    def too_long() -> None:
        writer.post(jsonrpc.error(None, INVALID_REQUEST, f"Invalid Request: message larger than {max_message_bytes} bytes"))

    async def pump() -> None:
        async for line in read_lines(stdin_fd, max_message_bytes, too_long):
            await connection.feed(line)

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
        await writer.close()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(writer_task, 1.0)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        if reader_task.done() and not reader_task.cancelled() and reader_task.exception() is not None:
            log.error("stdin reader failed: %s", reader_task.exception())
