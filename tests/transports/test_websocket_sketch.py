"""A WebSocket-shaped transport (``tests.support.websocket_transport``, a sketch for the tests) plugged into
the one inlet: one MCP client per connection, each text frame fed through a ``Connection``, driven over an
in-memory pipe. It serves both eras, and the drain sees its calls: a call in flight is among the runtime's
requests, and the shutdown cuts it off with the retryable answer, sent over the WebSocket."""

from __future__ import annotations

import asyncio

from tests.support.held import held_server
from tests.support.websocket_transport import BOUND, WebSocketMCP, websocket
from wiremcp import MCPServer
from wiremcp.errors import INTERNAL_ERROR
from wiremcp.protocol import META_CAPABILITIES, META_CLIENT_INFO, META_VERSION
from wiremcp.shutdown import CUT_OFF, shut_down

HANDSHAKE = "2025-11-25"
STATELESS = "2026-07-28"
CLIENT_INFO = {"name": "websocket-sketch", "version": "0"}


def _server() -> MCPServer:
    server = MCPServer("ws", "1.0.0")

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    return server


async def test_the_handshake_era_over_a_websocket() -> None:
    async with websocket(WebSocketMCP(_server())) as ws:
        init = await ws.request("initialize", {"protocolVersion": HANDSHAKE, "capabilities": {},
                                               "clientInfo": CLIENT_INFO})
        assert init["result"]["protocolVersion"] == HANDSHAKE
        await ws.notify("notifications/initialized")
        listed = await ws.request("tools/list")
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["add"]
        called = await ws.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert called["result"]["content"] == [{"type": "text", "text": "5"}]
        assert not called["result"].get("isError")


async def test_a_stateless_request_over_a_websocket_needs_no_handshake() -> None:
    meta = {META_VERSION: STATELESS, META_CAPABILITIES: {}, META_CLIENT_INFO: CLIENT_INFO}
    async with websocket(WebSocketMCP(_server())) as ws:
        called = await ws.request("tools/call", {"name": "add", "arguments": {"a": 4, "b": 5}, "_meta": meta})
        assert called["result"]["content"] == [{"type": "text", "text": "9"}]
        assert called["result"]["resultType"] == "complete"
        refused = await ws.request("tools/list", {"_meta": {META_VERSION: STATELESS}})  # no capabilities
        assert refused["error"]["code"] == -32602


async def test_the_drain_sees_a_call_in_flight_over_a_websocket_and_cuts_it_off() -> None:
    held = held_server()
    server = held.server
    async with websocket(WebSocketMCP(server)) as ws:
        await ws.request("initialize", {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": CLIENT_INFO})
        await ws.notify("notifications/initialized")
        rid = ws.next_id()
        await ws.send_text({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "hold"}})
        async with asyncio.timeout(BOUND):
            await held.started.wait()
        assert len(server.runtime.requests) == 1
        assert await shut_down(server, grace=0.01) == 1  # still running when the grace ran out: cut off
        answer = await ws.answer(rid)
        assert answer == {"jsonrpc": "2.0", "id": rid, "error": {
            "code": INTERNAL_ERROR, "message": CUT_OFF, "data": {"replica": None, "retryable": True}}}
        assert held.cancelled.is_set()
        assert len(server.runtime.requests) == 0
