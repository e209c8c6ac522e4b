"""``wiremcp.transports.http_post``: what a POST does with each kind of message, past the inlet, for the caller
read once per request.

Against the real app (``MCPHttpApp``) in this process's uvicorn, raw HTTP (httpx): the caller's principal
and address are read from each request's ASGI scope once (``wiremcp.transports.identity.caller``), whatever
the kind of message, the era or the transport (Streamable HTTP, the 2024-11-05 HTTP+SSE pair), and handed down
from there; and a stateless ``tools/call`` looks its tool up once, in the access gate, though its mirrored
headers are checked against the tool before it runs.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Annotated, Any

import httpx

from tests.support.http import READ_BOUND, initialize, serve_in_process
from tests.support.legacy_sse import connect, handshake
from tests.support.stateless_http import post, result_of, standard_headers, tool, with_meta
from wiremcp import MCPServer, param_header
from wiremcp.principal import SCOPE_KEY, Principal
from wiremcp.tools import Tool
from wiremcp.transports.asgi import Receive, Scope, SendASGI
from wiremcp.transports.http_app import MCPHttpApp

ALICE = Principal("https://as.example.test", "alice", "app", frozenset())
CALLER_KEYS = (SCOPE_KEY, "client")
"""Where the caller is in an ASGI scope: the principal authentication left, the client's address."""


class CountedScope(dict[str, Any]):
    """An ASGI scope that counts how often the caller is read from it (``reads``)."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope)
        self.reads: Counter[str] = Counter()

    def __getitem__(self, key: str) -> Any:
        if key in CALLER_KEYS:
            self.reads[key] += 1
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in CALLER_KEYS:
            self.reads[key] += 1
        return super().get(key, default)


class CountedTools(dict[str, Tool]):
    """A server's tools, counting the lookups of each by name."""

    def __init__(self, tools: dict[str, Tool]) -> None:
        super().__init__(tools)
        self.lookups: Counter[str] = Counter()

    def get(self, key: str, default: Any = None) -> Any:
        self.lookups[key] += 1
        return super().get(key, default)

    def __getitem__(self, key: str) -> Tool:
        self.lookups[key] += 1
        return super().__getitem__(key)


def _server() -> MCPServer:
    server = MCPServer("posts", "1.0.0")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.tool()
    def routed(query: str, region: Annotated[str, param_header("Region")] = "-") -> str:
        """A tool one of whose arguments the client mirrors in a header."""
        return f"{query}@{region}"

    return server


@contextlib.asynccontextmanager
async def counted_app(server: MCPServer) -> AsyncIterator[tuple[str, httpx.AsyncClient, list[CountedScope]]]:
    """The app, authenticated as ALICE by a stand-in for ``auth.BearerAuth`` that leaves the principal in a
    ``CountedScope``; yields the base URL, a client and every HTTP request's scope as the app saw it."""
    scopes: list[CountedScope] = []

    def authenticate(app: Any) -> Any:
        async def authenticated(scope: Scope, receive: Receive, send: SendASGI) -> None:
            counted = CountedScope({**scope, SCOPE_KEY: ALICE})
            scopes.append(counted)
            await app(counted, receive, send)
        return authenticated

    app = MCPHttpApp(server, authenticate=authenticate, drain_seconds=0.5)
    async with serve_in_process(app) as base, httpx.AsyncClient(timeout=READ_BOUND) as client:
        yield base, client, scopes


async def test_each_post_reads_the_caller_from_its_scope_once_whatever_it_carries() -> None:
    async with counted_app(_server()) as (base, client, scopes):
        session = await initialize(client, base + "/mcp")  # initialize, then notifications/initialized
        assert await session.tool("echo", text="hi") == "hi"
        assert (await session.post({"jsonrpc": "2.0", "id": 99, "result": {}})).status_code == 202  # a response
        answer = await post(client, base + "/mcp", tool("echo", {"text": "stateless"}))
        assert result_of(answer, answer.json()["id"])["content"][0]["text"] == "stateless"
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": with_meta({"requestId": 1})}
        noted = await client.post(base + "/mcp", content=json.dumps(note),
                                  headers=standard_headers("notifications/cancelled"))
        assert noted.status_code == 202
        rejected = await post(client, base + "/mcp", tool("echo", {"text": "x"}, headers={"Mcp-Method": "tools/list"}))
        assert rejected.status_code == 400
    assert len(scopes) == 7
    assert [dict(scope.reads) for scope in scopes] == [{SCOPE_KEY: 1, "client": 1}] * 7


async def test_the_legacy_transport_reads_the_caller_once_per_request() -> None:
    async with counted_app(_server()) as (base, client, scopes), connect(client, base) as legacy:
        await handshake(legacy)
        answer = await legacy.rpc(2, "tools/call", {"name": "echo", "arguments": {"text": "old"}})
        assert answer["result"]["content"][0]["text"] == "old"
        assert len(scopes) == 4  # GET /sse, then POST initialize, notifications/initialized, tools/call
        assert [scope.reads[SCOPE_KEY] for scope in scopes] == [1] * 4


async def test_a_stateless_call_looks_its_tool_up_once_though_its_headers_are_checked_against_it() -> None:
    """The mirrored ``Mcp-Param-Region`` header is checked against the tool's parameter headers before the
    call runs, and the access gate judges the call on that same lookup."""
    server = _server()
    tools = server.tools = CountedTools(server.tools)
    async with counted_app(server) as (base, client, _):
        call = tool("routed", {"query": "q", "region": "eu"}, headers={"Mcp-Param-Region": "eu"})
        answer = await post(client, base + "/mcp", call)
        assert result_of(answer, call.rid)["content"][0]["text"] == "q@eu"
        assert tools.lookups == {"routed": 1}
        mismatched = tool("routed", {"query": "q", "region": "eu"}, headers={"Mcp-Param-Region": "us"})
        refused = await post(client, base + "/mcp", mismatched)
        assert refused.status_code == 400
        assert json.loads(refused.content)["error"]["code"] == -32020
        assert tools.lookups == {"routed": 2}  # one more call, one more lookup: the refused one's
