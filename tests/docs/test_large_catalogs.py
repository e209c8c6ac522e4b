"""``docs/large-catalogs.md``, run: each server of the page saved as a file, executed, and searched with the
in-memory ``Client``; the search result the page shows is the one the page's server answers with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.docs_pages import DOCS, block, exec_as_file
from wiremcp.principal import Principal
from wiremcp.transports import Client

PAGE = DOCS / "large-catalogs.md"
CHECKED = {"server", "search-result", "mount", "view", "embedder"}


async def search(client: Client, tool: str, query: str, limit: int = 5) -> list[dict[str, Any]]:
    result = await client.call_tool(tool, {"query": query, "limit": limit})
    assert not result.get("isError"), result
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    found: list[dict[str, Any]] = result["structuredContent"]["tools"]
    return found


async def test_the_server_lists_the_search_tool_and_the_pinned_one_and_finds_the_rest(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "server", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        listed = sorted(t["name"] for t in await client.list_tools())
        found = await search(client, "search_tools", "bill a customer", 1)
        called = await client.call_tool(found[0]["name"], {"customer": "acme", "amount_cents": 1200})
    assert listed == ["search_tools", "whoami"]
    assert {"tools": found} == json.loads(block(PAGE, "search-result").text)
    assert called["content"][0]["text"] == "invoice for acme: 1200"


async def test_the_mount_is_searched_through_its_own_search_tool(tmp_path: Path) -> None:
    gateway = exec_as_file(PAGE, "mount", tmp_path / "gateway.py")["gateway"]
    async with Client(gateway) as client:
        listed = sorted(t["name"] for t in await client.list_tools())
        found = await search(client, "gh_search_tools", "open a new issue")
    assert listed == ["gh_list_pulls", "gh_search_tools"]
    assert found[0]["name"] == "gh_create_issue"


async def test_the_view_offers_search_to_its_callers(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "view", tmp_path / "server.py")["server"]
    support = Principal("https://issuer.test", "sam", claims={"groups": ["support"]})
    async with Client(server, principal=support) as client:
        listed = [t["name"] for t in await client.list_tools()]
        found = [t["name"] for t in await search(client, "search_tools", "create a ticket or an issue")]
    async with Client(server) as client:
        everyone = sorted(t["name"] for t in await client.list_tools())
    assert listed == ["search_tools"]
    assert found == ["jira_create_ticket", "jira_search"] or found[0] == "jira_create_ticket"
    assert "github_create_issue" not in found
    assert everyone == ["github_create_issue", "jira_create_ticket", "jira_search"]


async def test_the_embedder_is_plugged_in(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "embedder", tmp_path / "server.py")["server"]

    @server.tool
    def forecast(city: str) -> str:
        """The weather forecast of a city."""
        return "sunny"

    async with Client(server) as client:
        assert [t["name"] for t in await search(client, "search_tools", "weather")] == ["forecast"]
