"""``docs/transforming-tools.md``, run: the example served and called as the page shows, a remote child's tool
transformed by a gateway, and the definition mistake stopping the server with the line the page shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, block, exec_as_file, stops_as_shown
from wiremcp import MCPError, Principal
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "transforming-tools.md"
CHECKED = {"transform", "transform-listed", "transform-called", "remote", "mistake", "mistake-error"}


def shown(name: str) -> object:
    """The JSON a block of the page shows."""
    return json.loads(block(PAGE, name).text)


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_the_transformed_tool_is_listed_and_called_as_the_page_shows(tmp_path: Path, era: str) -> None:
    server = exec_as_file(PAGE, "transform", tmp_path / "server.py")["server"]
    async with Client(server, protocol_version=era) as client:
        (listed,) = await client.list_tools()
        called = await client.call_tool("find_documents", {"query": "wire"})
        hidden = await client.call_tool("find_documents", {"query": "wire", "tenant": "globex"})
        missing = await client.call_tool("find_documents", {"limit": 1})
        with pytest.raises(MCPError) as gone:
            await client.call_tool("search", {"q": "wire"})
    assert listed == shown("transform-listed")
    assert {key: called[key] for key in ("content", "structuredContent")} == shown("transform-called")
    assert "isError" not in called
    assert hidden["isError"] is True
    assert "'tenant' was unexpected" in hidden["content"][0]["text"]
    assert missing["isError"] is True
    assert missing["content"][0]["text"].startswith("Invalid arguments for tool find_documents: ")
    assert gone.value.code == -32602


async def test_the_computed_argument_comes_from_the_callers_token(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "transform", tmp_path / "server.py")["server"]
    caller = Principal("https://issuer.test", "ann", scopes=frozenset(), claims={"org": "globex"})
    async with Client(server, principal=caller) as client:
        called = await client.call_tool("find_documents", {"query": "wire", "limit": 1})
    assert called["structuredContent"] == {"result": ["globex: wire #1"]}


async def test_the_gateway_transforms_its_remote_childs_tool(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "remote", tmp_path / "gateway.py")["server"]
    async with Client(server) as client:
        (listed,) = await client.list_tools()
        counted = await client.call_tool("count_words", {"text": "read the wire"})
    assert listed["name"] == "count_words"
    assert listed["inputSchema"]["properties"]["text"]["description"] == "Plain text, any length"
    assert counted["structuredContent"] == {"words": 3, "chars": 13}


def test_the_mistake_stops_the_server_with_the_line_the_page_shows(tmp_path: Path) -> None:
    stops_as_shown(PAGE, "mistake", "mistake-error", tmp_path, "/home/me/docs")
