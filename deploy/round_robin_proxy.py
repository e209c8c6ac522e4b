"""A round-robin reverse proxy for HTTP/1.1 that streams both ways: what ``deploy/nginx.conf`` does in
front of the replicas, for ``deploy/local_cluster.py`` and the tests, in the standard library only.

No affinity: every request, whatever its connection or its ``Mcp-Session-Id``, goes to the next
replica. Request and response bodies are streamed unbuffered (SSE works, ``Last-Event-ID`` and every
other header passes through), ``X-Forwarded-*`` is added, and the next replica is tried when one
refuses the connection. Keep-alive to clients; one upstream connection per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

log = logging.getLogger("wiremcp.proxy")

START_BOUND = 30.0
"""Failure bound for the proxy to start (a deadline, not a wait)."""
STOP_BOUND = 5.0

CHUNK = 64 * 1024
MAX_HEAD = 64 * 1024
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade"})
"""Headers that describe one connection, not the message (``Transfer-Encoding`` stays: bodies are
relayed with their framing)."""


# -- the proxy ----------------------------------------------------------------------------------------------
class BadRequest(Exception):
    """A request the proxy cannot parse; answered with 400 and the connection closed."""


@dataclass(frozen=True, slots=True)
class Routed:
    """One request the proxy forwarded: where it went and what came back."""

    method: str
    path: str
    replica: int
    """Index into the proxy's backends."""
    session: str | None
    """The request's ``Mcp-Session-Id`` or, for the request that created the session, the response's."""
    status: int


@dataclass(frozen=True, slots=True)
class Head:
    """A request or status line and its headers, names as sent."""

    start: str
    headers: list[tuple[str, str]]

    @classmethod
    def parse(cls, raw: bytes) -> Head:
        lines = raw.decode("latin-1").split("\r\n")
        headers = []
        for line in lines[1:]:
            if not line:
                continue
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip() or line[0] in " \t":
                raise BadRequest(f"malformed header line {line!r}")
            headers.append((name, value.strip()))
        return cls(lines[0], headers)

    def get(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k.lower() == name]
        return ", ".join(values) if values else None

    def tokens(self, name: str) -> list[str]:
        return [t.strip().lower() for t in (self.get(name) or "").split(",") if t.strip()]

    def without_hop_by_hop(self) -> list[tuple[str, str]]:
        listed = HOP_BY_HOP | set(self.tokens("connection"))
        return [(k, v) for k, v in self.headers if k.lower() not in listed]


def encode_head(start: str, headers: Sequence[tuple[str, str]]) -> bytes:
    return "".join([start, "\r\n", *(f"{k}: {v}\r\n" for k, v in headers), "\r\n"]).encode("latin-1")


class Incoming:
    """A client connection's bytes, read ahead: the proxy notices that a client went away while a
    response streams to it (and closes the upstream connection, which the replica sees as a disconnect)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self._buffer = bytearray()
        self._read: asyncio.Future[bytes] | None = None

    async def _fill(self) -> bool:
        """Read once more; False at end of stream. One read at a time, shielded so that a waiter
        being cancelled loses no bytes."""
        if self._read is None:
            self._read = asyncio.ensure_future(self._reader.read(CHUNK))
        data = await asyncio.shield(self._read)
        self._read = None
        self._buffer += data
        return bool(data)

    async def until(self, separator: bytes, limit: int) -> bytes | None:
        """Bytes up to and including ``separator``; None if the client closed before sending any."""
        while (end := self._buffer.find(separator)) < 0:
            if len(self._buffer) > limit:
                raise BadRequest("request head too large")
            if not await self._fill():
                if self._buffer:
                    raise BadRequest("connection closed mid-request")
                return None
        out = bytes(self._buffer[:end + len(separator)])
        del self._buffer[:end + len(separator)]
        return out

    async def some(self, most: int) -> bytes:
        """Up to ``most`` bytes, at least one."""
        if not self._buffer and not await self._fill():
            raise BadRequest("connection closed mid-body")
        out = bytes(self._buffer[:most])
        del self._buffer[:most]
        return out

    async def closed(self) -> None:
        """Returns once the client has closed its side (keeping whatever it sends before that)."""
        while await self._fill():
            pass

    def close(self) -> None:
        if self._read is not None:
            self._read.cancel()


class RoundRobinProxy:
    """An HTTP/1.1 reverse proxy that sends each request to the next backend in turn."""

    def __init__(self, backends: Sequence[tuple[str, int]], *, connect_timeout: float = 5.0) -> None:
        if not backends:
            raise ValueError("a proxy needs at least one backend")
        self.backends = list(backends)
        self.connect_timeout = connect_timeout
        self.routed: list[Routed] = []
        """Every request forwarded, in the order their answers began."""
        self._turn = itertools.cycle(range(len(self.backends)))
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listen; returns the port (useful with ``port=0``)."""
        self._server = await asyncio.start_server(self._serve, host, port, limit=MAX_HEAD)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and end every connection (streams in flight included)."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=STOP_BOUND)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        incoming = Incoming(reader)
        peer = writer.get_extra_info("peername")
        client_ip = str(peer[0]) if isinstance(peer, tuple) else "127.0.0.1"
        try:
            while await self._exchange(incoming, writer, client_ip):
                pass
        except BadRequest as exc:
            log.debug("bad request from %s: %s", client_ip, exc)
            with contextlib.suppress(ConnectionError):
                await self._answer(writer, 400, "Bad Request")
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away
        finally:
            incoming.close()
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()
            self._connections.discard(task)

    async def _exchange(self, incoming: Incoming, writer: asyncio.StreamWriter, client_ip: str) -> bool:
        """Forward one request and its answer; True if the client connection may carry another."""
        raw = await incoming.until(b"\r\n\r\n", MAX_HEAD)
        if raw is None:
            return False
        request = Head.parse(raw)
        method, _, rest = request.start.partition(" ")
        target, _, version = rest.partition(" ")
        if not method or not target.startswith("/") or not version.startswith("HTTP/1."):
            raise BadRequest(f"unsupported request line {request.start!r}")
        keep_alive = version == "HTTP/1.1" and "close" not in request.tokens("connection")
        connected = await self._connect()
        if connected is None:
            await self._answer(writer, 502, "Bad Gateway: no replica accepted the connection")
            return False
        replica, up_reader, up_writer = connected
        try:
            body_sent = await self._forward_request(request, method, target, client_ip, incoming, up_writer)
            answer = await self._read_answer(up_reader, writer)
            if answer is None:
                await self._answer(writer, 502, "Bad Gateway: the replica closed the connection")
                return False
            session = request.get("mcp-session-id") or answer.get("mcp-session-id")
            status = int(answer.start.split(" ")[1])
            self.routed.append(Routed(method, target.partition("?")[0], replica, session, status))
            framed = self._has_framed_body(method, status, answer)
            keep_alive = keep_alive and body_sent and framed is not None
            headers = answer.without_hop_by_hop()
            if not keep_alive:
                headers.append(("Connection", "close"))
            writer.write(encode_head(answer.start, headers))
            await writer.drain()
            if framed != 0:
                # Racing the client's end: a client that closes a stream must close it upstream too.
                relay = asyncio.ensure_future(self._relay(up_reader, writer, framed))
                gone = asyncio.ensure_future(incoming.closed())
                try:
                    await asyncio.wait({relay, gone}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    relay.cancel()
                    gone.cancel()
                if not relay.done() or relay.cancelled() or gone.done():
                    return False
                relay.result()
            return keep_alive
        finally:
            up_writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await up_writer.wait_closed()

    async def _connect(self) -> tuple[int, asyncio.StreamReader, asyncio.StreamWriter] | None:
        """A connection to the next backend, or the one after it if that one refuses (like nginx's
        ``proxy_next_upstream error``)."""
        first = next(self._turn)
        for step in range(len(self.backends)):
            index = (first + step) % len(self.backends)
            host, port = self.backends[index]
            try:
                async with asyncio.timeout(self.connect_timeout):
                    reader, writer = await asyncio.open_connection(host, port, limit=MAX_HEAD)
            except (OSError, TimeoutError) as exc:
                log.warning("replica %d (%s:%d) refused the connection: %s", index, host, port, exc)
                continue
            return index, reader, writer
        return None

    async def _forward_request(self, request: Head, method: str, target: str, client_ip: str,
                               incoming: Incoming, up: asyncio.StreamWriter) -> bool:
        """Send the request upstream, its body streamed; False if the upstream stopped reading it
        (then the rest of the body is not read either, and the client connection must close)."""
        headers = [(k, v) for k, v in request.without_hop_by_hop()
                   if k.lower() not in ("x-forwarded-for", "x-forwarded-proto", "x-forwarded-host")]
        forwarded_for = request.get("x-forwarded-for")
        headers += [("X-Forwarded-For", f"{forwarded_for}, {client_ip}" if forwarded_for else client_ip),
                    ("X-Forwarded-Proto", request.get("x-forwarded-proto") or "http"),
                    ("X-Forwarded-Host", request.get("x-forwarded-host") or request.get("host") or ""),
                    ("Connection", "close")]
        try:
            up.write(encode_head(f"{method} {target} HTTP/1.1", headers))
            if "chunked" in request.tokens("transfer-encoding"):
                await self._relay_chunked(incoming, up)
            else:
                length = request.get("content-length")
                try:
                    remaining = int(length) if length is not None else 0
                except ValueError:
                    raise BadRequest(f"bad Content-Length {length!r}") from None
                while remaining > 0:
                    data = await incoming.some(min(remaining, CHUNK))
                    remaining -= len(data)
                    up.write(data)
                    await up.drain()
            await up.drain()
        except ConnectionError:
            return False
        return True

    @staticmethod
    async def _relay_chunked(incoming: Incoming, up: asyncio.StreamWriter) -> None:
        while True:
            line = await incoming.until(b"\r\n", MAX_HEAD)
            if line is None:
                raise BadRequest("connection closed mid-body")
            up.write(line)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise BadRequest(f"bad chunk size {line!r}") from None
            if size == 0:
                while (trailer := await incoming.until(b"\r\n", MAX_HEAD)) not in (None, b"\r\n"):
                    up.write(trailer)
                up.write(b"\r\n")
                return
            remaining = size + 2  # the chunk and its CRLF
            while remaining > 0:
                data = await incoming.some(min(remaining, CHUNK))
                remaining -= len(data)
                up.write(data)
                await up.drain()

    @staticmethod
    async def _read_answer(up: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Head | None:
        """The final response head (interim 1xx answers are passed on as they come)."""
        while True:
            try:
                answer = Head.parse(await up.readuntil(b"\r\n\r\n"))
            except (asyncio.IncompleteReadError, ConnectionError):
                return None
            if not answer.start.startswith("HTTP/1.") or not answer.start[9:12].isdigit():
                return None
            if answer.start[9] != "1" or answer.start[9:12] == "101":
                return answer
            writer.write(encode_head(answer.start, answer.headers))
            await writer.drain()

    @staticmethod
    def _has_framed_body(method: str, status: int, answer: Head) -> int | None:
        """0 for no body, -1 for a chunked one, its length for a Content-Length one, None when the
        body ends with the connection (then so does the client connection)."""
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return 0
        if answer.get("transfer-encoding") is not None:
            return -1
        length = answer.get("content-length")
        if length is not None and length.isdigit():
            return int(length)
        return None

    @staticmethod
    async def _relay(up: asyncio.StreamReader, writer: asyncio.StreamWriter, framed: int | None) -> None:
        """Copy the body as it comes, chunk by chunk: a Content-Length body up to its length, any other
        until the replica closes (every upstream request says ``Connection: close``)."""
        remaining = framed if framed is not None and framed > 0 else math.inf
        while remaining > 0:
            data = await up.read(int(min(remaining, CHUNK)))
            if not data:
                if remaining != math.inf:
                    raise ConnectionError("the replica closed the connection mid-body")
                return
            remaining -= len(data)
            writer.write(data)
            await writer.drain()

    @staticmethod
    async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
        body = text.encode() + b"\n"
        reason = text.partition(":")[0]
        writer.write(encode_head(f"HTTP/1.1 {status} {reason}",
                                 [("Content-Type", "text/plain; charset=utf-8"),
                                  ("Content-Length", str(len(body))), ("Connection", "close")]) + body)
        await writer.drain()


class ProxyThread:
    """A ``RoundRobinProxy`` serving on an event loop of its own, so synchronous code (a script, a test
    fixture) can run it next to whatever loop the clients use."""

    def __init__(self, proxy: RoundRobinProxy, host: str, port: int) -> None:
        self.proxy = proxy
        self.host = host
        self.port = port
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="wiremcp-proxy", daemon=True)

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(START_BOUND):
            raise TimeoutError("the proxy did not start")
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(STOP_BOUND + 2)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to start(); a failure after startup is logged
            if self._ready.is_set():
                log.exception("the proxy failed")
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            self.port = await self.proxy.start(self.host, self.port)
            self._ready.set()
            await self._stop.wait()
        finally:
            await self.proxy.close()
