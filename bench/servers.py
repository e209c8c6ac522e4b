"""The servers under benchmark: one tool, ``word_count(text: str) -> {words, chars}``, three ways.

* ``mcpwire_server``: the mcpwire definition, reused from ``examples/word_count.py``.
  HTTP: ``MCPWIRE_SERVER=bench.servers:mcpwire_server uvicorn app:asgi``;
  stdio: ``python -m app.cli stdio bench.servers:mcpwire_server``.
* the official MCP Python SDK (``mcp==2.3.0``, ``mcp.server.mcpserver.MCPServer``), the same sync
  function with the same ``TypedDict`` result (so both return ``structuredContent``). HTTP:
  ``uvicorn --factory bench.servers:official_json_app`` (stateful sessions, ``json_response=True``)
  or ``bench.servers:official_sse_app`` (stateful, ``json_response=False``: every answer is an SSE
  stream); stdio: ``python -m bench.servers official-stdio``.
* the ceiling: a bare ASGI app (``uvicorn bench.servers:ceiling_app``) and a bare stdio line loop
  (``python -m bench.servers ceiling-stdio``) that parse each JSON-RPC message with orjson and
  return a fixed result. No MCP semantics at all: it is what the HTTP server / pipe costs alone.

The official SDK is imported lazily, so the mcpwire processes never load it.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import orjson

from examples.word_count import Counts
from examples.word_count import server as mcpwire_server

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer as OfficialServer
    from starlette.applications import Starlette

__all__ = [
    "EXPECTED",
    "PROTOCOL_VERSION",
    "TEXT",
    "build_official",
    "ceiling_app",
    "ceiling_stdio",
    "mcpwire_server",
    "official_json_app",
    "official_sse_app",
]

PROTOCOL_VERSION = "2025-11-25"
TEXT = "the quick brown fox jumps over the lazy dog"
"""The argument every benchmark call sends."""
EXPECTED: Counts = {"words": len(TEXT.split()), "chars": len(TEXT)}


# -- the official SDK ------------------------------------------------------------------------------
def build_official() -> OfficialServer[Any]:
    """The official SDK's server with the same tool (a sync function, run on a worker thread as in mcpwire)."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    server: MCPServer[Any] = MCPServer("word_count", title="Word count", version="1.0.0")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False))
    def word_count(text: str) -> Counts:
        """Count the words and characters in a text."""
        return {"words": len(text.split()), "chars": len(text)}

    return server


def official_json_app() -> Starlette:
    """Stateful (Mcp-Session-Id) Streamable HTTP, answers as application/json. For ``uvicorn --factory``."""
    return build_official().streamable_http_app(json_response=True, stateless_http=False)


def official_sse_app() -> Starlette:
    """Stateful Streamable HTTP, every answer as an SSE stream (the SDK's default). For ``uvicorn --factory``."""
    return build_official().streamable_http_app(json_response=False, stateless_http=False)


# -- the ceiling -----------------------------------------------------------------------------------
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_TOOL_RESULT = orjson.dumps({
    "content": [{"type": "text", "text": orjson.dumps(EXPECTED).decode()}],
    "structuredContent": EXPECTED,
    "isError": False,
})
_TOOLS_RESULT = orjson.dumps({"tools": [{
    "name": "word_count",
    "title": "Word count",
    "description": "Count the words and characters in a text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "outputSchema": {"type": "object", "properties": {"words": {"type": "integer"}, "chars": {"type": "integer"}},
                     "required": ["words", "chars"]},
}]})
_INIT_RESULT = orjson.dumps({
    "protocolVersion": PROTOCOL_VERSION,
    "capabilities": {"tools": {"listChanged": False}},
    "serverInfo": {"name": "ceiling", "version": "1.0.0"},
})


def _reply(message: Any) -> bytes | None:
    """The fixed answer to one decoded message; None for a notification."""
    if not isinstance(message, dict) or "id" not in message:
        return None
    method = message.get("method")
    result = _INIT_RESULT if method == "initialize" else _TOOLS_RESULT if method == "tools/list" else _TOOL_RESULT
    return b'{"jsonrpc":"2.0","id":' + orjson.dumps(message["id"]) + b',"result":' + result + b"}"


async def ceiling_app(scope: Scope, receive: Receive, send: Send) -> None:
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
    body = _reply(orjson.loads(b"".join(chunks)))
    if body is None:
        await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"mcp-session-id", b"ceiling"),
    ]})
    await send({"type": "http.response.body", "body": body})


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


def main(argv: list[str]) -> int:
    if argv == ["official-stdio"]:
        build_official().run("stdio")
        return 0
    if argv == ["ceiling-stdio"]:
        ceiling_stdio()
        return 0
    print("usage: python -m bench.servers {official-stdio|ceiling-stdio}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
