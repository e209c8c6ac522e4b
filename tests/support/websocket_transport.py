"""A WebSocket-shaped transport, sketched for the tests: what a new transport takes to plug into the one inlet.

``WebSocketMCP`` is an ASGI ``websocket`` app serving one MCP client per connection: it accepts
``websocket.connect``, feeds each text (or bytes) frame it receives to a ``Connection`` (which hands it to the
inlet, ``wiremcp.inlet``: decoded, classified and sorted there, in either era), and sends every message the
server has for the client as a ``websocket.send`` text frame. Its requests are served through
``wiremcp.entry.serve``, like every transport's, so the runtime's requests in flight (``runtime.requests``)
hold them and the shutdown (``wiremcp.shutdown.shut_down``) waits for them or cuts them off.

``WebSocketPipe`` drives it in memory (asyncio queues as the ASGI ``receive`` and ``send``): no network.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

from wiremcp import MCPServer, jsonrpc
from wiremcp.connection import Connection
from wiremcp.session import ServerSession
from wiremcp.transports.asgi import Receive, Scope, SendASGI
from wiremcp.transports.identity import caller
from wiremcp.types import JSONObject

BOUND = 10.0
"""Seconds any one wait of the pipe may take before the test fails."""


class WebSocketMCP:
    """The MCP server as an ASGI ``websocket`` app: one client per connection, on a session of its own."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if scope["type"] != "websocket" or (await receive())["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        principal = caller(scope).principal  # read once, for the whole connection
        sending = asyncio.Lock()  # one frame at a time: requests answer from tasks of their own
        posted: set[asyncio.Task[None]] = set()

        async def write(message: JSONObject | list[JSONObject]) -> None:
            async with sending:
                await send({"type": "websocket.send", "text": jsonrpc.dumps(message).decode()})

        def post(message: JSONObject) -> None:  # what the server says unasked (list changes, logs)
            task = asyncio.ensure_future(write(message))
            posted.add(task)
            task.add_done_callback(posted.discard)

        connection = Connection(ServerSession(self.server, post=post), write)
        try:
            while (event := await receive())["type"] == "websocket.receive":
                frame = event.get("text") if event.get("text") is not None else event.get("bytes")
                if frame is not None:
                    await connection.feed(frame, principal)
        finally:
            await connection.close()
            for task in list(posted):
                task.cancel()


class WebSocketPipe:
    """A client's end of one in-memory WebSocket to an ASGI app: JSON-RPC messages as text frames."""

    def __init__(self) -> None:
        self.to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.notifications: list[JSONObject] = []
        self._ids = iter(range(1, 1 << 30))

    async def receive(self) -> dict[str, Any]:
        return await self.to_app.get()

    async def send(self, message: MutableMapping[str, Any]) -> None:
        await self.from_app.put(dict(message))

    async def send_text(self, message: JSONObject) -> None:
        await self.to_app.put({"type": "websocket.receive", "text": json.dumps(message)})

    async def next_message(self) -> JSONObject:
        """The next message the app sends (a text frame), within ``BOUND``."""
        async with asyncio.timeout(BOUND):
            event = await self.from_app.get()
        assert event["type"] == "websocket.send", event
        message: JSONObject = json.loads(event["text"])
        return message

    async def answer(self, rid: int | str) -> JSONObject:
        """The response to request ``rid``; notifications met on the way are kept in ``notifications``."""
        while True:
            message = await self.next_message()
            if "method" in message and "id" not in message:
                self.notifications.append(message)
                continue
            assert message.get("id") == rid, message
            return message

    def next_id(self) -> int:
        return next(self._ids)

    async def request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """Send a request and return its whole response (result or error)."""
        rid = self.next_id()
        message: JSONObject = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        await self.send_text(message)
        return await self.answer(rid)

    async def notify(self, method: str, params: JSONObject | None = None) -> None:
        message: JSONObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send_text(message)


@contextlib.asynccontextmanager
async def websocket(app: WebSocketMCP, scope: Scope | None = None) -> AsyncIterator[WebSocketPipe]:
    """Open one WebSocket to ``app`` (accepted), and close it (``websocket.disconnect``) on the way out,
    waiting (bounded) for the app to end."""
    pipe = WebSocketPipe()
    connected = {"type": "websocket", "path": "/", "headers": [], "client": ("127.0.0.1", 50000), **(scope or {})}
    serving = asyncio.create_task(app(connected, pipe.receive, pipe.send))
    await pipe.to_app.put({"type": "websocket.connect"})
    try:
        async with asyncio.timeout(BOUND):
            accepted = await pipe.from_app.get()
        assert accepted == {"type": "websocket.accept"}, accepted
        yield pipe
    finally:
        await pipe.to_app.put({"type": "websocket.disconnect", "code": 1000})
        async with asyncio.timeout(BOUND):
            await serving
