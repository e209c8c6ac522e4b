"""``docs/prompts.md``, run: each server block saved as the reader's ``server.py`` and exercised with the in-memory
``Client``; the JSON the page shows is what the client gets, and the errors its table names are the ones sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.docs_pages import DOCS, block, exec_as_file
from wiremcp import MCPError
from wiremcp.prompts import Prompt
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "prompts.md"
CHECKED = {"prompts", "prompts-listed", "prompts-get", "prompt-messages", "prompt-messages-wire"}


def shown(name: str) -> Any:
    """The JSON a block of the page shows."""
    return json.loads(block(PAGE, name).text)


async def test_the_example_lists_and_gets_as_the_page_shows(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "prompts", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        listed = await client.list_prompts()
        review = await client.get_prompt("review", {"code": "x = 1"})
        stern = await client.get_prompt("review", {"code": "x = 1", "tone": "stern"})
        debug = await client.get_prompt("debug", {"error": "KeyError"})
    assert listed == shown("prompts-listed")
    assert review == shown("prompts-get")
    assert stern["messages"][0]["content"]["text"] == "Review this code, in a stern tone:\n\nx = 1"
    assert debug["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "I get this error: KeyError"}},
        {"role": "assistant", "content": {"type": "text", "text": "What did you run before it?"}}]


@pytest.mark.parametrize(("name", "arguments", "said"), [
    ("review", {}, "Missing required arguments for prompt review: code"),
    ("review", {"code": "x = 1", "lang": "python"}, "Unknown argument for prompt review: lang"),
    ("review", {"code": 1}, "Argument code of prompt review must be a string"),
    ("reviews", {"code": "x = 1"}, "Unknown prompt: reviews"),
])
async def test_what_the_client_sends_wrong_is_refused_as_the_table_says(tmp_path: Path, name: str,
                                                                       arguments: dict[str, Any], said: str) -> None:
    server = exec_as_file(PAGE, "prompts", tmp_path / "server.py")["server"]
    rows = [line for line in PAGE.read_text().splitlines() if line.startswith("| ") and f"`{said}`" in line]
    assert len(rows) == 1, f"the page's table names {said!r}"
    async with Client(server) as client:
        with pytest.raises(MCPError) as refused:
            await client.request("prompts/get", {"name": name, "arguments": arguments})
    assert (refused.value.code, refused.value.message) == (-32602, said)


async def test_messages_with_an_embedded_resource_and_an_assistant_turn(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "prompt-messages", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        got = await client.get_prompt("explain_log", {"service": "billing"})
    assert got == shown("prompt-messages-wire")


async def test_a_prompt_added_and_removed_at_runtime_is_announced(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "prompts", tmp_path / "server.py")["server"]

    def summarize(text: str) -> str:
        return f"Summarize:\n\n{text}"

    async with Client(server) as client:
        server.add_prompt(Prompt(summarize))
        await client.wait_for_notification("notifications/prompts/list_changed")
        added = [p["name"] for p in await client.list_prompts()]
        server.remove_prompt("summarize")
        await client.wait_for_notification("notifications/prompts/list_changed", 2)
        removed = [p["name"] for p in await client.list_prompts()]
    assert added == ["review", "debug", "summarize"]
    assert removed == ["review", "debug"]
