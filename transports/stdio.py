"""stdio: newline-delimited JSON-RPC on stdin and stdout.

stdout is the wire and nothing else. ``claim_stdio`` moves the real stdin and stdout to private
file descriptors for the wire and points fd 1 at stderr and fd 0 at the null device, so a stray
``print()`` in user code, or a child process, can neither write to the wire nor read from it
(``wiremcp stdio`` claims them before it imports the server's module). The process stops on
stdin EOF or SIGTERM, cutting off work in flight (each request answered with a retryable error).

Pipes, sockets and terminals are read and written through the event loop; anything else (a
regular file, ``/dev/null``) cannot be polled and is read and written with blocking calls off the
loop, so ``wiremcp stdio < requests.txt > answers.txt`` and ``docker run`` without ``-i`` work too.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import NamedTuple

from wiremcp import jsonrpc
from wiremcp.connection import Connection
from wiremcp.errors import INVALID_REQUEST
from wiremcp.server import MCPServer
from wiremcp.session import ServerSession
from wiremcp.shutdown import shut_down
from wiremcp.threads import run_sync
from wiremcp.transports.line_writer import LineWriter, is_stream

log = logging.getLogger("wiremcp.stdio")

CHUNK = 1 << 16
DEFAULT_MAX_MESSAGE_BYTES = 4 << 20
PACE = 128
"""With this many requests in flight, reading waits (briefly) for some to finish: a pipelining client
is served in waves whose state stays in the CPU's caches (``Connection``'s ``pace``)."""


async def _chunks(fd: int) -> AsyncIterator[bytes]:
    """Raw bytes from ``fd`` until EOF, without blocking the event loop."""
    loop = asyncio.get_running_loop()
    if is_stream(fd):
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


class Wire(NamedTuple):
    """The private file descriptors the stdio wire is served on."""

    stdin: int
    stdout: int


_claimed: Wire | None = None


def _open_if_closed(fd: int, flags: int) -> None:
    """Put the null device at ``fd`` if it is closed (``wiremcp stdio <&-``): a closed stdin reads
    as EOF, and no duplicate made later can land on a standard fd."""
    try:
        os.fstat(fd)
    except OSError:
        null = os.open(os.devnull, flags)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)


def claim_stdio() -> Wire:
    """Take the process's stdin and stdout for the wire; returns their private duplicates.

    fd 0 (and ``sys.stdin``) then reads the null device and fd 1 (and ``sys.stdout``) writes to
    stderr, so neither ``print()`` nor a child process reaches the wire. Call it before importing
    code that might print; it acts once per process and later calls return the same wire.
    """
    global _claimed
    if _claimed is not None:
        return _claimed
    if sys.stdout is not None:
        sys.stdout.flush()
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        _open_if_closed(fd, flags)
    wire = Wire(os.dup(0), os.dup(1))  # not inherited by child processes
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 -- lives as long as the process
    sys.stdout = sys.stderr
    _claimed = wire
    return wire


def _wire(stdin_fd: int | None, stdout_fd: int | None) -> Wire:
    """The fds to serve: those given, except that the claimed wire stands for any not given and,
    once the process's stdio is claimed, for fds 0 and 1 (which then no longer lead to the client)."""
    if stdin_fd is None or stdout_fd is None or _claimed is not None:
        claimed = claim_stdio()
        return Wire(claimed.stdin if stdin_fd is None or stdin_fd == 0 else stdin_fd,
                    claimed.stdout if stdout_fd is None or stdout_fd == 1 else stdout_fd)
    return Wire(stdin_fd, stdout_fd)


async def serve_stdio(server: MCPServer, *, stdin_fd: int | None = None, stdout_fd: int | None = None,
                      max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, drain_seconds: float = 0.3) -> None:
    """Serve ``server`` on ``stdin_fd``/``stdout_fd`` until EOF or SIGTERM.

    Without them, the process's own stdin and stdout are served, claimed first (``claim_stdio``);
    once they are claimed, fds 0 and 1 stand for the wire. On EOF, requests still running get
    ``drain_seconds`` to finish (so a piped script of requests gets its answers); then they are cut
    off: answered with the shutdown's retryable error (``wiremcp.shutdown``), their handlers cancelled.
    SIGTERM cuts them off at once.
    """
    stdin_fd, stdout = _wire(stdin_fd, stdout_fd)
    async with server.runtime.lifespans.held():
        await _serve(server, stdin_fd, stdout, max_message_bytes, drain_seconds)


async def _serve(server: MCPServer, stdin_fd: int, stdout: int, max_message_bytes: int, drain_seconds: float) -> None:
    gc.freeze()  # start-up objects live as long as the process; keep them out of full collections
    writer = LineWriter(stdout)
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
        reader_task.cancel()
        stopper.cancel()
        # the one client is gone: on EOF, the requests running get ``drain_seconds``; on SIGTERM, nothing;
        # then what still runs is answered with the shutdown's retryable error. Tasks get no time: nobody
        # is left to poll them.
        await shut_down(server, grace=drain_seconds if eof else 0.0, wait_for_tasks=False)
        await connection.close()
        await writer.close()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(writer_task, 1.0)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        if reader_task.done() and not reader_task.cancelled() and reader_task.exception() is not None:
            log.error("stdin reader failed: %s", reader_task.exception())
