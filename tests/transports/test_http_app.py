"""``MCPHttpApp``: routing, and mounting the MCP endpoint inside a user's own Starlette application."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from examples.word_count import server
from tests.support.http import initialize, serve_in_process
from wiremcp.transports.http_app import MCPHttpApp


async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("the user's own route")


@pytest.mark.spec("2025-11-25/basic/transports#streamable-http")
async def test_the_endpoint_works_mounted_under_a_prefix_in_a_starlette_app() -> None:
    mcp = MCPHttpApp(server)
    app = Starlette(routes=[Route("/hello", hello), Mount("/api", app=mcp)])
    async with serve_in_process(app) as base, httpx.AsyncClient(timeout=10) as http:
        assert (await http.get(f"{base}/hello")).text == "the user's own route"
        session = await initialize(http, f"{base}/api/mcp")
        result = await session.request("tools/call", {"name": "word_count", "arguments": {"text": "read the wire"}})
        assert result.json()["result"]["structuredContent"] == {"words": 3, "chars": 13}
        assert (await http.post(f"{base}/api/elsewhere")).status_code == 404
        assert (await http.post(f"{base}/mcp")).status_code == 404  # only under the mount
    await mcp.manager.close()


async def test_a_custom_path_is_served_and_others_are_not() -> None:
    mcp = MCPHttpApp(server, path="/rpc/")
    async with serve_in_process(mcp) as base, httpx.AsyncClient(timeout=10) as http:
        await initialize(http, f"{base}/rpc")
        not_found = await http.post(f"{base}/mcp", json={})
        assert not_found.status_code == 404
        assert not_found.json()["error"]["code"] == -32600
    await mcp.manager.close()
