"""A sync tool runs on a worker thread; when it changes a list, the notification must still reach the
session through its event loop (asyncio objects are not thread-safe)."""

from __future__ import annotations

import asyncio

import pytest

from wiremcp import MCPServer
from wiremcp.tools import Tool
from wiremcp.transports import Client


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
