"""The servers under benchmark: one tool, ``word_count(text: str) -> {words, chars}``, three ways,
each also as a 500-tool variant (``word_count`` plus 499 ``lookup_NNN`` tools) for ``tools/list``.

* ``wiremcp_server``: the wiremcp definition, reused from ``examples/word_count.py``.
  HTTP: ``WIREMCP_SERVER=bench.servers:wiremcp_server uvicorn app:asgi``;
  stdio: ``python -m wiremcp stdio bench.servers:wiremcp_server``.
* the official MCP Python SDK (``mcp==2.3.0``, ``mcp.server.mcpserver.MCPServer``), the same sync
  function with the same ``TypedDict`` result (so both return ``structuredContent``). HTTP:
  ``uvicorn --factory bench.servers:official_json_app`` (stateful sessions, ``json_response=True``)
  or ``bench.servers:official_sse_app`` (stateful, ``json_response=False``: every answer is an SSE
  stream); stdio: ``python -m bench.servers official-stdio``.
* ``wiremcp_rate_limited_server``: the same definition behind the built-in ``RateLimit`` middleware (a limit
  so high that it never refuses): what a middleware, and a token bucket per request, cost.
* ``wiremcp_streaming_server``: the same answer after ``STREAM_MESSAGES`` log messages: every call is an SSE
  stream of ``STREAM_MESSAGES + 2`` events (the priming event, the messages, the answer), each one appended
  to the event store (Redis, with ``WIREMCP_REDIS_URL``): what storing a call's events costs, with and without
  ``WIREMCP_REDIS_WAIT_REPLICAS``.
* the ceiling: a bare ASGI app (``uvicorn bench.servers:ceiling_app``) and a bare stdio line loop
  (``python -m bench.servers ceiling-stdio``) that parse each JSON-RPC message with orjson and
  return a fixed result. No MCP semantics at all: it is what the HTTP server / pipe costs alone.
  It answers in the shape of the era the request speaks (``resultType`` and ``serverInfo`` for a
  request whose ``_meta`` names 2026-07-28), so the load script checks it like the real servers.
  ``python -m bench.servers echo-stdio`` is barer still (handshake era only): no JSON parsing, the
  request's id spliced into the fixed answer as bytes: what the pipe and the load script cost alone.

Both frameworks serve the stateless era (2026-07-28: no initialize, no session, ``_meta`` and the
mirrored ``Mcp-*`` headers on every request) on the same endpoint as the handshake era. wiremcp picks
the era per request; the official SDK sends every POST whose ``MCP-Protocol-Version`` header is not a
handshake-era version to its single-exchange handler (``mcp/server/_streamable_http_modern.py``),
whatever the app's ``stateless_http`` flag. ``official_modern_app`` is the configuration a
sessionless deployment of the SDK would use: ``stateless_http=True, json_response=True``.

The 500-tool variants: ``bench.servers:wiremcp_catalog_server`` (a factory; ``page_size=500`` so
that one answer holds every tool, as the SDK, which does not paginate, sends it),
``official_catalog_json_app``, ``official_catalog_modern_app``, ``official_catalog_stateless_app`` and
``ceiling_catalog_app``.

``official_stateless_app``: the SDK's stateless mode (``stateless_http=True, json_response=True``) serving
handshake-era (2025-11-25) requests, each without ``initialize`` or a session (``official-stateless`` in
``bench/http_load.py``). FastMCP, which cannot share this venv, is in ``bench/fastmcp_server.py``.

The official SDK is imported lazily, so the wiremcp processes never load it.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import orjson

from examples.word_count import Counts
from examples.word_count import server as wiremcp_server
from wiremcp import Context, RateLimit
from wiremcp import MCPServer as WiremcpServer

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer as OfficialServer
    from starlette.applications import Starlette

__all__ = [
    "CATALOG_SIZE",
    "EXPECTED",
    "MODERN_VERSION",
    "PROTOCOL_VERSION",
    "STREAM_MESSAGES",
    "TEXT",
    "build_official",
    "catalog_names",
    "ceiling_app",
    "ceiling_catalog_app",
    "ceiling_stdio",
    "echo_stdio",
    "official_catalog_json_app",
    "official_catalog_modern_app",
    "official_catalog_stateless_app",
    "official_json_app",
    "official_modern_app",
    "official_sse_app",
    "official_stateless_app",
    "wiremcp_async_server",
    "wiremcp_catalog_server",
    "wiremcp_gateway_server",
    "wiremcp_rate_limited_server",
    "wiremcp_server",
    "wiremcp_streaming_server",
]

PROTOCOL_VERSION = "2025-11-25"
"""The handshake era's version (initialize, Mcp-Session-Id)."""
MODERN_VERSION = "2026-07-28"
"""The stateless era's version (no session; ``_meta`` and ``Mcp-*`` headers on every request)."""
TEXT = "the quick brown fox jumps over the lazy dog"
"""The argument every benchmark call sends."""
EXPECTED: Counts = {"words": len(TEXT.split()), "chars": len(TEXT)}
CATALOG_SIZE = 500
"""Tools in the catalog variants: ``word_count`` and ``CATALOG_SIZE - 1`` fillers."""
STREAM_MESSAGES = 8
"""Log messages ``wiremcp_streaming_server``'s ``word_count`` sends before its answer."""
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def catalog_names() -> list[str]:
    """The filler tools' names, in registration order (after ``word_count``)."""
    return [f"lookup_{i:03d}" for i in range(1, CATALOG_SIZE)]


def _filler(name: str) -> tuple[Callable[[str, int], str], str]:
    """A small sync tool (two parameters, one with a default) and its description."""

    def lookup(key: str, limit: int = 10) -> str:
        return f"{name}:{key}:{limit}"

    lookup.__name__ = lookup.__qualname__ = name
    return lookup, f"Look up a key in table {name[-3:]} and return at most `limit` rows."


# -- wiremcp ---------------------------------------------------------------------------------------
def wiremcp_catalog_server() -> WiremcpServer:
    """``word_count`` plus 499 fillers, one page of 500 (``WIREMCP_SERVER=bench.servers:wiremcp_catalog_server``)."""
    server = WiremcpServer("word_count", "1.0.0", title="Word count", page_size=CATALOG_SIZE)
    for tool in wiremcp_server.tools.values():
        server.add_tool(tool)  # the very same word_count definition
    for name in catalog_names():
        fn, description = _filler(name)
        server.tool(name, description=description, annotations={"readOnlyHint": True})(fn)
    return server


def wiremcp_async_server() -> WiremcpServer:
    """The same ``word_count`` as an ``async def`` (``WIREMCP_SERVER=bench.servers:wiremcp_async_server``): what a
    call costs when the tool itself awaits nothing, to set beside the sync one."""
    server = WiremcpServer("word_count", "1.0.0", title="Word count")

    @server.tool(annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False})
    async def word_count(text: str) -> Counts:
        """Count the words and characters in a text."""
        return {"words": len(text.split()), "chars": len(text)}

    return server


def wiremcp_rate_limited_server() -> WiremcpServer:
    """The same ``word_count`` behind the built-in rate limit, set so high that it never refuses: every request
    takes a token from its caller's bucket (``WIREMCP_SERVER=bench.servers:wiremcp_rate_limited_server``)."""
    server = WiremcpServer("word_count", "1.0.0", title="Word count")
    for tool in wiremcp_server.tools.values():
        server.add_tool(tool)
    server.add_middleware(RateLimit(1_000_000_000))
    return server


def wiremcp_gateway_server() -> WiremcpServer:
    """A gateway whose ``word_count`` is a remote child's: ``wiremcp_server`` launched on stdio by the gateway
    (``wiremcp stdio``), mounted at the top. Measured against ``wiremcp_server`` served directly, it is what a
    gateway's hop costs."""
    from wiremcp.transports import remote

    gateway = WiremcpServer("gateway")
    gateway.mount(remote(command=[sys.executable, "-m", "wiremcp", "stdio", "bench.servers:wiremcp_server"],
                         name="word-count"))
    return gateway


def wiremcp_streaming_server() -> WiremcpServer:
    """``word_count`` with the same answer, sent after ``STREAM_MESSAGES`` log messages: an SSE stream whose every
    event is stored (``WIREMCP_SERVER=bench.servers:wiremcp_streaming_server``)."""
    server = WiremcpServer("word_count", "1.0.0", title="Word count")

    @server.tool(annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False})
    async def word_count(text: str, ctx: Context) -> Counts:
        """Count the words and characters in a text, saying so on the way."""
        for step in range(STREAM_MESSAGES):
            await ctx.info(f"counting, step {step + 1}")
        return {"words": len(text.split()), "chars": len(text)}

    return server


# -- the official SDK ------------------------------------------------------------------------------
def build_official() -> OfficialServer[Any]:
    """The official SDK's server with the same tool (a sync function, run on a worker thread as in wiremcp)."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    server: MCPServer[Any] = MCPServer("word_count", title="Word count", version="1.0.0")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False))
    def word_count(text: str) -> Counts:
        """Count the words and characters in a text."""
        return {"words": len(text.split()), "chars": len(text)}

    return server


def build_official_catalog() -> OfficialServer[Any]:
    """The official server with ``word_count`` plus the same 499 fillers."""
    from mcp_types import ToolAnnotations

    server = build_official()
    for name in catalog_names():
        fn, description = _filler(name)
        server.tool(name, description=description, annotations=ToolAnnotations(read_only_hint=True))(fn)
    return server


def official_json_app() -> Starlette:
    """Stateful (Mcp-Session-Id) Streamable HTTP, answers as application/json. For ``uvicorn --factory``."""
    return build_official().streamable_http_app(json_response=True, stateless_http=False)


def official_sse_app() -> Starlette:
    """Stateful Streamable HTTP, every answer as an SSE stream (the SDK's default). For ``uvicorn --factory``."""
    return build_official().streamable_http_app(json_response=False, stateless_http=False)


def official_modern_app() -> Starlette:
    """Sessionless, JSON answers: how the SDK is deployed for 2026-07-28 clients. For ``uvicorn --factory``.

    A 2026-07-28 POST (its ``MCP-Protocol-Version`` header is no handshake-era version) goes to
    ``handle_modern_request`` with ``json_response=True``: the request is validated (headers against
    body, ``_meta``), served by ``serve_one`` in the ASGI task, answered as ``application/json``.
    """
    return build_official().streamable_http_app(json_response=True, stateless_http=True)


def official_stateless_app() -> Starlette:
    """The SDK's stateless mode serving the handshake era: ``stateless_http=True, json_response=True``.
    For ``uvicorn --factory``.

    The same configuration as ``official_modern_app``; what differs is the requests. A POST whose
    ``MCP-Protocol-Version`` is a handshake-era version (2025-11-25) goes to
    ``StreamableHTTPSessionManager._handle_stateless_request``: a fresh ``StreamableHTTPServerTransport``
    without a session id, a ``Connection`` born ready (``Connection.from_envelope``: no ``initialize``
    needed) and a ``serve_connection`` task per request, terminated when the answer is sent. The client
    sends no ``initialize`` and no ``Mcp-Session-Id``; the answer is a plain handshake-era result (no
    ``resultType``).
    """
    return build_official().streamable_http_app(json_response=True, stateless_http=True)


def official_catalog_stateless_app() -> Starlette:
    """500 tools, the SDK's stateless mode for handshake-era requests (``official-stateless``)."""
    return build_official_catalog().streamable_http_app(json_response=True, stateless_http=True)


def official_catalog_json_app() -> Starlette:
    """500 tools, stateful, JSON answers (the handshake era's ``official``)."""
    return build_official_catalog().streamable_http_app(json_response=True, stateless_http=False)


def official_catalog_modern_app() -> Starlette:
    """500 tools, sessionless, JSON answers (the stateless era's ``official-modern``)."""
    return build_official_catalog().streamable_http_app(json_response=True, stateless_http=True)


# -- the ceiling -----------------------------------------------------------------------------------
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_WORD_COUNT_TOOL: dict[str, Any] = {
    "name": "word_count",
    "title": "Word count",
    "description": "Count the words and characters in a text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "outputSchema": {"type": "object", "properties": {"words": {"type": "integer"}, "chars": {"type": "integer"}},
                     "required": ["words", "chars"]},
}


def _filler_tool(name: str) -> dict[str, Any]:
    """A filler as the frameworks list it (roughly: the ceiling's answer should weigh about the same)."""
    return {
        "name": name,
        "description": _filler(name)[1],
        "inputSchema": {"type": "object", "properties": {"key": {"type": "string"},
                                                         "limit": {"type": "integer", "default": 10}},
                        "required": ["key"]},
        "outputSchema": {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]},
        "annotations": {"readOnlyHint": True},
    }


_CEILING_INFO = {"name": "ceiling", "version": "1.0.0"}


def _results(catalog: int) -> dict[tuple[str, bool], bytes]:
    """The ceiling's fixed results by (method, stateless era?)."""
    tools = [_WORD_COUNT_TOOL, *(_filler_tool(name) for name in catalog_names()[:catalog - 1])]
    call: dict[str, Any] = {"content": [{"type": "text", "text": orjson.dumps(EXPECTED).decode()}],
                            "structuredContent": EXPECTED, "isError": False}
    listed: dict[str, Any] = {"tools": tools}
    init: dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {"tools": {"listChanged": False}},
                            "serverInfo": _CEILING_INFO}
    meta = {"_meta": {META_SERVER_INFO: _CEILING_INFO}}
    return {
        ("tools/call", False): orjson.dumps(call),
        ("tools/list", False): orjson.dumps(listed),
        ("initialize", False): orjson.dumps(init),
        ("tools/call", True): orjson.dumps({"resultType": "complete", **call, **meta}),
        ("tools/list", True): orjson.dumps({"resultType": "complete", **listed, **meta,
                                            "ttlMs": 0, "cacheScope": "private"}),
    }


_RESULTS = {1: _results(1), CATALOG_SIZE: _results(CATALOG_SIZE)}


def _answer(message: Any, catalog: int) -> tuple[bytes, bool] | None:
    """The fixed answer to one decoded message and whether it speaks the stateless era; None for a notification."""
    if not isinstance(message, dict) or "id" not in message:
        return None
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    modern = isinstance(meta, dict) and META_VERSION in meta
    results = _RESULTS[catalog]
    result = results.get((str(message.get("method")), modern), results[("tools/call", modern)])
    return b'{"jsonrpc":"2.0","id":' + orjson.dumps(message["id"]) + b',"result":' + result + b"}", modern


def _reply(message: Any) -> bytes | None:
    answer = _answer(message, 1)
    return None if answer is None else answer[0]


def _ceiling(catalog: int) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    async def ceiling(scope: Scope, receive: Receive, send: Send) -> None:
        """Bare ASGI: read the body, parse it with orjson, answer a fixed result (202 for a notification)."""
        if scope["type"] == "lifespan":
            while True:
                event = await receive()
                if event["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif event["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        chunks: list[bytes] = []
        while True:
            event = await receive()
            if event["type"] == "http.disconnect":
                return
            chunks.append(event.get("body", b""))
            if not event.get("more_body", False):
                break
        answer = _answer(orjson.loads(b"".join(chunks)), catalog)
        if answer is None:
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        body, modern = answer
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if not modern:
            headers.append((b"mcp-session-id", b"ceiling"))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return ceiling


ceiling_app = _ceiling(1)
"""``uvicorn bench.servers:ceiling_app``: one tool."""
ceiling_catalog_app = _ceiling(CATALOG_SIZE)
"""``uvicorn bench.servers:ceiling_catalog_app``: tools/list answers 500 tools."""


def ceiling_stdio() -> None:
    """Bare stdio: one line in, one fixed answer line out (flushed, like a real server's writer)."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        answer = _reply(orjson.loads(line))
        if answer is not None:
            out.write(answer + b"\n")
            out.flush()


_ID = b'"id":'
_ECHO_ANSWER = (b'{"jsonrpc":"2.0","id":', b',"result":' + _RESULTS[1][("tools/call", False)] + b"}\n")


def echo_stdio() -> None:
    """Barer still: one line in, one line out, no JSON at all. The request's id is cut out of the line as
    bytes (from ``"id":`` to the next comma: the load script's requests put ``id`` before ``method``) and
    spliced into the fixed tools/call answer; a line without ``"id":`` (a notification) gets none."""
    out = sys.stdout.buffer
    head, tail = _ECHO_ANSWER
    for line in sys.stdin.buffer:
        start = line.find(_ID)
        if start < 0:
            continue
        start += len(_ID)
        out.write(head + line[start:line.find(b",", start)] + tail)
        out.flush()


def main(argv: list[str]) -> int:
    if argv == ["official-stdio"]:
        build_official().run("stdio")
        return 0
    if argv == ["ceiling-stdio"]:
        ceiling_stdio()
        return 0
    if argv == ["echo-stdio"]:
        echo_stdio()
        return 0
    print("usage: python -m bench.servers {official-stdio|ceiling-stdio|echo-stdio}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
