"""``deploy/local_cluster.py``: the compose topology on loopback.

- The round-robin proxy on its own, against in-process backends: each request to the next backend
  (over one client connection), headers and bodies through, SSE unbuffered, a client that closes a
  stream closes it upstream, a backend that refuses connections skipped.
- The whole cluster (Redis, two ``uvicorn app:asgi`` replicas, the proxy), driven by the official
  ``mcp`` client: sessions whose requests alternate between the replicas, in the handshake era, and
  the stateless era through the same proxy.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from deploy.local_cluster import LocalCluster
from deploy.round_robin_proxy import RoundRobinProxy, Routed
from tests.support.http import READ_BOUND, SSEReader, free_port, serve_in_process
from wiremcp.transports.asgi import Receive, Scope, SendASGI

pytestmark = pytest.mark.timeout(60)

DEMO_TOOLS = {"text_stats", "digest", "now", "add_note"}


# -- the proxy against in-process backends ----------------------------------------------------------------
class Backend:
    """An ASGI app that echoes what it received, or (``/stream``) streams two events around a gate."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[dict[str, Any]] = []
        self.release = asyncio.Event()
        self.disconnected = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.seen.append({"method": scope["method"], "path": scope["path"], "headers": headers, "body": body})
        if scope["path"] == "/stream":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream"), (b"x-backend", self.name.encode())]})
            await send({"type": "http.response.body", "body": b"id: 1\ndata: one\n\n", "more_body": True})
            await self.release.wait()
            await send({"type": "http.response.body", "body": b"id: 2\ndata: two\n\n", "more_body": True})
            if (await receive())["type"] == "http.disconnect":
                self.disconnected.set()
            return
        answer = json.dumps({"backend": self.name, "body": body.decode()}).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"mcp-session-id", b"s-1")]})
        await send({"type": "http.response.body", "body": answer})


@asynccontextmanager
async def proxied(*backends: Backend, refused: int = 0) -> AsyncIterator[tuple[str, RoundRobinProxy]]:
    """The backends on real sockets (and ``refused`` ports nobody listens on, first), behind a proxy."""
    async with serving(backends) as urls:
        addresses = [("127.0.0.1", free_port()) for _ in range(refused)]
        addresses += [("127.0.0.1", int(url.rsplit(":", 1)[1])) for url in urls]
        proxy = RoundRobinProxy(addresses, connect_timeout=READ_BOUND)
        port = await proxy.start()
        try:
            yield f"http://127.0.0.1:{port}", proxy
        finally:
            await proxy.close()


@asynccontextmanager
async def serving(backends: tuple[Backend, ...]) -> AsyncIterator[list[str]]:
    if not backends:
        yield []
        return
    async with serve_in_process(backends[0]) as url, serving(backends[1:]) as rest:
        yield [url, *rest]


async def test_each_request_goes_to_the_next_backend_with_headers_and_body() -> None:
    a, b = Backend("a"), Backend("b")
    async with proxied(a, b) as (url, proxy), httpx.AsyncClient(base_url=url, timeout=READ_BOUND) as http:
        answers = []
        for n in range(4):  # one client connection (keep-alive), four requests
            response = await http.post("/mcp?x=1", content=f"body {n}",
                                       headers={"mcp-session-id": "s-1", "last-event-id": "s_7",
                                                "authorization": "Bearer t", "host": "mcp.example.com:8080"})
            assert response.status_code == 200
            assert response.headers["mcp-session-id"] == "s-1"
            answers.append(response.json())

        async def chunks() -> AsyncIterator[bytes]:
            yield b"chunked "
            yield b"upload"

        chunked = await http.post("/mcp", content=chunks())
    assert [answer["backend"] for answer in answers] == ["a", "b", "a", "b"]
    assert [answer["body"] for answer in answers] == ["body 0", "body 1", "body 2", "body 3"]
    assert chunked.json() == {"backend": "a", "body": "chunked upload"}
    headers = a.seen[0]["headers"]
    assert headers["mcp-session-id"] == "s-1"
    assert headers["last-event-id"] == "s_7"
    assert headers["authorization"] == "Bearer t"
    assert headers["host"] == "mcp.example.com:8080"
    assert headers["x-forwarded-for"] == "127.0.0.1"
    assert headers["x-forwarded-proto"] == "http"
    assert headers["x-forwarded-host"] == "mcp.example.com:8080"
    assert a.seen[0]["path"] == "/mcp"
    assert [r.replica for r in proxy.routed] == [0, 1, 0, 1, 0]
    assert proxy.routed[0] == Routed("POST", "/mcp", 0, "s-1", 200)


async def test_streams_are_unbuffered_and_closing_one_closes_it_upstream() -> None:
    backend = Backend("a")
    async with proxied(backend) as (url, _), httpx.AsyncClient(base_url=url, timeout=READ_BOUND) as http:
        async with http.stream("GET", "/stream") as response:
            assert response.headers["x-backend"] == "a"
            events = SSEReader(response)
            assert (await events.next()).data == "one"  # while the backend still holds the second one
            backend.release.set()
            assert (await events.next()).data == "two"
        async with asyncio.timeout(READ_BOUND):
            await backend.disconnected.wait()


async def test_a_backend_refusing_connections_is_skipped() -> None:
    backend = Backend("a")
    async with proxied(backend, refused=1) as (url, proxy), httpx.AsyncClient(base_url=url,
                                                                             timeout=READ_BOUND) as http:
        statuses = [(await http.post("/mcp", content="x")).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    assert [r.replica for r in proxy.routed] == [1, 1, 1]


async def test_no_backend_accepting_is_a_502() -> None:
    async with proxied(refused=2) as (url, proxy), httpx.AsyncClient(base_url=url, timeout=READ_BOUND) as http:
        response = await http.post("/mcp", content="x")
    assert response.status_code == 502
    assert proxy.routed == []


# -- the whole cluster, with the official client ---------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    logs: Path = tmp_path_factory.mktemp("local-cluster")
    env = {"WIREMCP_LOG_LEVEL": "WARNING", "UVICORN_LOG_LEVEL": "warning", "WIREMCP_DRAIN_SECONDS": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    with LocalCluster(2, log_dir=logs, env=env, access_log=False) as running:
        yield running
        replicas = running.replicas
    for replica in replicas:
        output = replica.output()
        assert "Traceback" not in output, (replica.name, output)


@asynccontextmanager
async def official_client(url: str, mode: str) -> AsyncIterator[Client]:
    problems: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            problems.append(message)

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(READ_BOUND, read=60.0)) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=READ_BOUND, message_handler=on_message,
                          cache=None) as client:
            yield client
    assert problems == []


async def use_the_demo(client: Client, text: str) -> None:
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert tools >= DEMO_TOOLS
    result = await client.call_tool("text_stats", {"text": text})
    assert not result.is_error, result
    assert result.structured_content == {"words": len(text.split()), "chars": len(text), "lines": 1}
    digest = await client.call_tool("digest", {"text": text, "algorithm": "md5"})
    assert not digest.is_error, digest


@pytest.mark.spec("2025-11-25/basic/transports#session-management")
async def test_sessions_are_served_by_both_replicas_in_turn(cluster: LocalCluster) -> None:
    assert cluster.proxy is not None
    before = len(cluster.proxy.routed)
    for n in range(3):
        async with official_client(cluster.url, "legacy") as client:
            assert client.protocol_version == "2025-11-25"
            await use_the_demo(client, f"session {n} of three")
    routed = cluster.proxy.routed[before:]
    sessions = {r.session for r in routed}
    assert None not in sessions
    assert len(sessions) == 3
    for sid in sessions:
        mine = [r for r in routed if r.session == sid]
        assert all(r.status in (200, 202) for r in mine), mine  # never 404: every replica knows the session
        assert {r.replica for r in mine} == {0, 1}, mine  # made on one replica, used on both
        assert [r.method for r in mine if r.method != "POST"][-1] == "DELETE", mine
    counts = [sum(r.replica == i for r in routed) for i in (0, 1)]
    assert abs(counts[0] - counts[1]) <= 1, counts


@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#backward-compatibility")
async def test_the_stateless_era_goes_through_the_same_proxy(cluster: LocalCluster) -> None:
    assert cluster.proxy is not None
    before = len(cluster.proxy.routed)
    async with official_client(cluster.url, "auto") as client:
        assert client.protocol_version == "2026-07-28"
        for n in range(2):
            await use_the_demo(client, f"stateless round {n}")
    routed = cluster.proxy.routed[before:]
    assert len(routed) >= 6
    assert {r.session for r in routed} == {None}
    assert {r.status for r in routed} == {200}
    assert {r.replica for r in routed} == {0, 1}
