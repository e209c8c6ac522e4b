"""Composition with real parts: a parent server whose fixtures all come from mounted children
(``tests/support/mounted_server.py``: ``examples/everything.py`` at the top, a weather server under
``weather``), as the official MCP Python SDK client sees it over Streamable HTTP (a real uvicorn) and over
stdio (``wiremcp stdio``), in both eras. The conformance suite runs against the same parent in
``test_conformance.py``."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextResourceContents

from tests.support.http import UvicornProcess, run_uvicorn
from tests.support.official_client import WAIT, connect, only_text

ROOT = Path(__file__).resolve().parents[2]
MOUNTED = "tests.support.mounted_server:server"
MODES = ["auto", "legacy"]

pytestmark = [pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
              pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def mounted_http() -> Iterator[UvicornProcess]:
    with run_uvicorn(MOUNTED) as server:
        yield server


@asynccontextmanager
async def over_stdio(mode: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "wiremcp", "stdio", MOUNTED], cwd=ROOT)
    async with Client(stdio_client(params), mode=mode, read_timeout_seconds=WAIT) as client:
        yield client


async def sees_the_prefixed_names(client: Client) -> None:
    names = [tool.name for tool in (await client.list_tools()).tools]
    assert "weather_forecast" in names
    assert "forecast" not in names
    assert "test_simple_text" in names  # the child mounted at the top keeps its names
    result = await client.call_tool("weather_forecast", {"city": "Oslo"})
    assert only_text(result.content) == "Sunny in Oslo"
    templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
    assert "weather://weather/cities/{city}" in templates
    read = await client.read_resource("weather://weather/cities/Oslo")
    (contents,) = read.contents
    assert isinstance(contents, TextResourceContents)
    assert (str(contents.uri), contents.text) == ("weather://weather/cities/Oslo", "Oslo: temperate")


@pytest.mark.parametrize("mode", MODES)
async def test_the_official_client_over_http_sees_and_uses_the_prefixed_names(mounted_http: UvicornProcess,
                                                                              mode: str) -> None:
    async with connect(mounted_http, mode) as client:
        await sees_the_prefixed_names(client)


@pytest.mark.parametrize("mode", MODES)
async def test_the_official_client_over_stdio_sees_and_uses_the_prefixed_names(mode: str) -> None:
    async with over_stdio(mode) as client:
        await sees_the_prefixed_names(client)


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_the_child_adds_while_served_is_served_by_the_parent(mode: str) -> None:
    async with over_stdio(mode) as client:
        before = [tool.name for tool in (await client.list_tools()).tools]
        assert "weather_alerts" not in before
        assert only_text((await client.call_tool("weather_grow", {})).content) == "added"
        after = [tool.name for tool in (await client.list_tools()).tools]
        assert after == [*before, "weather_alerts"]
        result = await client.call_tool("weather_alerts", {"city": "Oslo"})
        assert only_text(result.content) == "No alerts for Oslo"
