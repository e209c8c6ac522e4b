"""Following one request through the code: which of wiremcp's functions run, in the order they first run,
for the requests the architecture walks of docs/architecture.md describe (``tests/docs/test_architecture.py`` checks the walks)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import orjson

from wiremcp import Context, MCPServer
from wiremcp.protocol import META_CAPABILITIES, META_VERSION
from wiremcp.transports import MCPHttpApp
from wiremcp.transports.stdio import serve_stdio
from wiremcp.types import JSONObject

SESSION_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"


@contextmanager
def calls() -> Iterator[list[str]]:
    """``module:qualname`` of every wiremcp function called in this thread while inside, in first-call order."""
    seen: dict[str, None] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if module.startswith("wiremcp"):
                seen.setdefault(f"{module}:{frame.f_code.co_qualname}", None)

    order: list[str] = []
    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield order
    finally:
        sys.setprofile(previous)
        order.extend(seen)


def walk_server() -> MCPServer:
    server = MCPServer("walk")

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return answer.action

    return server


class AsgiPeer:
    """Raw ASGI calls into an ``MCPHttpApp``, as uvicorn makes them (no network: the trace stays in-thread)."""

    def __init__(self, server: MCPServer) -> None:
        self.app = MCPHttpApp(server)
        self.session: str | None = None

    async def post(self, body: JSONObject, headers: dict[str, str] | None = None,
                   sent: list[dict[str, Any]] | None = None,
                   arrived: asyncio.Event | None = None) -> list[dict[str, Any]]:
        """POST ``body``; what the app sends goes to ``sent`` (``arrived`` is set at each message)."""
        out: list[dict[str, Any]] = [] if sent is None else sent
        pending = [{"type": "http.request", "body": orjson.dumps(body), "more_body": False}]
        forever = asyncio.Event()

        async def receive() -> dict[str, Any]:
            if pending:
                return pending.pop(0)
            await forever.wait()
            return {"type": "http.disconnect"}

        async def send(message: Any) -> None:
            out.append(message)
            if arrived is not None:
                arrived.set()

        raw = {"host": "127.0.0.1:8000", "content-type": "application/json",
               "accept": "application/json, text/event-stream", **(headers or {})}
        if self.session is not None:
            raw.setdefault("mcp-session-id", self.session)
            raw.setdefault("mcp-protocol-version", SESSION_VERSION)
        scope = {"type": "http", "method": "POST", "path": "/mcp", "root_path": "", "query_string": b"",
                 "headers": [(k.encode(), v.encode()) for k, v in raw.items()], "scheme": "http",
                 "http_version": "1.1", "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000)}
        await self.app(scope, receive, send)
        return out

    async def open_session(self, capabilities: JSONObject | None = None) -> None:
        started = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": SESSION_VERSION, "capabilities": capabilities or {},
            "clientInfo": {"name": "walk", "version": "1"}}})
        self.session = dict(started[0]["headers"])[b"mcp-session-id"].decode()
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _call(request_id: int, meta: JSONObject | None = None, name: str = "add") -> JSONObject:
    params: JSONObject = {"name": name, "arguments": {"a": 1, "b": 2} if name == "add" else {}}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def http_handshake_call() -> list[str]:
    peer = AsgiPeer(walk_server())
    await peer.open_session()
    with calls() as order:
        await peer.post(_call(1))
    return order


async def http_stateless_call() -> list[str]:
    peer = AsgiPeer(walk_server())
    meta: JSONObject = {META_VERSION: STATELESS_VERSION, META_CAPABILITIES: {}}
    with calls() as order:
        await peer.post(_call(1, meta), {"mcp-protocol-version": STATELESS_VERSION, "mcp-method": "tools/call",
                                         "mcp-name": "add"})
    return order


async def stdio_line() -> list[str]:
    """A handshake-era session on stdio (pipes for stdin and stdout): once initialized, one ``tools/call``
    line is followed."""
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    loop = asyncio.get_running_loop()
    opening = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": SESSION_VERSION, "capabilities": {}, "clientInfo": {"name": "walk", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    try:
        served = asyncio.ensure_future(serve_stdio(walk_server(), stdin_fd=stdin_read, stdout_fd=stdout_write))
        os.write(stdin_write, b"".join(orjson.dumps(line) + b"\n" for line in opening))
        assert b'"protocolVersion"' in await loop.run_in_executor(None, os.read, stdout_read, 1 << 16)
        with calls() as order:
            os.write(stdin_write, orjson.dumps(_call(1)) + b"\n")
            answer = await loop.run_in_executor(None, os.read, stdout_read, 1 << 16)
        assert orjson.loads(answer)["result"]["structuredContent"] == {"result": 3}, answer
        os.close(stdin_write)
        await served
    finally:
        for fd in (stdin_read, stdout_read, stdout_write):
            os.close(fd)
    return order


async def http_elicitation() -> tuple[list[str], list[str]]:
    """The functions first run while the handler asks (until the request reaches the client's stream), and
    while the client's answer comes in (until the handler returns)."""
    peer = AsgiPeer(walk_server())
    await peer.open_session({"elicitation": {"form": {}}})
    sent: list[dict[str, Any]] = []
    arrived = asyncio.Event()
    with calls() as asked:
        call = asyncio.ensure_future(peer.post(_call(1, name="ask"), sent=sent, arrived=arrived))
        while not (request := _elicitation_in(sent)):
            arrived.clear()
            await arrived.wait()
    with calls() as answered:
        await peer.post({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}})
        while not any(b'"result":{"content"' in m.get("body", b"") for m in sent):
            arrived.clear()
            await arrived.wait()
    call.cancel()
    return asked, answered


def _elicitation_in(sent: list[dict[str, Any]]) -> JSONObject | None:
    for message in sent:
        for line in message.get("body", b"").splitlines():
            if line.startswith(b"data: ") and b"elicitation/create" in line:
                found: JSONObject = orjson.loads(line[len(b"data: "):])
                return found
    return None
