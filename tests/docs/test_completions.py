"""``docs/completions.md``, run: the server block saved as the reader's ``server.py`` and asked for completions
with the in-memory ``Client``; the requests and results the page shows are what the client sends and gets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.docs_pages import DOCS, block, exec_as_file
from wiremcp import MCPError, MCPServer
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "completions.md"
CHECKED = {"completions", "completions-request", "completions-template"}
TEMPLATE = "repos://{owner}/{repo}"


def shown(name: str) -> Any:
    """The JSON a block of the page shows."""
    return json.loads(block(PAGE, name).text)


def served(tmp_path: Path) -> MCPServer:
    server: MCPServer = exec_as_file(PAGE, "completions", tmp_path / "server.py")["server"]
    return server


async def test_the_requests_the_page_shows_get_the_values_it_shows(tmp_path: Path) -> None:
    template = shown("completions-template")
    async with Client(served(tmp_path)) as client:
        assert client.initialize_result is not None
        tone = await client.request("completion/complete", shown("completions-request"))
        repo = await client.request("completion/complete", template["request"])
    assert "completions" in client.initialize_result["capabilities"]
    assert tone == {"completion": {"values": ["stern"]}}
    assert repo == template["result"]


async def test_values_depend_on_what_is_typed_and_on_the_other_arguments(tmp_path: Path) -> None:
    async with Client(served(tmp_path)) as client:
        every_tone = await client.complete({"type": "ref/prompt", "name": "review"}, "tone", "")
        owners = await client.complete({"type": "ref/resource", "uri": TEMPLATE}, "owner", "a")
        more = await client.complete({"type": "ref/resource", "uri": TEMPLATE}, "repo", "", {"owner": "alan"})
        no_owner = await client.complete({"type": "ref/resource", "uri": TEMPLATE}, "repo", "")
        no_function = await client.complete({"type": "ref/prompt", "name": "review"}, "code", "x")
    assert every_tone == {"completion": {"values": ["kind", "stern", "playful"]}}
    assert owners == {"completion": {"values": ["ada", "alan"]}}
    assert more == {"completion": {"values": ["bombe", "ace"], "total": 3, "hasMore": True}}
    assert no_owner == {"completion": {"values": [], "total": 0, "hasMore": False}}
    assert no_function == {"completion": {"values": [], "hasMore": False}}


@pytest.mark.parametrize(("ref", "argument", "said"), [
    ({"type": "ref/prompt", "name": "reviews"}, "tone", "Unknown prompt: reviews"),
    ({"type": "ref/prompt", "name": "review"}, "lang", "Prompt review has no argument lang"),
    ({"type": "ref/resource", "uri": "repos://{owner}"}, "owner", "Unknown resource template: repos://{owner}"),
    ({"type": "ref/resource", "uri": TEMPLATE}, "branch", f"Resource template {TEMPLATE} has no variable branch"),
    ({"type": "ref/tool", "name": "review"}, "tone", "Unknown reference type: ref/tool"),
])
async def test_what_the_client_names_wrong_is_refused_as_the_table_says(tmp_path: Path, ref: dict[str, str],
                                                                       argument: str, said: str) -> None:
    rows = [line for line in PAGE.read_text().splitlines() if line.startswith("| ") and f"`{said}`" in line]
    assert len(rows) == 1, f"the page's table names {said!r}"
    async with Client(served(tmp_path)) as client:
        with pytest.raises(MCPError) as refused:
            await client.complete(ref, argument, "")
    assert (refused.value.code, refused.value.message) == (-32602, said)


async def test_more_than_a_hundred_values_are_cut_to_a_hundred_with_the_total(tmp_path: Path) -> None:
    server = served(tmp_path)

    @server.completion(prompt="review", argument="code")
    def snippets(value: str, arguments: dict[str, str]) -> list[str]:
        return [f"x = {n}" for n in range(150)]

    async with Client(server) as client:
        got = (await client.complete({"type": "ref/prompt", "name": "review"}, "code", ""))["completion"]
    assert (len(got["values"]), got["total"], got["hasMore"]) == (100, 150, True)
