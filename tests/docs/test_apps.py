"""``docs/apps.md``, run: the weather server with its ``view.html`` saved beside it, through the in-memory client
in both eras, for a host with apps and one without; an origin that is not one, and a view that is not served,
refused as the page says."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, block, exec_as_file
from wiremcp import DefinitionError, MCPServer
from wiremcp.transports import Client
from wiremcp.types import JSONObject

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "apps.md"
CHECKED = {"apps", "view"}
ERAS = ["2025-11-25", "2026-07-28"]
HOST: JSONObject = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}


def served(tmp_path: Path) -> MCPServer:
    (tmp_path / "view.html").write_text(block(PAGE, "view").text)
    server: MCPServer = exec_as_file(PAGE, "apps", tmp_path / "server.py")["server"]
    server.check()
    return server


@pytest.mark.parametrize("era", ERAS)
async def test_the_apps_example_names_its_view_and_serves_it(era: str, tmp_path: Path) -> None:
    server = served(tmp_path)
    async with Client(server, protocol_version=era, capabilities=HOST) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        (listed,) = await client.list_resources()
        view = await client.read_resource("ui://weather/view.html")
        shown = await client.call_tool("forecast", {"city": "Oslo"})
        refreshed = await client.call_tool("refresh", {"city": "Oslo"})
        capabilities = client.initialize_result["capabilities"] if client.initialize_result else (
            await client.request("server/discover", {}))["capabilities"]
    assert tools["forecast"]["_meta"] == {"ui": {"resourceUri": "ui://weather/view.html"},
                                          "ui/resourceUri": "ui://weather/view.html"}
    assert tools["refresh"]["_meta"]["ui"]["visibility"] == ["app"]
    ui = {"csp": {"connectDomains": ["https://api.weather.example"]}, "prefersBorder": True}
    assert listed["_meta"]["ui"] == ui
    assert view["contents"][0]["mimeType"] == "text/html;profile=mcp-app"
    assert view["contents"][0]["_meta"]["ui"] == ui
    assert view["contents"][0]["text"] == block(PAGE, "view").text
    assert shown["structuredContent"] == {"city": "Oslo", "high": 21.5, "summary": "sunny"}
    assert refreshed["structuredContent"] == {"city": "Oslo", "high": 21.0}
    assert capabilities["extensions"]["io.modelcontextprotocol/ui"] == {}


@pytest.mark.parametrize("era", ERAS)
async def test_a_host_without_apps_gets_the_text(era: str, tmp_path: Path) -> None:
    server = served(tmp_path)
    async with Client(server, protocol_version=era) as client:
        shown = await client.call_tool("forecast", {"city": "Oslo"})
    assert "sunny, 21.5 °C" in shown["content"][0]["text"]


async def test_the_view_file_is_read_again_on_every_read(tmp_path: Path) -> None:
    server = served(tmp_path)
    async with Client(server, capabilities=HOST) as client:
        (tmp_path / "view.html").write_text("<!DOCTYPE html><p>edited</p>")
        view = await client.read_resource("ui://weather/view.html")
    assert view["contents"][0]["text"] == "<!DOCTYPE html><p>edited</p>"


def test_an_origin_that_could_add_a_directive_is_refused_where_it_is_written() -> None:
    server = MCPServer("weather")
    with pytest.raises(DefinitionError) as refused:
        server.app("ui://weather/view.html", "<p>x</p>", connect_domains=["https://api.example; script-src *"])
    assert "connectDomains: 'https://api.example; script-src *' is not an origin" in str(refused.value)
    assert str(refused.value).startswith(f"{__file__}:")


def test_a_tool_whose_view_is_not_served_is_one_line_naming_it() -> None:
    server = MCPServer("weather")

    @server.tool(ui="ui://weather/view.html")
    def forecast(city: str) -> str:
        return city

    with pytest.raises(DefinitionError) as refused:
        server.check()
    said = str(refused.value)
    assert said == ("tool forecast: its view ui://weather/view.html is not a resource of this server "
                    "(register it with server.app)")
    assert f"`{said}`" in " ".join(PAGE.read_text().split())
