"""The two final extensions with the official MCP Python SDK client (``mcp``) as the host, against the examples
a user would copy: Agent Skills (SEP-2640, ``examples/skills``) and MCP Apps (SEP-1865, ``examples/apps``),
over Streamable HTTP (a real uvicorn, both eras) and over stdio (``wiremcp stdio``, both eras).

The client has no skills or apps API of its own: skills' methods go out as plain requests, and the host's
checks are done here as a host must do them (SEP-2640 "Integrity and verification": each file read is
verified against its entry's digest and size, and SKILL.md's frontmatter against the entry's).
"""

from __future__ import annotations

import base64
import hashlib
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.extension import advertise
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import BlobResourceContents, Request, TextResourceContents
from pydantic import TypeAdapter

from tests.support.http import UvicornProcess, run_uvicorn
from tests.support.official_client import WAIT, connect

ROOT = Path(__file__).resolve().parents[2]
SEP = "seps/2640-skills-extension"
APPS = "ext-apps/2026-01-26/apps"
SKILLS = "examples.skills.server:server"
COUNTER = "examples.apps.server:server"
UI = "io.modelcontextprotocol/ui"
MODES = ["auto", "legacy"]

pytestmark = [pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
              pytest.mark.timeout(60)]


class SkillsList(Request[dict[str, Any], Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"


class SkillsGet(Request[dict[str, Any], Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"


class DirectoryRead(Request[dict[str, Any], Literal["resources/directory/read"]]):
    method: Literal["resources/directory/read"] = "resources/directory/read"


ANY: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


async def ask(client: Client, request: Request[dict[str, Any], Any]) -> dict[str, Any]:
    """A request the client has no method for, its result as the JSON object it is."""
    result: dict[str, Any] = await client.session.send_request(request, ANY)  # type: ignore[type-var]
    return result


@pytest.fixture(scope="module")
def skills_http() -> Iterator[UvicornProcess]:
    with run_uvicorn(SKILLS) as server:
        yield server


@pytest.fixture(scope="module")
def counter_http() -> Iterator[UvicornProcess]:
    with run_uvicorn(COUNTER) as server:
        yield server


@asynccontextmanager
async def over_stdio(target: str, mode: str, **options: Any) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "wiremcp", "stdio", target], cwd=ROOT,
                                   env={"PYTHONPATH": str(ROOT), "WIREMCP_LOG_LEVEL": "WARNING"})
    async with Client(stdio_client(params), mode=mode, read_timeout_seconds=WAIT, **options) as client:
        yield client


async def load_every_skill(client: Client) -> list[str]:
    """What a host does: list, then for each skill fetch its entry, read every file, verify each."""
    listed = await ask(client, SkillsList(params={}))
    loaded = []
    for entry in listed["skills"]:
        got = await ask(client, SkillsGet(params={"uri": entry["uri"]}))
        assert got["skill"] == entry
        for file in entry["resources"]:
            (content,) = (await client.read_resource(file["uri"])).contents
            assert isinstance(content, TextResourceContents | BlobResourceContents)
            data = content.text.encode() if isinstance(content, TextResourceContents) else base64.b64decode(content.blob)
            assert (len(data), "sha256:" + hashlib.sha256(data).hexdigest()) == (file["size"], file["digest"])
            if file["uri"] == entry["uri"]:
                front = yaml.safe_load(data.decode().split("---")[1])
                assert front == entry["frontmatter"]
                assert content.mime_type == "text/markdown"
        loaded.append(entry["uri"])
    return loaded


async def browse(client: Client, uri: str) -> list[tuple[str, str | None]]:
    read = await ask(client, DirectoryRead(params={"uri": uri}))
    return [(child["uri"], child.get("mimeType")) for child in read["resources"]]


EXPECTED = ["skill://acme/billing/refunds/SKILL.md", "skill://pdf-processing/SKILL.md"]


@pytest.mark.spec(f"{SEP}#integrity-and-verification")
@pytest.mark.parametrize("mode", MODES)
async def test_a_host_lists_fetches_and_verifies_every_skill_over_http(skills_http: UvicornProcess,
                                                                       mode: str) -> None:
    async with connect(skills_http, mode) as client:
        extensions = client.server_capabilities.extensions or {}
        assert extensions["io.modelcontextprotocol/skills"] == {"directoryRead": True}
        assert await load_every_skill(client) == EXPECTED
        assert await browse(client, "skill://pdf-processing/templates") == [
            ("skill://pdf-processing/templates/invoice.md", "text/markdown"),
            ("skill://pdf-processing/templates/regional", "inode/directory")]
        listed = [r.uri for r in (await client.list_resources()).resources]
    assert listed == EXPECTED


@pytest.mark.spec(f"{SEP}#retrieval-via-skillsget")
@pytest.mark.parametrize("mode", MODES)
async def test_a_host_over_stdio_loads_skills_and_an_unknown_one_is_invalid_params(mode: str) -> None:
    async with over_stdio("examples/skills/server.py", mode) as client:
        assert await load_every_skill(client) == EXPECTED
        assert ("skill://acme/billing", "inode/directory") in await browse(client, "skill://acme")
        with pytest.raises(MCPError) as raised:
            await ask(client, SkillsGet(params={"uri": "skill://nope/SKILL.md"}))
    assert raised.value.code == -32602


@pytest.mark.spec(f"{APPS}#resource-discovery")
@pytest.mark.parametrize("mode", MODES)
async def test_a_host_finds_the_view_of_a_tool_reads_it_and_the_view_calls_its_app_only_tool(
        counter_http: UvicornProcess, mode: str) -> None:
    host = [advertise(UI, {"mimeTypes": ["text/html;profile=mcp-app"]})]
    async with connect(counter_http, mode, extensions=host) as client:
        assert (client.server_capabilities.extensions or {})[UI] == {}
        tools = {t.name: t for t in (await client.list_tools()).tools}
        view = (tools["show_counter"].meta or {})["ui"]["resourceUri"]
        assert (tools["increment"].meta or {})["ui"]["visibility"] == ["app"]
        (page,) = (await client.read_resource(view)).contents
        assert isinstance(page, TextResourceContents)
        assert page.mime_type == "text/html;profile=mcp-app"
        assert page.text == (ROOT / "examples" / "apps" / "counter.html").read_text()
        assert (page.meta or {})["ui"] == {"prefersBorder": True}
        before = (await client.call_tool("show_counter", {})).structured_content
        after = (await client.call_tool("increment", {"by": 2})).structured_content
    assert before is not None
    assert after == {"count": before["count"] + 2}


@pytest.mark.parametrize("mode", MODES)
async def test_the_counter_example_serves_its_view_over_stdio(mode: str) -> None:
    async with over_stdio("examples/apps/server.py", mode) as client:
        (page,) = (await client.read_resource("ui://counter/view.html")).contents
        shown = await client.call_tool("show_counter", {})
    assert isinstance(page, TextResourceContents)
    assert page.text.startswith("<!DOCTYPE html>")
    assert shown.structured_content == {"count": 0}
