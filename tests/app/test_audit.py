"""``wiremcp.audit``: ``AuditLog`` writes one JSON line per request once it is answered (who, which method
and component, how it ended, how long it took), never a token; every outcome, what the middleware inside it
refuse included, in both eras; notifications are not requests and are not written."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest

from tests.support.tasks import create
from wiremcp import Context, MCPServer, ToolError
from wiremcp.audit import AuditLog
from wiremcp.entry import serve
from wiremcp.errors import INTERNAL_ERROR, INVALID_PARAMS, RATE_LIMITED, MCPError, RateLimited
from wiremcp.inbound import Inbound
from wiremcp.jsonrpc import Request
from wiremcp.middleware import Call, CallNext
from wiremcp.principal import Principal
from wiremcp.session import ServerSession
from wiremcp.state import SessionState
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

STATELESS = "2026-07-28"
TOKEN = "eyJhbGciOiJSUzI1NiJ9.secret-token"
ALICE = Principal("https://issuer.example", "alice", client_id="app-1", scopes=frozenset({"mcp:tools"}),
                  claims={"access_token": TOKEN, "email": "alice@example.com"})
FIELDS = {"ts", "method", "component", "principal", "client_id", "session", "peer", "outcome", "duration_ms"}


class Clocks:
    """The wall clock (``ts``) and the timer (``duration_ms``), moved only by the test's handlers."""

    def __init__(self) -> None:
        self.wall = 1_700_000_000.123456
        self.timer = 50.0

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.timer += seconds


def _server(clocks: Clocks) -> MCPServer:
    server = MCPServer("audited")

    @server.tool()
    def echo(text: str) -> str:
        clocks.advance(0.125)
        return text

    @server.tool()
    def fails() -> str:
        raise ToolError("no")

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Go?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return answer.action

    @server.tool(task_support="optional")
    async def job() -> str:
        return "done"

    @server.resource("test://doc")
    def doc() -> str:
        return "doc"

    return server


def _audited(clocks: Clocks, **kwargs: Any) -> tuple[MCPServer, list[str]]:
    server = _server(clocks)
    lines: list[str] = []
    server.add_middleware(AuditLog(write=lines.append, clock=lambda: clocks.wall, timer=lambda: clocks.timer,
                                   **kwargs))
    return server, lines


def _parsed(lines: list[str]) -> list[JSONObject]:
    return [orjson.loads(line) for line in lines]


async def test_one_json_line_per_request_with_who_what_and_how_long() -> None:
    clocks = Clocks()
    server, lines = _audited(clocks)
    async with Client(server, principal=ALICE) as client:
        await client.call_tool("echo", {"text": "hi"})
        await client.read_resource("test://doc")
    assert all("\n" not in line for line in lines)
    initialize, call, read = _parsed(lines)
    assert set(call) == FIELDS
    assert call == {"ts": 1_700_000_000.123, "method": "tools/call", "component": "echo",
                    "principal": "https://issuer.example|alice", "client_id": "app-1", "session": None,
                    "peer": None, "outcome": "ok", "duration_ms": 125.0}
    assert initialize["method"] == "initialize"
    assert initialize["component"] is None
    assert read["component"] == "test://doc"
    assert read["ts"] == 1_700_000_000.248  # when it started, to the millisecond
    assert read["duration_ms"] == 0.0
    for line in lines:  # who, never with what
        assert TOKEN not in line
        assert "secret" not in line
        assert "alice@example.com" not in line
        assert "mcp:tools" not in line


async def test_without_authentication_who_is_none() -> None:
    clocks = Clocks()
    server, lines = _audited(clocks)
    async with Client(server, protocol_version=STATELESS) as client:
        await client.call_tool("echo", {"text": "hi"})
    (line,) = _parsed(lines)  # no initialize in the stateless era
    assert line["principal"] is None
    assert line["client_id"] is None
    assert line["session"] is None
    assert line["outcome"] == "ok"


async def test_the_session_and_the_peer_are_written_when_the_transport_knows_them() -> None:
    clocks = Clocks()
    server, lines = _audited(clocks)
    state = SessionState(id="sess-1", initialized=True, ready=True, protocol_version="2025-11-25",
                         server_capabilities=["tools"])
    session = ServerSession(server, state)

    async def send(message: JSONObject) -> None:
        return None

    try:
        request = Request(1, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        done = await serve(server, Inbound(request), send, session=session, peer="203.0.113.7")
    finally:
        session.close()
    assert done is not None
    assert "result" in done.message
    (line,) = _parsed(lines)
    assert line["session"] == "sess-1"
    assert line["peer"] == "203.0.113.7"


async def test_errors_carry_their_code_and_refusals_inside_are_seen() -> None:
    clocks = Clocks()
    server, lines = _audited(clocks)

    @server.add_middleware
    async def gate(call: Call, call_next: CallNext) -> JSONObject | None:
        text = call.arguments.get("text")
        if text == "too fast":
            raise RateLimited(1.0)
        if text == "refused":
            raise MCPError(-32001, "no")
        if text == "bug":
            raise RuntimeError("bug")
        return await call_next()

    async with Client(server) as client:
        await client.call_tool("fails")
        responses = [await client.request_raw("tools/call", {"name": "echo", "arguments": {"text": text}})
                     for text in ("too fast", "refused", "bug")]
        await client.request_raw("tools/call", {"name": "missing", "arguments": {}})
        await client.request_raw("made/up")
    assert [r["error"]["code"] for r in responses] == [RATE_LIMITED, -32001, INTERNAL_ERROR]
    outcomes = [(line["outcome"], line.get("code")) for line in _parsed(lines)[1:]]
    assert outcomes == [("tool_error", None), ("rate_limited", None), ("error", -32001),
                        ("error", INTERNAL_ERROR), ("error", INVALID_PARAMS), ("error", -32601)]


async def test_a_stateless_input_round_and_its_retry_are_two_lines() -> None:
    clocks = Clocks()
    server, lines = _audited(clocks)

    async def elicitation(params: JSONObject) -> JSONObject:
        return {"action": "accept", "content": {"ok": True}}

    async with Client(server, protocol_version=STATELESS, elicitation=elicitation) as client:
        await client.call_tool("ask")
    assert [(line["method"], line["outcome"]) for line in _parsed(lines)] == [
        ("tools/call", "input_required"), ("tools/call", "ok")]


async def test_a_task_is_its_own_outcome() -> None:
    clocks = Clocks()
    server, lines = _audited(clocks)
    async with Client(server) as client:
        task = await create(client, "job", {})
        await client.request("tasks/result", {"taskId": task["taskId"]})
    assert [(line["method"], line["outcome"]) for line in _parsed(lines)[1:]] == [
        ("tools/call", "task"), ("tasks/result", "ok")]


async def test_a_cancelled_request_is_written_as_cancelled() -> None:
    server = _server(Clocks())
    lines: list[str] = []
    written = asyncio.Event()
    started = asyncio.Event()

    def write(line: str) -> None:
        lines.append(line)
        written.set()

    server.add_middleware(AuditLog(methods=["tools/call"], write=write))

    @server.tool()
    async def forever() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    async with Client(server) as client:
        call = asyncio.ensure_future(client.request_raw("tools/call", {"name": "forever", "arguments": {}}, id="c"))
        await started.wait()
        await client.notify("notifications/cancelled", {"requestId": "c"})
        await written.wait()  # written as the request ends
        call.cancel()
    (line,) = _parsed(lines)
    assert line["outcome"] == "cancelled"
    assert line["component"] == "forever"


async def test_only_the_methods_named_are_written_and_notifications_never() -> None:
    clocks = Clocks()
    server, lines = _audited(clocks, methods=["tools/call"])

    async def roots(params: JSONObject) -> JSONObject:
        return {"roots": []}

    async with Client(server, roots=roots) as client:
        await client.list_tools()
        await client.notify("notifications/roots/list_changed")
        await client.call_tool("echo", {"text": "x"})
    assert [line["method"] for line in _parsed(lines)] == ["tools/call"]


async def test_lines_go_to_the_audit_logger_by_default(caplog: pytest.LogCaptureFixture) -> None:
    server = _server(Clocks())
    server.add_middleware(AuditLog())
    with caplog.at_level(logging.INFO, logger="wiremcp.audit"):
        async with Client(server) as client:
            await client.call_tool("echo", {"text": "x"})
    written = [orjson.loads(r.getMessage()) for r in caplog.records if r.name == "wiremcp.audit"]
    assert [line["method"] for line in written] == ["initialize", "tools/call"]
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == "wiremcp.audit")
    assert written[1]["duration_ms"] >= 0
