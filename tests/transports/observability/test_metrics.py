"""``Metrics``: requests by method and outcome, latency by method and tool, the times of ``Timing``
middleware, HTTP responses, authentication failures, and what is read at scrape time (sessions, streams,
the event store), one registry per app."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.http import asgi_client, initialize, post_headers, request_body
from wiremcp import MCPServer, ToolError
from wiremcp.middleware import Call, CallNext
from wiremcp.timing import Timing
from wiremcp.transports.closing import ClosingConnections
from wiremcp.transports.forwarded import ForwardedHeaders
from wiremcp.transports.http_app import MCPHttpApp
from wiremcp.transports.memory import Client
from wiremcp.transports.observability.metrics import Metrics
from wiremcp.transports.observability.operations import Operations
from wiremcp.transports.serving.deployment import build_http_app
from wiremcp.transports.serving.settings import Settings
from wiremcp.types import JSONObject

STATELESS = "2026-07-28"
STATELESS_META = {"io.modelcontextprotocol/protocolVersion": STATELESS,
               "io.modelcontextprotocol/clientCapabilities": {}}


def _server() -> MCPServer:
    server = MCPServer("metered")

    @server.tool()
    def word_count(text: str) -> int:
        return len(text.split())

    @server.tool()
    def fails() -> str:
        raise ToolError("no")

    return server


def samples(metrics: Metrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape, by name and labels."""
    out = {}
    for family in text_string_to_metric_families(metrics.render()[0].decode()):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return samples(metrics).get((name, frozenset(labels.items())))


@pytest.fixture
async def metered() -> AsyncIterator[tuple[MCPHttpApp, Metrics, httpx.AsyncClient]]:
    mcp = MCPHttpApp(_server())
    metrics = Metrics()
    metrics.instrument(mcp)
    async with asgi_client(Operations(mcp, metrics=metrics)) as http:
        yield mcp, metrics, http
    await mcp.manager.close()


async def test_requests_are_counted_by_method_outcome_and_tool(
        metered: tuple[MCPHttpApp, Metrics, httpx.AsyncClient]) -> None:
    _mcp, metrics, http = metered
    session = await initialize(http, "/mcp")
    assert await session.tool("word_count", text="a b") == '{"result":2}'
    await session.call("tools/call", {"name": "fails"})
    await session.request("tools/call", {"name": "nope"})
    await session.request("made/up")
    stateless = await http.post("/mcp", json=request_body(1, "tools/call", {
        "name": "word_count", "arguments": {"text": "x"}, "_meta": STATELESS_META}),
        headers=post_headers(**{"mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "word_count"}))
    assert stateless.status_code == 200, stateless.text
    assert value(metrics, "wiremcp_requests_total", method="initialize", outcome="ok", code="") == 1
    assert value(metrics, "wiremcp_requests_total", method="tools/call", outcome="ok", code="") == 2  # both eras
    assert value(metrics, "wiremcp_requests_total", method="tools/call", outcome="tool_error", code="") == 1
    assert value(metrics, "wiremcp_requests_total", method="tools/call", outcome="error", code="-32602") == 1
    assert value(metrics, "wiremcp_requests_total", method="other", outcome="error", code="-32601") == 1
    assert value(metrics, "wiremcp_request_duration_seconds_count", method="tools/call", tool="word_count") == 2
    assert value(metrics, "wiremcp_request_duration_seconds_count", method="tools/call", tool="other") == 1
    assert value(metrics, "wiremcp_requests_in_flight") == 0
    assert value(metrics, "wiremcp_sessions") == 1
    assert value(metrics, "wiremcp_http_responses_total", method="POST", status="202") == 1  # initialized
    assert value(metrics, "wiremcp_http_responses_total", method="GET", status="200") is None  # not the scrapes


async def test_streams_and_the_event_store_are_read_at_scrape_time(
        metered: tuple[MCPHttpApp, Metrics, httpx.AsyncClient]) -> None:
    mcp, metrics, http = metered
    await initialize(http, "/mcp")
    (live,) = mcp.manager.live.values()
    live.streams_open = 2  # what the endpoint counts while streams are open
    await live.standalone.emit({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    mcp.endpoint.stateless.streams_open = 3  # the stateless handler counts its streams too
    assert value(metrics, "wiremcp_sse_streams_open") == 5
    events, size = mcp.manager.events.size  # type: ignore[attr-defined]
    assert events >= 1
    assert value(metrics, "wiremcp_event_store_events") == events
    assert value(metrics, "wiremcp_event_store_bytes") == size
    live.streams_open = 0


async def test_each_app_has_its_own_registry() -> None:
    first, second = MCPHttpApp(_server()), MCPHttpApp(_server())
    a, b = Metrics(), Metrics()
    a.instrument(first)
    b.instrument(second)
    async with asgi_client(Operations(first, metrics=a)) as http:
        await initialize(http, "/mcp")
    assert value(a, "wiremcp_sessions") == 1
    assert value(b, "wiremcp_sessions") == 0
    assert value(b, "wiremcp_requests_total", method="initialize", outcome="ok", code="") is None
    await first.manager.close()


async def test_authentication_failures_are_counted_by_reason() -> None:
    settings = Settings(auth_resource="http://127.0.0.1/mcp", auth_issuer="https://as.example.test",
                        auth_scopes=("mcp:tools",), auth_static_tokens=("t1=alice:mcp:tools", "t2=bob:mcp:read"))
    outer = build_http_app(_server(), settings)
    assert isinstance(outer, ForwardedHeaders)
    closing = outer.app
    assert isinstance(closing, ClosingConnections)
    app = closing.app
    assert isinstance(app, Operations)
    assert app.metrics is not None
    async with asgi_client(outer) as http:
        assert (await http.post("/mcp", json={})).status_code == 401
        assert (await http.post("/mcp", json={}, headers={"authorization": "Bearer nope"})).status_code == 401
        assert (await http.post("/mcp", json={}, headers={"authorization": "Bearer t2"})).status_code == 403
        assert (await http.post("/mcp?access_token=t1", json={})).status_code == 401
        assert (await http.post("/mcp", json={}, headers={"authorization": "Basic t1"})).status_code == 401
        scraped = await http.get("/metrics")  # no token needed
    assert scraped.status_code == 200
    for reason in ("missing_token", "invalid_token", "insufficient_scope", "token_in_url", "malformed"):
        assert value(app.metrics, "wiremcp_auth_failures_total", reason=reason) == 1, reason
    assert value(app.metrics, "wiremcp_http_responses_total", method="POST", status="401") == 4


def test_metrics_can_be_turned_off() -> None:
    app = build_http_app(_server(), Settings(metrics=False))
    assert isinstance(app, ForwardedHeaders)
    assert isinstance(app.app, ClosingConnections)
    assert isinstance(app.app.app, Operations)
    assert app.app.app.metrics is None


async def test_tasks_are_counted_when_created_and_when_they_end() -> None:
    server = MCPServer("metered-tasks")

    @server.tool(task_support="optional")
    async def job(n: int) -> int:
        return n * 2

    mcp = MCPHttpApp(server)
    metrics = Metrics()
    metrics.instrument(mcp)
    async with asgi_client(Operations(mcp, metrics=metrics)) as http:
        session = await initialize(http, "/mcp")
        created = await session.call("tools/call", {"name": "job", "arguments": {"n": 2}, "task": {}})
        await session.call("tasks/result", {"taskId": created["task"]["taskId"]})
        assert value(metrics, "wiremcp_requests_total", method="tools/call", outcome="task", code="") == 1
        assert value(metrics, "wiremcp_tasks_ended_total", status="completed") == 1
        assert value(metrics, "wiremcp_tasks_ended_total", status="failed") == 0
        assert value(metrics, "wiremcp_tasks_running") == 0
    await mcp.manager.close()


async def test_the_times_of_timing_middleware_are_histograms_by_timer_method_and_component() -> None:
    server = _server()
    now = [0.0]

    @server.prompt()
    def hello() -> str:
        return "hello"

    async def takes_300_ms(call: Call, call_next: CallNext) -> JSONObject | None:
        now[0] += 0.3
        return await call_next()

    server.add_middleware(Timing(clock=lambda: now[0]))
    server.add_middleware(takes_300_ms)
    mcp = MCPHttpApp(server)
    metrics = Metrics()
    metrics.instrument(mcp)
    async with Client(server) as client:
        await client.call_tool("word_count", {"text": "a b"})
        await client.call_tool("word_count", {"text": "c"})
        await client.request_raw("tools/call", {"name": "made-up", "arguments": {}})
        await client.get_prompt("hello")
        await client.request_raw("prompts/get", {"name": "made-up"})
        await client.list_tools()
        await client.request_raw("made/up")
    timer = {"timer": "handler"}
    assert value(metrics, "wiremcp_timed_seconds_count", **timer, method="tools/call", component="word_count") == 2
    assert value(metrics, "wiremcp_timed_seconds_sum", **timer, method="tools/call", component="word_count") == \
        pytest.approx(0.6)
    assert value(metrics, "wiremcp_timed_seconds_bucket", **timer, method="tools/call", component="word_count",
                 le="0.25") == 0
    assert value(metrics, "wiremcp_timed_seconds_bucket", **timer, method="tools/call", component="word_count",
                 le="0.5") == 2
    assert value(metrics, "wiremcp_timed_seconds_count", **timer, method="tools/call", component="other") == 1
    assert value(metrics, "wiremcp_timed_seconds_count", **timer, method="prompts/get", component="hello") == 1
    assert value(metrics, "wiremcp_timed_seconds_count", **timer, method="prompts/get", component="other") == 1
    assert value(metrics, "wiremcp_timed_seconds_count", **timer, method="tools/list", component="") == 1
    assert value(metrics, "wiremcp_timed_seconds_count", **timer, method="other", component="") == 1
    timed = {labels for name, labels in samples(metrics) if name == "wiremcp_timed_seconds_count"}
    assert len(timed) == 7  # (initialize too): what clients send makes no label of its own
    await mcp.manager.close()


def test_times_before_an_app_is_instrumented_label_every_component_other() -> None:
    metrics = Metrics()
    metrics.timed("handler", "tools/call", "word_count", 0.01)
    metrics.timed("handler", "resources/read", "file:///etc/passwd", 0.01)
    assert value(metrics, "wiremcp_timed_seconds_count", timer="handler", method="tools/call", component="other") == 1
    assert value(metrics, "wiremcp_timed_seconds_count", timer="handler", method="resources/read", component="") == 1
