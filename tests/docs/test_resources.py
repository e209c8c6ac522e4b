"""``docs/resources.md``, run: each server block saved as the reader's ``server.py`` and exercised with the
in-memory ``Client``; the JSON the page shows is what the client gets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.docs_pages import DOCS, block, exec_as_file, notifications
from wiremcp import MCPError
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "resources.md"
CHECKED = {"resources", "resources-listed", "resources-read", "resource-returns", "resource-returns-wire",
           "caching"}


def shown(name: str) -> Any:
    """The JSON a block of the page shows."""
    return json.loads(block(PAGE, name).text)


def served(tmp_path: Path) -> Any:
    """The example's server, saved as ``server.py`` beside a ``docs/`` folder with one page."""
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    (tmp_path / "docs" / "guide" / "setup.md").write_text("# Setup\n")
    (tmp_path / "secret.txt").write_text("not for clients")
    return exec_as_file(PAGE, "resources", tmp_path / "server.py")["server"]


async def unknown(client: Client, uri: str) -> MCPError:
    with pytest.raises(MCPError) as refused:
        await client.read_resource(uri)
    return refused.value


async def test_the_example_lists_and_reads_as_the_page_shows(tmp_path: Path) -> None:
    async with Client(served(tmp_path)) as client:
        listed = {"resources": await client.list_resources(),
                  "resourceTemplates": await client.list_resource_templates()}
        todo = await client.read_resource("notes://todo")
        config = await client.read_resource("config://app")
        page = await client.read_resource("docs://guide/setup.md")
        missing = await unknown(client, "notes://groceries")
        nothing = await unknown(client, "weather://today")
    assert listed == shown("resources-listed")
    assert todo == shown("resources-read")
    assert config == {"contents": [{"uri": "config://app", "mimeType": "application/json", "text": '{"theme":"dark"}'}]}
    assert page == {"contents": [{"uri": "docs://guide/setup.md", "mimeType": "text/markdown", "text": "# Setup\n"}]}
    assert (missing.code, missing.message, missing.data) == (-32002, "Resource not found: notes://groceries",
                                                             {"uri": "notes://groceries"})
    assert nothing.code == -32002


@pytest.mark.parametrize("uri", ["docs://../secret.txt", "docs://guide/../../secret.txt", "docs://%2e%2e/secret.txt",
                                 "docs://guide/..%2f..%2fsecret.txt", "docs://..\\secret.txt"])
async def test_a_path_that_climbs_out_reaches_no_template(tmp_path: Path, uri: str) -> None:
    async with Client(served(tmp_path)) as client:
        assert (await unknown(client, uri)).code == -32002


async def test_an_absolute_path_is_refused_by_the_examples_own_check(tmp_path: Path) -> None:
    async with Client(served(tmp_path)) as client:
        refused = await unknown(client, f"docs://{tmp_path}/secret.txt")
    assert (refused.code, refused.data) == (-32002, {"uri": f"docs://{tmp_path}/secret.txt"})


async def test_a_subscribed_session_hears_of_a_change_and_another_does_not(tmp_path: Path) -> None:
    server = served(tmp_path)
    async with Client(server) as subscribed, Client(server) as other:
        assert subscribed.initialize_result is not None
        assert subscribed.initialize_result["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
        assert await subscribed.subscribe("notes://todo") == {}
        with pytest.raises(MCPError) as refused:
            await subscribed.subscribe("weather://today")
        saved = await other.call_tool("write_note", {"name": "todo", "text": "buy bread"})
        (updated,) = await subscribed.wait_for_notification("notifications/resources/updated")
        reread = await subscribed.read_resource("notes://todo")
        await subscribed.unsubscribe("notes://todo")
        await other.call_tool("write_note", {"name": "todo", "text": "buy jam"})
        await subscribed.ping()  # anything sent by the second write has arrived before the ping's answer
    assert refused.value.code == -32002
    assert saved["content"] == [{"type": "text", "text": "saved todo"}]
    assert updated["params"] == {"uri": "notes://todo"}
    assert reread["contents"][0]["text"] == "buy bread"
    assert len(notifications(subscribed, "notifications/resources/updated")) == 1
    assert notifications(other, "notifications/resources/updated") == []


async def test_bytes_and_content_dicts_are_the_contents_the_page_shows(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "resource-returns", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        listed = {r["uri"]: r for r in await client.list_resources()}
        read = {uri: await client.read_resource(uri) for uri in listed}
    assert read == shown("resource-returns-wire")
    assert listed["assets://logo"]["size"] == 8
    assert listed["assets://readme"]["annotations"] == {"audience": ["user"], "priority": 0.8}


async def test_the_caching_hints_reach_a_stateless_client_only(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "caching", tmp_path / "server.py")["server"]
    async with Client(server, protocol_version="2026-07-28") as client:
        listed = await client.request("resources/list")
        read = await client.read_resource("catalogue://prices")
    async with Client(server) as handshake:
        read_before = await handshake.read_resource("catalogue://prices")
        listed_before = await handshake.request("resources/list")
    assert (listed["ttlMs"], listed["cacheScope"]) == (60_000, "private")
    assert (read["ttlMs"], read["cacheScope"]) == (5_000, "public")
    assert read["contents"] == [{"uri": "catalogue://prices", "mimeType": "application/json", "text": '{"ABC-1":9.5}'}]
    assert "ttlMs" not in read_before
    assert "ttlMs" not in listed_before
