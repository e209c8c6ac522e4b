"""OpenTelemetry tracing: one SERVER span per request, named and described by the MCP conventions, whose
parent is the trace context of ``params._meta``, else of the HTTP headers, and which carries the times of
``Timing`` middleware; recorded by the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.support.http import asgi_client, initialize, post_headers, request_body
from wiremcp import MCPServer, ToolError
from wiremcp.middleware import Call, CallNext
from wiremcp.timing import Timing
from wiremcp.transports.http_app import MCPHttpApp
from wiremcp.transports.memory import Client
from wiremcp.transports.observability.operations import Operations
from wiremcp.transports.observability.tracing import Tracing, tracing_observer
from wiremcp.transports.serving.deployment import enable_tracing
from wiremcp.types import JSONObject

STATELESS = "2026-07-28"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
HEADER_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
HEADER_TRACEPARENT = f"00-{HEADER_TRACE_ID}-b7ad6b7169203331-01"


def _server() -> MCPServer:
    server = MCPServer("traced")
    tracer = trace.get_tracer("handler")

    @server.tool()
    def word_count(text: str) -> int:
        with tracer.start_as_current_span("inside the tool"):
            return len(text.split())

    @server.tool()
    def fails() -> str:
        raise ToolError("no")

    return server


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    out = InMemorySpanExporter()
    yield out
    out.clear()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def _traced(provider: TracerProvider) -> MCPServer:
    server = _server()
    server.runtime.observe(Tracing(provider))
    return server


def _request_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER]


@pytest.fixture
def handler_tracer(provider: TracerProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spans a handler makes with the global API go to the test's provider too."""
    monkeypatch.setattr(trace, "get_tracer", lambda name, *a, **k: provider.get_tracer(name))


async def test_one_server_span_per_request(provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    async with Client(_traced(provider)) as client:
        await client.call_tool("word_count", {"text": "a b"})
        await client.list_tools()
    spans = _request_spans(exporter)
    assert [s.name for s in spans] == ["initialize", "tools/call word_count", "tools/list"]
    call = spans[1]
    assert call.attributes is not None
    assert call.attributes["mcp.method.name"] == "tools/call"
    assert call.attributes["gen_ai.tool.name"] == "word_count"
    assert isinstance(call.attributes["jsonrpc.request.id"], str)
    assert "mcp.session.id" not in call.attributes  # in memory: no session id
    assert call.status.status_code == StatusCode.UNSET
    assert call.parent is None


async def test_a_request_naming_a_uri_carries_it_whatever_names_it(provider: TracerProvider,
                                                                    exporter: InMemorySpanExporter) -> None:
    """Every method that names its component by URI (``wiremcp.methods``): a resource read, and a skill's."""
    server = _traced(provider)
    server.add_skill("---\nname: packing\ndescription: How to pack\n---\n\n# Packing\n")

    @server.resource("notes://today")
    def today() -> str:
        return "today"

    async with Client(server) as client:
        await client.read_resource("notes://today")
        await client.request("skills/get", {"uri": "skill://packing/SKILL.md"})
    uris = {s.attributes["mcp.method.name"]: s.attributes.get("mcp.resource.uri") for s in _request_spans(exporter)
            if s.attributes is not None}
    assert uris["resources/read"] == "notes://today"
    assert uris["skills/get"] == "skill://packing/SKILL.md"


async def test_failures_carry_their_error_code(provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    async with Client(_traced(provider)) as client:
        await client.request_raw("tools/call", {"name": "missing"})
        await client.request_raw("tools/call", {"name": "fails"})
        await client.request_raw("made/up")
    missing, failed, unknown = _request_spans(exporter)[1:]
    assert missing.attributes is not None
    assert missing.attributes["error.type"] == "-32602"
    assert missing.attributes["rpc.response.status_code"] == "-32602"
    assert missing.status.status_code == StatusCode.ERROR
    assert failed.attributes is not None
    assert failed.attributes["error.type"] == "tool_error"
    assert failed.status.status_code == StatusCode.ERROR
    assert unknown.name == "other"  # span names stay few
    assert unknown.attributes is not None
    assert unknown.attributes["mcp.method.name"] == "made/up"
    assert unknown.attributes["error.type"] == "-32601"


@pytest.mark.usefixtures("handler_tracer")
async def test_the_parent_comes_from_meta_and_handler_spans_are_children(
        provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    async with Client(_traced(provider), protocol_version=STATELESS) as client:
        await client.request("tools/call", {"name": "word_count", "arguments": {"text": "x"},
                                            "_meta": {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}})
    inside, call = exporter.get_finished_spans()
    assert call.name == "tools/call word_count"
    assert call.context is not None
    assert format(call.context.trace_id, "032x") == TRACE_ID
    assert call.parent is not None
    assert format(call.parent.span_id, "016x") == PARENT_ID
    assert call.parent.is_remote
    assert call.context.trace_state.get("vendor") == "1"
    assert inside.parent is not None
    assert inside.parent.span_id == call.context.span_id  # the request's span is current in the handler


@pytest.fixture
async def http_app(provider: TracerProvider) -> AsyncIterator[MCPHttpApp]:
    mcp = MCPHttpApp(_traced(provider))
    yield mcp
    await mcp.manager.close()


async def test_the_http_headers_are_the_parent_when_meta_has_none(
        http_app: MCPHttpApp, exporter: InMemorySpanExporter) -> None:
    async with asgi_client(Operations(http_app)) as http:
        session = await initialize(http, "/mcp")
        await session.request("tools/call", {"name": "word_count", "arguments": {"text": "x"}},
                              traceparent=HEADER_TRACEPARENT)
        await session.request("tools/call", {"name": "word_count", "arguments": {"text": "x"},
                                             "_meta": {"traceparent": TRACEPARENT}}, traceparent=HEADER_TRACEPARENT)
        stateless = await http.post("/mcp", headers=post_headers(**{
            "mcp-protocol-version": STATELESS, "mcp-method": "tools/list", "traceparent": HEADER_TRACEPARENT}),
            json=request_body(9, "tools/list", {"_meta": {
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": {}}}))
        assert stateless.status_code == 200, stateless.text
    initialized, by_header, by_meta, listed = _request_spans(exporter)
    assert initialized.parent is None
    for span, trace_id in ((by_header, HEADER_TRACE_ID), (by_meta, TRACE_ID), (listed, HEADER_TRACE_ID)):
        assert span.context is not None
        assert format(span.context.trace_id, "032x") == trace_id
    attributes: Any = by_header.attributes
    assert attributes["mcp.session.id"] == session.sid
    assert listed.attributes is not None
    assert "mcp.session.id" not in listed.attributes  # the stateless era has no session


def test_tracing_is_on_only_with_a_configured_provider(monkeypatch: pytest.MonkeyPatch,
                                                       provider: TracerProvider) -> None:
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)
    assert tracing_observer() is None
    server = _server()
    assert not enable_tracing(server)
    assert server.runtime.observer is None
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    assert isinstance(tracing_observer(), Tracing)
    assert enable_tracing(server)
    assert enable_tracing(server)  # once is enough
    assert len(server.runtime.observers) == 1


def _timed(server: MCPServer) -> MCPServer:
    """``server`` with a ``Timing`` outermost (``total``) and innermost (``handler``), 0.25 s apart."""
    now = [0.0]

    async def takes_250_ms(call: Call, call_next: CallNext) -> JSONObject | None:
        now[0] += 0.25
        return await call_next()

    server.add_middleware(Timing("total", clock=lambda: now[0]))
    server.add_middleware(takes_250_ms)
    server.add_middleware(Timing(clock=lambda: now[0]))
    return server


@pytest.mark.parametrize("version", ["2025-11-25", STATELESS])
async def test_the_times_of_timing_middleware_are_attributes_of_the_requests_span(
        provider: TracerProvider, exporter: InMemorySpanExporter, version: str) -> None:
    async with Client(_timed(_traced(provider)), protocol_version=version) as client:
        await client.call_tool("word_count", {"text": "a b"})
    call = _request_spans(exporter)[-1]
    assert call.name == "tools/call word_count"
    assert call.attributes is not None
    assert call.attributes["wiremcp.timing.total_ms"] == 250.0
    assert call.attributes["wiremcp.timing.handler_ms"] == 0.0


class _BatchClient(Client):
    """The in-memory client, telling when a batch's reply arrives."""

    def __init__(self, server: MCPServer, **kwargs: Any) -> None:
        super().__init__(server, **kwargs)
        self.batch_answered = asyncio.Event()

    async def _receive(self, message: JSONObject | list[JSONObject]) -> None:
        if isinstance(message, list):
            self.batch_answered.set()
        await super()._receive(message)


async def test_each_request_of_a_batch_has_its_span_current_in_the_middleware(
        provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    async with _BatchClient(_timed(_traced(provider)), protocol_version="2025-03-26") as client:
        await client.send_raw([request_body("b1", "tools/call", {"name": "word_count", "arguments": {"text": "x"}}),
                               request_body("b2", "tools/list")])
        await client.batch_answered.wait()
    spans = {s.name: s.attributes for s in _request_spans(exporter)}
    for name in ("tools/call word_count", "tools/list"):  # run at once: the clock moved for both
        attributes = spans[name]
        assert attributes is not None
        assert attributes["wiremcp.timing.total_ms"] >= 250.0, name  # type: ignore[operator]
        assert "wiremcp.timing.handler_ms" in attributes


async def test_through_the_asgi_app_the_requests_span_is_current_in_the_middleware(
        http_app: MCPHttpApp, exporter: InMemorySpanExporter) -> None:
    _timed(http_app.server)
    async with asgi_client(Operations(http_app)) as http:
        session = await initialize(http, "/mcp")
        await session.request("tools/call", {"name": "word_count", "arguments": {"text": "x"}})
        stateless = await http.post("/mcp", headers=post_headers(**{
            "mcp-protocol-version": STATELESS, "mcp-method": "tools/list"}),
            json=request_body(9, "tools/list", {"_meta": {
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": {}}}))
        assert stateless.status_code == 200, stateless.text
    for span in _request_spans(exporter):
        assert span.attributes is not None
        assert span.attributes["wiremcp.timing.total_ms"] == 250.0, span.name
    assert len(_request_spans(exporter)) == 3


def test_a_time_outside_any_recording_span_is_dropped(provider: TracerProvider) -> None:
    Tracing(provider).timed("handler", "tools/call", "word_count", 0.1)  # no span current: nothing to set
