"""``wiremcp.transports.serving.demo``: the bundled demo server, served when no other is named, used as a
client would, in process: its tools, its notes resources, its review prompt and the prompt's completion."""

from __future__ import annotations

import datetime
import hashlib
import json

import pytest

from wiremcp.errors import RESOURCE_NOT_FOUND, MCPError
from wiremcp.transports.memory import Client
from wiremcp.transports.serving import demo
from wiremcp.transports.serving.settings import DEFAULT_SERVER


@pytest.fixture(autouse=True)
def _notes_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo keeps its notes in memory: each test starts from the welcome note alone."""
    monkeypatch.setattr(demo, "_NOTES", {"welcome": "Welcome."})


def test_it_is_the_default_server() -> None:
    assert DEFAULT_SERVER == "wiremcp.transports.serving.demo:server"


async def test_it_offers_its_tools_resources_and_prompt() -> None:
    async with Client(demo.server) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["serverInfo"]["name"] == "wiremcp-demo"
        assert [t["name"] for t in await client.list_tools()] == ["text_stats", "digest", "now", "add_note"]
        assert [r["uri"] for r in await client.list_resources()] == ["notes://index"]
        assert [t["uriTemplate"] for t in await client.list_resource_templates()] == ["notes://{name}"]
        assert [p["name"] for p in await client.list_prompts()] == ["review"]


async def test_the_text_tools() -> None:
    async with Client(demo.server) as client:
        stats = await client.call_tool("text_stats", {"text": "two words\nand a line"})
        empty = await client.call_tool("text_stats", {"text": ""})
        hashed = await client.call_tool("digest", {"text": "abc"})
        md5 = await client.call_tool("digest", {"text": "abc", "algorithm": "md5"})
        refused = await client.call_tool("digest", {"text": "abc", "algorithm": "crc32"})
        now = await client.call_tool("now")
    assert stats["structuredContent"] == {"words": 5, "chars": 20, "lines": 2}
    assert empty["structuredContent"] == {"words": 0, "chars": 0, "lines": 0}
    assert hashed["content"][0]["text"] == hashlib.sha256(b"abc").hexdigest()
    assert md5["content"][0]["text"] == hashlib.md5(b"abc").hexdigest()
    assert refused["isError"] is True
    assert datetime.datetime.fromisoformat(now["content"][0]["text"]).tzinfo is not None


@pytest.mark.spec("2025-11-25/server/resources#subscriptions")
async def test_a_note_added_is_readable_and_listed_and_its_subscribers_hear_of_a_change() -> None:
    async with Client(demo.server) as client:
        added = await client.call_tool("add_note", {"name": "todo", "body": "write tests"})
        assert added["content"][0]["text"] == "notes://todo"
        read = await client.read_resource("notes://todo")
        index = await client.read_resource("notes://index")
        await client.subscribe("notes://todo")
        await client.call_tool("add_note", {"name": "todo", "body": "write more tests"})
        (updated,) = await client.wait_for_notification("notifications/resources/updated")
        again = await client.read_resource("notes://todo")
        with pytest.raises(MCPError) as missing:
            await client.read_resource("notes://nothing")
    assert read["contents"] == [{"uri": "notes://todo", "mimeType": "text/plain", "text": "write tests"}]
    assert json.loads(index["contents"][0]["text"]) == ["todo", "welcome"]
    assert updated["params"] == {"uri": "notes://todo"}
    assert again["contents"][0]["text"] == "write more tests"
    assert missing.value.code == RESOURCE_NOT_FOUND


async def test_a_note_name_must_be_a_simple_one() -> None:
    async with Client(demo.server) as client:
        refused = await client.call_tool("add_note", {"name": "../etc", "body": "x"})
    assert refused["isError"] is True
    assert "../etc" not in demo._NOTES


async def test_the_review_prompt_and_its_tones() -> None:
    async with Client(demo.server) as client:
        prompt = await client.get_prompt("review", {"text": "Hello.", "tone": "formal"})
        tones = await client.complete({"type": "ref/prompt", "name": "review"}, "tone", "f")
    assert prompt["messages"] == [{"role": "user", "content": {
        "type": "text", "text": "Please review the following text in a formal tone:\n\nHello."}}]
    assert tones == {"completion": {"values": ["friendly", "formal"]}}
