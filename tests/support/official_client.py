"""The official ``mcp`` client over Streamable HTTP with its wire recorded: ``connect`` yields a connected
client and checks, on the way out, that the era it spoke shows on the wire as the spec says."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
    Root,
    TextContent,
)

from tests.support.http import UvicornProcess, parse_sse, post_headers, request_body

WAIT = 10.0  # an upper bound for awaited things, never a sleep
STATELESS = "2026-07-28"
LEGACY = "2025-11-25"
VERSION = {"auto": STATELESS, "legacy": LEGACY}
"""The protocol version the official client speaks in each of its modes."""


# -- the wire, recorded ----------------------------------------------------------------------------------------
@dataclass
class Exchange:
    """One HTTP request of the client and the server's answer (its body as far as the client read it)."""

    method: str
    headers: httpx2.Headers
    body: Any
    """The request's JSON body (None for GET and DELETE)."""
    status: int
    response_headers: httpx2.Headers
    content: bytearray = field(default_factory=bytearray)

    @property
    def session_id(self) -> str | None:
        return self.headers.get("mcp-session-id")

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages the server sent in this answer: a JSON body, or every complete SSE event."""
        kind = self.response_headers.get("content-type", "")
        if kind.startswith("application/json") and self.content:
            body = json.loads(self.content)
            return body if isinstance(body, list) else [body]
        if kind.startswith("text/event-stream"):
            return [event.message for event in parse_sse(self.content.decode()) if event.data]
        return []


class _Tee(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, into: bytearray) -> None:
        self._inner = inner
        self._into = into

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._into.extend(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class Wire(httpx2.AsyncBaseTransport):
    """The client's HTTP transport: a real one, recording every exchange."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self.exchanges: list[Exchange] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raw = await request.aread()
        response = await self._inner.handle_async_request(request)
        assert "content-encoding" not in response.headers  # the tee reads the bytes as they came
        exchange = Exchange(request.method, request.headers, json.loads(raw) if raw else None,
                            response.status_code, response.headers)
        self.exchanges.append(exchange)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _Tee(response.stream, exchange.content)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()

    # -- what was seen ---------------------------------------------------------------------------------------
    @property
    def posts(self) -> list[Exchange]:
        return [e for e in self.exchanges if e.method == "POST"]

    def requests(self, method: str) -> list[Exchange]:
        """The POSTs of JSON-RPC requests named ``method``."""
        return [e for e in self.posts if isinstance(e.body, dict) and e.body.get("method") == method and "id" in e.body]

    def calls(self, tool: str) -> list[Exchange]:
        """The POSTs of ``tools/call`` for ``tool``: one per round of a retried call."""
        return [e for e in self.requests("tools/call") if e.body["params"]["name"] == tool]

    @property
    def received(self) -> list[dict[str, Any]]:
        return [message for e in self.exchanges for message in e.messages]

    @property
    def server_requests(self) -> list[dict[str, Any]]:
        """Server-to-client JSON-RPC requests (the handshake era's way to ask for input)."""
        return [m for m in self.received if "method" in m and "id" in m]

    @property
    def client_responses(self) -> list[dict[str, Any]]:
        """JSON-RPC responses the client POSTed (answers to server-to-client requests)."""
        return [e.body for e in self.posts if isinstance(e.body, dict) and "method" not in e.body]

    @property
    def session_id(self) -> str:
        ids = {e.session_id for e in self.exchanges if e.session_id is not None}
        assert len(ids) == 1, ids
        return ids.pop()


@asynccontextmanager
async def connect(server: UvicornProcess, mode: str = "auto", wire: Wire | None = None,
                  **options: Any) -> AsyncIterator[Client]:
    """A connected client. On exit, checks the era on the wire: a stateless-era client never has a
    session (no ``Mcp-Session-Id`` either way, no GET, no DELETE, no ``initialize``); a handshake-era
    client ends its session with DELETE, after which the server no longer knows it."""
    wire = wire if wire is not None else Wire()
    problems: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            problems.append(message)

    async with httpx2.AsyncClient(transport=wire, timeout=httpx2.Timeout(WAIT, read=60.0)) as http:
        transport = streamable_http_client(server.url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=WAIT, message_handler=on_message,
                          **options) as client:
            assert client.protocol_version == VERSION[mode]
            yield client
    assert problems == []
    if mode == "auto":
        assert [e.method for e in wire.exchanges] == ["POST"] * len(wire.exchanges)
        assert all("mcp-session-id" not in e.headers and "mcp-session-id" not in e.response_headers
                   for e in wire.exchanges)  # no session is ever minted
        assert wire.requests("initialize") == []
        for e in wire.posts:  # every request describes itself, in its body and in its headers
            assert e.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == STATELESS
            assert e.headers["mcp-protocol-version"] == STATELESS
            assert e.headers["mcp-method"] == e.body["method"]
        return
    sid = wire.session_id
    assert wire.requests("server/discover") == []
    assert wire.posts[0].body["method"] == "initialize"
    assert ("DELETE", sid, 200) in [(e.method, e.session_id, e.status) for e in wire.exchanges]
    async with httpx.AsyncClient(timeout=WAIT) as raw:
        after = await raw.post(server.url, content=json.dumps(request_body(1, "ping")),
                               headers=post_headers(**{"mcp-session-id": sid}))
    assert after.status_code == 404


def only_text(blocks: list[Any]) -> str:
    (block,) = blocks
    assert isinstance(block, TextContent)
    return block.text


# -- callbacks for input requests ----------------------------------------------------------------------------
@dataclass
class Answers:
    """Elicitation, sampling and roots callbacks with fixed answers; keeps what the server asked."""

    elicited: list[ElicitRequestFormParams] = field(default_factory=list)
    sampled: list[CreateMessageRequestParams] = field(default_factory=list)
    roots_listed: int = 0

    async def elicit(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        assert isinstance(params, ElicitRequestFormParams)
        self.elicited.append(params)
        properties: dict[str, Any] = params.requested_schema["properties"]
        if "response" in properties:
            return ElicitResult(action="accept", content={"response": "blue"})
        if "color" in properties:
            return ElicitResult(action="accept", content={"color": "green"})
        if "name" in properties and "default" not in properties["name"]:
            return ElicitResult(action="accept", content={"name": "Ada"})
        return ElicitResult(action="accept", content={name: prop.get("default") for name, prop in properties.items()})

    async def sample(self, context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        self.sampled.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Paris"),
                                   model="test-model", stop_reason="endTurn")

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        self.roots_listed += 1
        return ListRootsResult(roots=[Root.model_validate({"uri": "file:///work/project", "name": "project"})])

    @property
    def callbacks(self) -> dict[str, Any]:
        return {"elicitation_callback": self.elicit, "sampling_callback": self.sample,
                "list_roots_callback": self.roots}
