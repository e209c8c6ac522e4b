"""``Operations``: ``/healthz``, ``/readyz`` and ``/metrics`` in front of the MCP app, ahead of the Host/Origin
guard and authentication; lifespan and everything else passed on; and, end to end, a real uvicorn
serving ``app:asgi`` whose probes and metrics answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support.http import READ_BOUND, asgi_client, initialize, run_uvicorn
from wiremcp import MCPServer
from wiremcp.logs import SESSION_ID
from wiremcp.transports.asgi import Message, Receive, Scope, SendASGI, respond
from wiremcp.transports.http_app import MCPHttpApp
from wiremcp.transports.observability.metrics import Metrics
from wiremcp.transports.observability.operations import TRACE_HEADERS, Operations, ReadinessCheck

POD_HOST = "10.1.2.3:8000"
"""What a Kubernetes probe sends as ``Host``: the pod's IP, on no allow-list."""


def _server() -> MCPServer:
    server = MCPServer("ops")

    @server.tool()
    def word_count(text: str) -> int:
        return len(text.split())

    return server


@pytest.fixture
async def mcp() -> AsyncIterator[MCPHttpApp]:
    app = MCPHttpApp(_server())
    yield app
    await app.manager.close()


async def _ok() -> bool:
    return True


async def _refused() -> None:
    raise ConnectionRefusedError("redis://:hunter2@redis:6379 refused")


async def _false() -> bool:
    return False


async def _forever() -> None:
    await asyncio.Event().wait()


async def test_liveness_answers_whatever_the_host(mcp: MCPHttpApp) -> None:
    async with asgi_client(Operations(mcp)) as http:
        live = await http.get("/healthz", headers={"host": POD_HOST})
        assert (live.status_code, live.json()) == (200, {"status": "ok"})
        assert live.headers["cache-control"] == "no-store"
        guarded = await http.post("/mcp", headers={"host": POD_HOST}, json={})
        assert guarded.status_code == 421  # the MCP routes are still behind the guard


async def test_readiness_runs_every_check(mcp: MCPHttpApp) -> None:
    async with asgi_client(Operations(mcp, checks={"a": _ok, "b": _ok})) as http:
        ready = await http.get("/readyz", headers={"host": POD_HOST})
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
    checks: dict[str, ReadinessCheck] = {"ok": _ok, "refused": _refused, "false": _false, "slow": _forever}
    async with asgi_client(Operations(mcp, checks=checks, check_timeout=0.05)) as http:
        unready = await http.get("/readyz")
        assert unready.status_code == 503
        assert unready.json() == {"status": "unready", "checks": {
            "ok": "ok", "refused": "failed: ConnectionRefusedError", "false": "failed", "slow": "timeout"}}
        assert "hunter2" not in unready.text


async def test_readiness_fails_while_draining(mcp: MCPHttpApp) -> None:
    draining = False
    async with asgi_client(Operations(mcp, checks={"a": _ok}, draining=lambda: draining)) as http:
        assert (await http.get("/readyz")).status_code == 200
        draining = True
        unready = await http.get("/readyz")
        assert unready.status_code == 503
        assert unready.json()["status"] == "unready"
        assert list(unready.json()["checks"]) == ["draining"]
        assert (await http.get("/healthz")).status_code == 200  # alive all the same


async def test_probes_take_get_and_head_only(mcp: MCPHttpApp) -> None:
    async with asgi_client(Operations(mcp)) as http:
        head = await http.head("/healthz")
        assert (head.status_code, head.content) == (200, b"")
        posted = await http.post("/healthz")
        assert (posted.status_code, posted.headers["allow"]) == (405, "GET, HEAD")


async def test_metrics_are_served_only_when_given(mcp: MCPHttpApp) -> None:
    async with asgi_client(Operations(mcp)) as http:
        assert (await http.get("/metrics")).status_code == 404  # on to the MCP app, which has no such route
    metrics = Metrics()
    metrics.instrument(mcp)
    async with asgi_client(Operations(mcp, metrics=metrics)) as http:
        scraped = await http.get("/metrics", headers={"host": POD_HOST})
        assert scraped.status_code == 200
        assert scraped.headers["content-type"].startswith("text/plain")
        assert "wiremcp_sessions 0.0" in scraped.text


class Recorder:
    """An inner app recording what reaches it: lifespan messages, and the context of each request."""

    def __init__(self) -> None:
        self.lifespan: list[str] = []
        self.seen: list[tuple[str | None, dict[str, str] | None]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                self.lifespan.append(message["type"])
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        self.seen.append((SESSION_ID.get(), TRACE_HEADERS.get()))
        await respond(send, 200, b"inner")


async def test_lifespan_passes_through_and_shutting_down_is_unready() -> None:
    inner = Recorder()
    ops = Operations(inner)
    incoming: asyncio.Queue[Message] = asyncio.Queue()
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    for kind in ("lifespan.startup", "lifespan.shutdown"):
        incoming.put_nowait({"type": kind})
    async with asyncio.timeout(READ_BOUND):
        await ops({"type": "lifespan"}, incoming.get, send)
    assert inner.lifespan == ["lifespan.startup", "lifespan.shutdown"]
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert ops.shutting_down
    assert await ops.readiness() == {"draining": "the server is shutting down"}


async def test_the_session_and_trace_headers_are_known_to_the_request_and_only_to_it() -> None:
    inner = Recorder()
    metrics = Metrics()
    async with asgi_client(Operations(inner, metrics=metrics)) as http:
        await http.get("/mcp", headers={"mcp-session-id": "s-1", "traceparent": "00-" + "1" * 32 + "-" + "2" * 16
                                        + "-01", "tracestate": "k=v"})
        await http.get("/mcp")
        await http.request("BREW", "/mcp")
    assert inner.seen == [("s-1", {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01", "tracestate": "k=v"}),
                          (None, None), (None, None)]
    assert SESSION_ID.get() is None
    assert TRACE_HEADERS.get() is None
    text = metrics.render()[0].decode()
    assert 'wiremcp_http_responses_total{method="GET",status="200"} 2.0' in text
    assert 'wiremcp_http_responses_total{method="other",status="200"} 1.0' in text


# -- end to end: a real uvicorn ------------------------------------------------------------------------------
def _sample(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample in the Prometheus text format."""
    wanted = name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else "")
    for line in text.splitlines():
        if not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            if key == wanted or (labels and key.startswith(name + "{") and _labels(key) == labels):
                return float(value)
    return None


def _labels(key: str) -> dict[str, str]:
    inside = key[key.index("{") + 1:-1]
    return {k: v.strip('"') for k, _, v in (part.partition("=") for part in inside.split(",") if part)}


async def test_a_real_server_answers_probes_and_counts_a_tool_call() -> None:
    env = {"WIREMCP_LOG_FORMAT": "json", "WIREMCP_AUTH_RESOURCE": "http://127.0.0.1/mcp",
           "WIREMCP_AUTH_ISSUER": "http://127.0.0.1:9", "WIREMCP_AUTH_STATIC_TOKENS": "dev-token-123=alice"}
    with run_uvicorn("examples.word_count:server", env) as server:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=READ_BOUND) as http:
            probe = {"host": POD_HOST}  # and no token: probes are answered before the guard and authentication
            assert (await http.get("/healthz", headers=probe)).json() == {"status": "ok"}
            assert (await http.get("/readyz", headers=probe)).json() == {"status": "ready"}
            assert (await http.post(server.url, json={})).status_code == 401
            http.headers["authorization"] = "Bearer dev-token-123"
            session = await initialize(http, server.url)
            assert json.loads(await session.tool("word_count", text="one two three")) == {"words": 3, "chars": 13}
            scraped = (await http.get("/metrics", headers={**probe, "authorization": ""})).text
        output = server.output()
    assert _sample(scraped, "wiremcp_requests_total", method="tools/call", outcome="ok", code="") == 1.0
    assert _sample(scraped, "wiremcp_request_duration_seconds_count", method="tools/call", tool="word_count") == 1.0
    assert _sample(scraped, "wiremcp_http_responses_total", method="POST", status="200") == 2.0  # initialize, call
    assert _sample(scraped, "wiremcp_http_responses_total", method="POST", status="401") == 1.0
    assert _sample(scraped, "wiremcp_auth_failures_total", reason="missing_token") == 1.0
    assert _sample(scraped, "wiremcp_sessions") == 1.0
    assert "Traceback" not in output, output
    lines = [json.loads(line) for line in output.splitlines() if line.strip()]  # every log line is JSON
    assert any(line["message"] == "static bearer tokens are for development only" for line in lines), output
    assert "dev-token-123" not in output
