"""Shared helpers for the HTTP transport tests.

- ``run_uvicorn``: a REAL ``python -m uvicorn app:asgi`` process on a free loopback port, with
  ``WIREMCP_*`` settings from the environment; returns once the port accepts connections
  (``run_wiremcp_http``: the same with ``python -m wiremcp http``).
- ``serve_in_process``: uvicorn in the test's own event loop, on a real socket, for checks that
  need to reach into the server (an injected clock, the session manager) while streaming.
- ``asgi_client``: httpx over ``ASGITransport`` (no socket) for requests whose answer is complete
  (JSON answers, errors, SSE streams that end with their response).
- ``RawSession`` and ``SSEReader``: a hand-rolled Streamable HTTP client, so tests see exact
  statuses, headers and events.

Nothing here sleeps to wait for something: every wait has a deadline, and a deadline that
passes is a failure, not a measurement.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import httpx
import pytest
import uvicorn

from wiremcp.transports.asgi import ASGIApp, Receive, Scope, SendASGI

ROOT = Path(__file__).resolve().parents[2]

READ_BOUND = 10.0
"""Failure bound for one expected HTTP answer or SSE event."""
START_BOUND = 20.0
"""Failure bound for a uvicorn process to accept connections."""
STOP_BOUND = 5.0

ACCEPT_BOTH = "application/json, text/event-stream"
LATEST = "2025-11-25"
CLIENT_INFO = {"name": "wiremcp-http-tests", "version": "0"}


# -- a real uvicorn process -----------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses connections for as long as the block runs: bound here, never listening, so
    that no other test (another worker's server) can take it meanwhile, as it could a ``free_port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@dataclass
class UvicornProcess:
    """A running ``uvicorn app:asgi``; ``url`` is its MCP endpoint."""

    process: subprocess.Popen[bytes]
    port: int
    log: IO[bytes]
    host: str = "127.0.0.1"
    path: str = "/mcp"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return self.base_url + self.path

    @property
    def origin(self) -> str:
        return self.base_url

    def output(self) -> str:
        """Everything the process wrote to stderr/stdout so far."""
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def stop_and_wait(self, bound: float = READ_BOUND) -> str:
        """A real SIGTERM; the process must exit within ``bound`` (by the signal, or with status 0: uvicorn
        re-raises the signal it caught) without a traceback. Its output is returned. One still running is
        made to dump its threads' stacks (``faulthandler``, on SIGABRT) and the test fails with them."""
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(bound)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(STOP_BOUND)
            pytest.fail(f"the process still ran {bound}s after SIGTERM; where it was:\n{self.output()}")
        output = self.output()
        assert code in (0, -signal.SIGTERM), (code, output)
        assert "Traceback" not in output, output
        return output


def _wait_until_accepting(proc: subprocess.Popen[bytes], host: str, port: int, deadline: float) -> bool:
    """Poll the port until it accepts a connection; False if the process died first."""
    while True:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=0.25):
                return True
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"uvicorn did not accept connections on {host}:{port} in {START_BOUND}s") from None
            time.sleep(0.02)  # the poll interval of a bounded wait, not a wait for something


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not ended within ``STOP_BOUND``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(STOP_BOUND)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_BOUND)


@contextlib.contextmanager
def run_uvicorn(server: str, env: Mapping[str, str] | None = None, *, attempts: int = 3,
                app: str = "app:asgi", options: Sequence[str] = ()) -> Iterator[UvicornProcess]:
    """``python -m uvicorn app:asgi`` (or ``app``, e.g. ``wiremcp:asgi``) serving ``server`` (``MODULE:ATTR``)
    at /mcp, cwd = the repo root; ``options`` go on uvicorn's command line."""
    with _serving(server, env, attempts, lambda port: [
            sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
            "--log-level", "warning", "--no-access-log", "--timeout-graceful-shutdown", "2", *options]) as running:
        yield running


@contextlib.contextmanager
def run_wiremcp_http(server: str, env: Mapping[str, str] | None = None, *,
                     attempts: int = 3) -> Iterator[UvicornProcess]:
    """``python -m wiremcp http`` serving ``server`` (``MODULE:ATTR``) at /mcp, cwd = the repo root: the command
    line's own uvicorn, which on SIGTERM waits for every connection to end with no time limit of its own
    (unlike ``run_uvicorn``'s, whose ``--timeout-graceful-shutdown`` would cut what the drain leaves)."""
    with _serving(server, env, attempts, lambda port: [
            sys.executable, "-m", "wiremcp", "http", server, "--host", "127.0.0.1", "--port", str(port)]) as running:
        yield running


@contextlib.contextmanager
def run_wiremcp_http_command(command: list[str], env: Mapping[str, str] | None = None, *,
                             attempts: int = 3) -> Iterator[UvicornProcess]:
    """``python -m wiremcp http -- COMMAND ARGS...``: the stdio server ``command`` launches, served over HTTP."""
    with _serving(" ".join(command), env, attempts, lambda port: [
            sys.executable, "-m", "wiremcp", "http", "--host", "127.0.0.1", "--port", str(port), "--",
            *command]) as running:
        yield running


@contextlib.contextmanager
def _serving(server: str, env: Mapping[str, str] | None, attempts: int,
             command: Callable[[int], list[str]]) -> Iterator[UvicornProcess]:
    """The process ``command(port)`` runs, serving ``server``, once its port accepts connections."""
    child_env = {**os.environ, "WIREMCP_SERVER": server, "WIREMCP_LOG_LEVEL": "WARNING",
                 "PYTHONDONTWRITEBYTECODE": "1", "PYTHONFAULTHANDLER": "1", **(env or {})}
    last_output = ""
    for _ in range(attempts):  # another process may grab the free port between probe and bind
        port = free_port()
        with tempfile.TemporaryFile() as log:
            proc = subprocess.Popen(command(port), cwd=ROOT, env=child_env, stdout=log, stderr=subprocess.STDOUT)
            running = UvicornProcess(proc, port, log)
            try:
                if _wait_until_accepting(proc, "127.0.0.1", port, time.monotonic() + START_BOUND):
                    yield running
                    return
                last_output = running.output()
            finally:
                stop_process(proc)
    raise RuntimeError(f"{' '.join(command(0)[1:4])} did not start serving {server}:\n{last_output}")


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1.0).status_code == 200
    except httpx.TransportError:
        return False


@contextlib.contextmanager
def run_uvicorn_on(sock: socket.socket, server: str, env: Mapping[str, str] | None = None, *,
                   app: str = "app:asgi") -> Iterator[UvicornProcess]:
    """``python -m uvicorn app:asgi --fd N`` on ``sock`` (``bound_socket()``), a port known before the process
    starts: what a test must tell another party first (an identity provider, the callback URL)."""
    child_env = {**os.environ, "WIREMCP_SERVER": server, "WIREMCP_LOG_LEVEL": "WARNING",
                 "PYTHONDONTWRITEBYTECODE": "1", "PYTHONFAULTHANDLER": "1", **(env or {})}
    fd = sock.fileno()
    command = [sys.executable, "-m", "uvicorn", app, "--fd", str(fd), "--log-level", "warning", "--no-access-log",
               "--timeout-graceful-shutdown", "2"]
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(command, cwd=ROOT, env=child_env, stdout=log, stderr=subprocess.STDOUT,
                                pass_fds=(fd,))
        running = UvicornProcess(proc, sock.getsockname()[1], log)
        try:
            deadline = time.monotonic() + START_BOUND
            while not _answers(running.base_url + "/healthz"):  # the socket accepted before uvicorn ran
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"uvicorn did not start serving {server}:\n{running.output()}")
                time.sleep(0.02)  # the poll interval of a bounded wait
            yield running
        finally:
            stop_process(proc)


@contextlib.contextmanager
def run_replicas(server: str, envs: Mapping[str, Mapping[str, str]]) -> Iterator[dict[str, UvicornProcess]]:
    """One ``run_uvicorn`` of ``server`` per name, with that name's environment; on the way out, none of
    them may have logged a traceback."""
    with contextlib.ExitStack() as stack:
        processes = {name: stack.enter_context(run_uvicorn(server, env)) for name, env in envs.items()}
        yield processes
        outputs = {name: process.output() for name, process in processes.items()}
    for name, output in outputs.items():
        assert "Traceback" not in output, (name, output)


# -- in-process serving -------------------------------------------------------------------------------
class _Lifespan:
    """Answers the lifespan protocol itself (tests shut their managers down) and signals startup."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.started = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
                self.started.set()
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return


def bound_socket() -> socket.socket:
    """A listening socket on a free loopback port: the port is known (and kept) before the app is made."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections queue up from here on, so the server is reachable at once
    return sock


@contextlib.asynccontextmanager
async def serve_in_process(app: ASGIApp, sock: socket.socket | None = None) -> AsyncIterator[str]:
    """uvicorn in this event loop on a real loopback socket (``sock``, or one of its own); yields the base URL."""
    sock = sock or bound_socket()
    port = sock.getsockname()[1]
    wrapped = _Lifespan(app)
    config = uvicorn.Config(wrapped, lifespan="on", log_level="warning", access_log=False,
                            timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    started = asyncio.create_task(wrapped.started.wait())
    try:
        done, _ = await asyncio.wait({serving, started}, timeout=START_BOUND, return_when=asyncio.FIRST_COMPLETED)
        if started not in done:
            raise RuntimeError("the in-process uvicorn did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        started.cancel()
        server.should_exit = True
        try:
            await asyncio.wait_for(serving, STOP_BOUND + 2)
        finally:
            sock.close()


def asgi_client(app: ASGIApp, base_url: str = "http://127.0.0.1") -> httpx.AsyncClient:
    """httpx straight into an ASGI app: no socket; each answer is returned once complete."""
    transport = httpx.ASGITransport(app=cast(Any, app))
    return httpx.AsyncClient(transport=transport, base_url=base_url, timeout=READ_BOUND)


class FakeClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# -- SSE ----------------------------------------------------------------------------------------------------
@dataclass
class SSEEvent:
    id: str | None = None
    event: str | None = None
    data: str | None = None
    """None when the event had no ``data`` field; "" for an empty one (the priming event)."""
    retry: int | None = None

    @property
    def message(self) -> Any:
        """The JSON-RPC message carried, or None for an event without data."""
        return json.loads(self.data) if self.data else None

    @property
    def stream(self) -> str:
        """The stream an id names: ``<stream>_<seq>``."""
        assert self.id is not None
        return self.id.rpartition("_")[0]

    @property
    def seq(self) -> int:
        assert self.id is not None
        return int(self.id.rpartition("_")[2])


class _SSEParser:
    def __init__(self) -> None:
        self._event = SSEEvent()
        self._seen = False

    def feed(self, line: str) -> SSEEvent | None:
        """One line (without its terminator); returns an event when a blank line completes one."""
        if not line:
            if not self._seen:
                return None
            event, self._event, self._seen = self._event, SSEEvent(), False
            return event
        if line.startswith(":"):
            return None  # a comment (keep-alive ping)
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        self._seen = True
        if name == "id":
            self._event.id = value
        elif name == "event":
            self._event.event = value
        elif name == "data":
            self._event.data = value if self._event.data is None else self._event.data + "\n" + value
        elif name == "retry":
            self._event.retry = int(value)
        return None


def parse_sse(text: str) -> list[SSEEvent]:
    """Every event of a complete SSE body."""
    parser = _SSEParser()
    events = []
    for line in text.splitlines():
        event = parser.feed(line)
        if event is not None:
            events.append(event)
    return events


class SSEReader:
    """Reads the events of a streaming httpx response one at a time, each read with a deadline."""

    def __init__(self, response: httpx.Response) -> None:
        assert response.headers["content-type"].startswith("text/event-stream"), response.headers
        self.response = response
        self._lines = response.aiter_lines()
        self._parser = _SSEParser()
        self.ended = False
        self.last_id: str | None = None
        """The id of the newest event read (what a client resumes from)."""

    async def _next(self) -> SSEEvent | None:
        async for line in self._lines:
            event = self._parser.feed(line.rstrip("\r\n"))
            if event is not None:
                if event.id:
                    self.last_id = event.id
                return event
        self.ended = True
        return None

    async def next(self, timeout: float = READ_BOUND) -> SSEEvent:
        """The next event; fails if the stream ends or nothing arrives within ``timeout``."""
        async with asyncio.timeout(timeout):
            event = await self._next()
        assert event is not None, "the SSE stream ended"
        return event

    async def message(self, timeout: float = READ_BOUND) -> Any:
        """The next event that carries a message (skipping a priming event)."""
        while True:
            event = await self.next(timeout)
            if event.data:
                return event.message

    async def rest(self, timeout: float = READ_BOUND) -> list[SSEEvent]:
        """Every event until the server ends the stream."""
        events = []
        async with asyncio.timeout(timeout):
            while (event := await self._next()) is not None:
                events.append(event)
        return events


# -- a hand-rolled Streamable HTTP client -----------------------------------------------------------------
def post_headers(**extra: str) -> dict[str, str]:
    return {"accept": ACCEPT_BOTH, "content-type": "application/json", **extra}


def request_body(rid: int | str, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = dict(params)
    return body


def error_of(response: httpx.Response) -> tuple[int, Any]:
    """(JSON-RPC error code, id) of an HTTP error answer, checking its shape on the way."""
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    return body["error"]["code"], body["id"]


@dataclass
class RawSession:
    """One Streamable HTTP session driven by hand."""

    client: httpx.AsyncClient
    url: str
    sid: str
    version: str
    send_version: bool = True
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(100))

    def headers(self, **extra: str) -> dict[str, str]:
        out = post_headers(**{"mcp-session-id": self.sid})
        if self.send_version:
            out["mcp-protocol-version"] = self.version
        out.update(extra)
        return out

    def next_id(self) -> int:
        return next(self._ids)

    async def post(self, body: Any, /, **headers: str) -> httpx.Response:
        return await self.client.post(self.url, content=json.dumps(body), headers=self.headers(**headers))

    async def request(self, method: str, params: Mapping[str, Any] | None = None, /,
                      **headers: str) -> httpx.Response:
        return await self.post(request_body(self.next_id(), method, params), **headers)

    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """The result of a request answered with application/json."""
        response = await self.request(method, params)
        assert response.status_code == 200, (response.status_code, response.text)
        assert response.headers["content-type"] == "application/json", response.headers
        body = response.json()
        assert "error" not in body, body
        return body["result"]

    async def tool(self, tool_name: str, /, **arguments: Any) -> str:
        """Call a tool answered with application/json; returns its text."""
        result = await self.call("tools/call", {"name": tool_name, "arguments": arguments})
        assert not result.get("isError"), result
        return str(result["content"][0]["text"])

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> httpx.Response:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = dict(params)
        return await self.post(body)

    def stream_post(self, body: Any, client: httpx.AsyncClient | None = None, /,
                    **headers: str) -> contextlib.AbstractAsyncContextManager[httpx.Response]:
        return (client or self.client).stream("POST", self.url, content=json.dumps(body),
                                              headers=self.headers(**headers))

    def stream_get(self, last_event_id: str | None = None, client: httpx.AsyncClient | None = None, /,
                   **headers: str) -> contextlib.AbstractAsyncContextManager[httpx.Response]:
        extra = {"accept": "text/event-stream", **headers}
        if last_event_id is not None:
            extra["last-event-id"] = last_event_id
        out = self.headers(**extra)
        out.pop("content-type", None)
        return (client or self.client).stream("GET", self.url, headers=out)

    async def get(self, last_event_id: str | None = None, /, **headers: str) -> httpx.Response:
        """A GET whose answer is expected to be complete (an error, or a finished stream's replay)."""
        async with self.stream_get(last_event_id, **headers) as response:
            await response.aread()
            return response

    async def delete(self) -> httpx.Response:
        return await self.client.delete(self.url, headers=self.headers())


async def initialize(client: httpx.AsyncClient, url: str, version: str = LATEST, *,
                     capabilities: Mapping[str, Any] | None = None, send_version: bool = True,
                     initialized: bool = True) -> RawSession:
    """``initialize`` (and ``notifications/initialized``) by hand; checks the handshake answer."""
    params = {"protocolVersion": version, "capabilities": dict(capabilities or {}), "clientInfo": CLIENT_INFO}
    response = await client.post(url, content=json.dumps(request_body(1, "initialize", params)),
                                 headers=post_headers())
    assert response.status_code == 200, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["id"] == 1, body
    assert body["result"]["protocolVersion"] == version, body
    session = RawSession(client, url, response.headers["mcp-session-id"], version, send_version)
    if initialized:
        done = await session.notify("notifications/initialized")
        assert done.status_code == 202, done.text
    return session


# -- plain ASGI calls ---------------------------------------------------------------------------------------
@dataclass
class ASGIAnswer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def asgi_request(app: ASGIApp, method: str, body: bytes = b"", headers: Mapping[str, str] | None = None,
                       path: str = "/mcp", timeout: float | None = READ_BOUND) -> ASGIAnswer:
    """One request straight into an ASGI app, cheaper than httpx; the answer must be complete.

    ``timeout=None`` leaves the bound to the caller (a cancelled timer stays in the loop until it
    would have fired, which a test measuring memory over thousands of calls would count).
    """
    raw_headers = [(k.lower().encode("latin-1"), v.encode("latin-1"))
                   for k, v in {"host": "127.0.0.1", **(headers or {})}.items()]
    scope: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                    "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
                    "headers": raw_headers, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    complete = asyncio.Event()
    request_sent = False
    started: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal request_sent
        if not request_sent:
            request_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await complete.wait()  # like a client that stays connected until the answer is complete
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            started.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                complete.set()

    async with asyncio.timeout(timeout):
        await app(scope, receive, send)
    complete.set()
    out_headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in started["headers"]}
    return ASGIAnswer(started["status"], out_headers, b"".join(chunks))
