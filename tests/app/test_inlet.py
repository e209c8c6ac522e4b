"""``wiremcp.inlet``: every inbound frame is decoded, classified and sorted by kind in one place, and handed to
exactly one of the transport's handlers (``Handlers``); nothing else in the package decodes or classifies
what a client sends. A new transport plugs in there: a WebSocket, sketched for the tests, serves both eras
through it, and the drain sees its calls."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.held import held_server
from tests.support.websocket_transport import BOUND, WebSocketMCP, websocket
from wiremcp import MCPServer, jsonrpc
from wiremcp.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from wiremcp.inbound import Inbound
from wiremcp.inlet import NOBODY, Caller, batch_items, forwarded_response, take
from wiremcp.mirrored_headers import Headers
from wiremcp.outcome import Outcome
from wiremcp.principal import Principal
from wiremcp.protocol import META_CAPABILITIES, META_CLIENT_INFO, META_VERSION
from wiremcp.shutdown import CUT_OFF, shut_down

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("app", "transports", "auth")
VERSION = "2026-07-28"
ALICE = Principal("https://as.example.test", "alice", "app", frozenset())

server = MCPServer("inlet")


class Sorted:
    """A transport's handlers that keep what the inlet handed each: (kind, what, caller)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any, Caller]] = []

    async def request(self, inbound: Inbound, caller: Caller) -> None:
        self.seen.append(("request", inbound, caller))

    async def notification(self, inbound: Inbound, caller: Caller) -> None:
        self.seen.append(("notification", inbound, caller))

    async def response(self, response: jsonrpc.Response, caller: Caller) -> None:
        self.seen.append(("response", response, caller))

    async def batch(self, items: list[Inbound | Outcome], caller: Caller) -> None:
        self.seen.append(("batch", items, caller))

    async def malformed(self, invalid: jsonrpc.Invalid, caller: Caller) -> None:
        self.seen.append(("malformed", invalid, caller))

    async def rejected(self, outcome: Outcome, caller: Caller) -> None:
        self.seen.append(("rejected", outcome, caller))


async def one(frame: Any, headers: Headers | None = None, caller: Caller = NOBODY) -> tuple[str, Any]:
    """What the inlet makes of ``frame`` (a message as JSON, or raw bytes): the one handler it called, and
    with what."""
    handlers = Sorted()
    await take(frame if isinstance(frame, bytes) else orjson.dumps(frame), server, handlers, caller, headers)
    [(kind, what, given)] = handlers.seen
    assert given is caller
    return kind, what


def stateless_meta() -> dict[str, Any]:
    return {META_VERSION: VERSION, META_CAPABILITIES: {}, META_CLIENT_INFO: {"name": "c", "version": "1"}}


async def test_a_request_is_classified_and_handed_over_with_its_caller() -> None:
    caller = Caller(ALICE, "203.0.113.7")
    kind, inbound = await one({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, caller=caller)
    assert kind == "request"
    assert inbound == Inbound(jsonrpc.Request(1, "tools/list", {}))
    assert caller.owner == ALICE.key


async def test_a_stateless_request_is_handed_over_with_its_envelope() -> None:
    kind, inbound = await one({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                               "params": {"_meta": stateless_meta()}})
    assert kind == "request"
    assert inbound.stateless
    assert inbound.envelope is not None
    assert inbound.envelope.protocol_version == VERSION


async def test_a_notification_is_classified_once_in_its_era() -> None:
    kind, inbound = await one({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": 1, "_meta": stateless_meta()}})
    assert kind == "notification"
    assert inbound.stateless
    kind, inbound = await one({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (kind, inbound.stateless) == ("notification", False)


async def test_a_response_goes_to_the_response_handler() -> None:
    kind, response = await one({"jsonrpc": "2.0", "id": 4, "result": {}})
    assert kind == "response"
    assert response == jsonrpc.Response(4, {}, None)


@pytest.mark.parametrize(("frame", "code"), [(b"{not json", PARSE_ERROR), (b"[]", INVALID_REQUEST),
                                             (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', INVALID_REQUEST)])
async def test_what_is_not_json_rpc_is_malformed_with_its_reply(frame: bytes, code: int) -> None:
    kind, invalid = await one(frame)
    assert kind == "malformed"
    assert invalid.reply["error"]["code"] == code


async def test_a_stateless_request_with_a_malformed_meta_is_rejected_before_it_runs() -> None:
    kind, outcome = await one({"jsonrpc": "2.0", "id": 5, "method": "tools/list",
                               "params": {"_meta": {META_VERSION: VERSION}}})
    assert kind == "rejected"
    assert outcome.message["id"] == 5
    assert outcome.message["error"]["code"] == INVALID_PARAMS


async def test_over_http_a_response_outside_any_session_in_the_stateless_era_is_rejected() -> None:
    """A transport's headers are classified with the message: the stateless era takes no responses."""
    sent = {"mcp-protocol-version": VERSION}
    kind, outcome = await one({"jsonrpc": "2.0", "id": 4, "result": {}}, headers=sent.get)
    assert kind == "rejected"
    assert outcome.message["error"]["code"] == INVALID_REQUEST


async def test_a_batch_is_handed_over_each_item_classified_or_refused_in_order() -> None:
    init = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {}}
    kind, items = await one([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, init,
                             {"jsonrpc": "2.0", "method": "notifications/initialized"},
                             {"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                              "params": {"_meta": {META_VERSION: VERSION}}},
                             {"jsonrpc": "1.0", "id": 3, "method": "ping"},
                             {"jsonrpc": "2.0", "method": "note", "params": [1]}])  # malformed, no id: no answer
    assert kind == "batch"
    assert items[0] == Inbound(jsonrpc.Request(1, "ping", {}))
    assert items[1] == Outcome(jsonrpc.error("init", INVALID_REQUEST, "initialize must not be batched"))
    assert items[2] == Inbound(jsonrpc.Notification("notifications/initialized", {}))
    assert isinstance(items[3], Outcome)
    assert items[3].message["error"]["code"] == INVALID_PARAMS
    assert isinstance(items[4], Outcome)
    assert items[4].message["id"] == 3
    assert len(items) == 5


def test_batch_items_are_what_take_hands_over() -> None:
    ping = jsonrpc.Request(1, "ping", {})
    assert batch_items([ping], server) == [Inbound(ping)]


def test_a_forwarded_frame_is_taken_only_as_a_response() -> None:
    assert forwarded_response(b'{"jsonrpc":"2.0","id":3,"result":{}}') == jsonrpc.Response(3, {}, None)
    assert forwarded_response(b'{"jsonrpc":"2.0","id":3,"method":"ping"}') is None
    assert forwarded_response(b"{not json") is None


def _offences(path: Path) -> list[str]:
    """Where ``path`` decodes a frame (``jsonrpc.decode``) or classifies a message (``inbound.classify``)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module in ("wiremcp.jsonrpc", "wiremcp.inbound"):
            found += [f"{node.lineno}: imports {alias.name}" for alias in node.names
                      if alias.name in ("decode", "classify")]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                (node.func.attr == "decode" and getattr(node.func.value, "id", None) == "jsonrpc")
                or (node.func.attr == "classify" and getattr(node.func.value, "id", None) in ("inbound", "jsonrpc"))):
            found.append(f"{node.lineno}: calls {node.func.value.id}.{node.func.attr}")  # type: ignore[attr-defined]
    return found


def test_only_the_inlet_decodes_and_classifies_what_a_client_sends() -> None:
    """Every transport hands its frames to ``wiremcp.inlet.take`` (or feeds a ``Connection``, which does);
    none decodes or classifies a message itself (``wiremcp.jsonrpc`` and ``wiremcp.inbound`` define them)."""
    defining = {"app/inlet.py", "app/jsonrpc.py", "app/inbound.py"}
    offenders = {rel: where for folder in SOURCES for path in sorted((ROOT / folder).rglob("*.py"))
                 if (rel := path.relative_to(ROOT).as_posix()) not in defining and (where := _offences(path))}
    assert not offenders, offenders
    assert _offences(ROOT / "app" / "inlet.py")  # (the check finds them where they are)


# -- a new transport at the inlet: a WebSocket, sketched (``tests.support.websocket_transport``) ---------------
# One MCP client per connection, each text frame fed through a ``Connection`` (so through the inlet), driven over
# an in-memory pipe: it serves both eras, and the drain sees its calls (a call in flight is among the runtime's
# requests; the shutdown cuts it off with the retryable answer, sent over the WebSocket).
HANDSHAKE = "2025-11-25"
CLIENT_INFO = {"name": "websocket-sketch", "version": "0"}


def _adding_server() -> MCPServer:
    server = MCPServer("ws", "1.0.0")

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    return server


async def test_the_handshake_era_over_a_websocket() -> None:
    async with websocket(WebSocketMCP(_adding_server())) as ws:
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
    meta = {META_VERSION: VERSION, META_CAPABILITIES: {}, META_CLIENT_INFO: CLIENT_INFO}
    async with websocket(WebSocketMCP(_adding_server())) as ws:
        called = await ws.request("tools/call", {"name": "add", "arguments": {"a": 4, "b": 5}, "_meta": meta})
        assert called["result"]["content"] == [{"type": "text", "text": "9"}]
        assert called["result"]["resultType"] == "complete"
        refused = await ws.request("tools/list", {"_meta": {META_VERSION: VERSION}})  # no capabilities
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
