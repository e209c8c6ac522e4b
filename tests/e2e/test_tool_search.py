"""The official MCP Python SDK client (``mcp``) finds a tool of a large catalog by search and calls it, in both eras
(``mode="auto"``: 2026-07-28, stateless; ``mode="legacy"``: 2025-11-25, a session), over Streamable HTTP (a real
uvicorn) and over stdio (``python -m wiremcp stdio``). The server is ``tests/support/large_catalog.py``: 363 tools,
of which ``tools/list`` shows ``search_tools`` and the pinned ``whoami``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.support.http import UvicornProcess, run_uvicorn
from tests.support.official_client import WAIT, connect, only_text
from tests.support.stateless_http import Call, assert_no_session, post, result_of, tool, tool_text

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests.support.large_catalog:server"
VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}
MODES = [pytest.param("auto", id="auto-2026-07-28"), pytest.param("legacy", id="legacy-2025-11-25")]

pytestmark = [pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
              pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def catalog() -> Iterator[UvicornProcess]:
    with run_uvicorn(TARGET) as server:
        yield server
        output = server.output()
    assert "Traceback" not in output, output


def over_stdio(mode: str) -> AbstractAsyncContextManager[Client]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "wiremcp", "stdio", TARGET], cwd=ROOT,
                                   env={"WIREMCP_LOG_LEVEL": "WARNING", "PYTHONDONTWRITEBYTECODE": "1"})
    return Client(stdio_client(params), mode=mode, read_timeout_seconds=WAIT)


async def find_and_call(client: Client, mode: str) -> None:
    """The listed tools, a search, and a call of the tool found, by its name."""
    assert client.protocol_version == VERSION[mode]
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert sorted(listed) == ["search_tools", "whoami"]
    assert listed["search_tools"].input_schema["required"] == ["query"]
    searched = await client.call_tool("search_tools", {"query": "weather forecast of a city", "limit": 3})
    assert not searched.is_error
    assert searched.structured_content is not None
    found: list[dict[str, Any]] = searched.structured_content["tools"]
    assert json.loads(only_text(searched.content)) == {"tools": found}
    assert found[0]["name"] == "weather_forecast"
    assert found[0]["inputSchema"]["required"] == ["city"]
    called = await client.call_tool(found[0]["name"], {"city": "Lyon", "days": 2})
    assert not called.is_error
    assert called.structured_content == {"city": "Lyon", "days": 2, "summary": "2 days of sun in Lyon"}
    archived = await client.call_tool("search_tools", {"query": "archive a storage bucket"})
    assert archived.structured_content is not None
    name = archived.structured_content["tools"][0]["name"]
    assert name == "storage_archive_bucket"
    result = await client.call_tool(name, {"id": "b-1"})
    assert json.loads(only_text(result.content)) == {"tool": name, "arguments": {"id": "b-1"}}


@pytest.mark.parametrize("mode", MODES)
async def test_the_official_client_finds_a_tool_by_search_and_calls_it_over_http(
        mode: str, catalog: UvicornProcess) -> None:
    async with connect(catalog, mode) as client:
        await find_and_call(client, mode)


@pytest.mark.parametrize("mode", MODES)
async def test_the_official_client_finds_a_tool_by_search_and_calls_it_over_stdio(mode: str) -> None:
    async with over_stdio(mode) as client:
        await find_and_call(client, mode)


async def test_a_stateless_request_by_hand_searches_then_calls_with_its_mirrored_headers(
        catalog: UvicornProcess) -> None:
    """The 2026-07-28 era with the repo's own helpers: ``tools/list``, the search and the call are each one POST
    with the standard headers (``Mcp-Name`` mirrors the tool's name), and no session."""
    async with httpx.AsyncClient(timeout=WAIT) as http:
        listing = Call("tools/list")
        listed = await post(http, catalog.url, listing)
        search = tool("search_tools", {"query": "share a tracker ticket with a colleague", "limit": 2})
        searched = await post(http, catalog.url, search)
        found = result_of(searched, search.rid)["structuredContent"]["tools"]
        text = await tool_text(http, catalog.url, found[0]["name"], {"id": "T-7", "email": "a@example.com"})
    assert [t["name"] for t in result_of(listed, listing.rid)["tools"]] == ["search_tools", "whoami"]
    assert_no_session(searched)
    assert found[0]["name"] == "tracker_share_ticket"
    assert json.loads(text) == {"tool": "tracker_share_ticket", "arguments": {"id": "T-7", "email": "a@example.com"}}
