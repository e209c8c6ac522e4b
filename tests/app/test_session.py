"""``wiremcp.session``: the session runner's bookkeeping (a restored state served, request ids in flight,
detaching from the server), and its notifications reaching it through its own event loop, also when a
sync tool on a worker thread changes a list (asyncio objects are not thread-safe)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.states import full_state
from wiremcp import MCPServer, jsonrpc
from wiremcp.entry import serve
from wiremcp.inbound import Inbound
from wiremcp.session import ServerSession
from wiremcp.state import SessionState
from wiremcp.tools import Tool
from wiremcp.transports import Client


async def test_a_restored_state_serves_requests() -> None:
    server = MCPServer("s")

    @server.tool()
    def echo(text: str) -> str:
        return text

    state = SessionState.from_dict(full_state().to_dict())
    session = ServerSession(server, state)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    done = await serve(server, Inbound(jsonrpc.Request(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})),
                       send, session=session)
    assert done is not None
    assert done.message == {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}}
    assert sent == []
    session.close()


async def test_duplicate_request_id_in_flight_is_rejected() -> None:
    server = MCPServer("s")
    started = asyncio.Event()
    release = asyncio.Event()

    @server.tool()
    async def slow() -> str:
        started.set()
        await release.wait()
        return "done"

    session = ServerSession(server, SessionState(initialized=True, ready=True, server_capabilities=["tools"]))

    async def send(message: dict[str, Any]) -> None:
        return None

    request = jsonrpc.Request("dup", "tools/call", {"name": "slow"})
    first = asyncio.ensure_future(serve(server, Inbound(request), send, session=session))
    await started.wait()
    assert session.inflight == 1
    second = await serve(server, Inbound(request), send, session=session)
    assert second is not None
    assert second.message["error"]["code"] == -32600
    release.set()
    response = await first
    assert response is not None
    assert response.message["result"]["content"][0]["text"] == "done"
    assert session.inflight == 0
    session.close()


def test_close_detaches_from_the_server() -> None:
    server = MCPServer("s")
    posted: list[dict[str, Any]] = []
    session = ServerSession(server, SessionState(initialized=True, ready=True, server_capabilities=["tools"]),
                            post=posted.append)

    @server.tool()
    def one() -> str:
        return "1"

    assert [m["method"] for m in posted] == ["notifications/tools/list_changed"]
    session.close()

    @server.tool()
    def two() -> str:
        return "2"

    assert len(posted) == 1





def _new() -> str:
    return "new"


@pytest.mark.spec("2025-11-25/server/tools#list-changed-notification")
async def test_a_sync_tool_that_adds_a_tool_notifies_the_session() -> None:
    server = MCPServer("threads")

    @server.tool()
    def grow() -> str:
        """Add a tool from a worker thread."""
        server.add_tool(Tool(_new, name="grown", description="Added from a worker thread."))
        return "grown"

    asyncio.get_running_loop().set_debug(True)  # debug mode raises on non-thread-safe calls
    async with Client(server) as client:
        result = await client.call_tool("grow")
        notes = await asyncio.wait_for(client.wait_for_notification("notifications/tools/list_changed"), 10)
    assert result["content"] == [{"type": "text", "text": "grown"}]
    assert notes == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
