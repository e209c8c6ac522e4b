"""``wiremcp.apps``: MCP Apps (SEP-1865, ``io.modelcontextprotocol/ui``) on the server side: a tool's view in its
``_meta.ui``, the ``ui://`` HTML resource with its CSP origins and permissions, the extension declared, what is
refused as it is registered, and ``ctx.supports_apps``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wiremcp import Context, MCPServer
from wiremcp.apps import EXTENSION, MIME_TYPE, supports_apps
from wiremcp.errors import DefinitionError
from wiremcp.transports.memory import Client

APPS = "ext-apps/2026-01-26/apps"
ERAS = ["2025-11-25", "2026-07-28"]
HOST = {"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}
PAGE = "<!DOCTYPE html><html><body><p id=t></p></body></html>"


def clock(**app: Any) -> MCPServer:
    server = MCPServer("clock")
    server.app("ui://clock/view.html", PAGE, name="clock view", description="Shows the time", **app)

    @server.tool(ui="ui://clock/view.html")
    def now(ctx: Context) -> str:
        """The time."""
        return "12:00 (view)" if ctx.supports_apps else "12:00"

    @server.tool(ui="ui://clock/view.html", visibility=["app"])
    def tick() -> str:
        return "tick"

    return server


@pytest.mark.spec(f"{APPS}#resource-discovery")
@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_names_its_view_in_meta_ui(era: str) -> None:
    async with Client(clock(), protocol_version=era) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
    assert tools["now"]["_meta"] == {"ui": {"resourceUri": "ui://clock/view.html"},
                                     "ui/resourceUri": "ui://clock/view.html"}
    assert tools["tick"]["_meta"]["ui"] == {"resourceUri": "ui://clock/view.html", "visibility": ["app"]}


@pytest.mark.spec(f"{APPS}#ui-resource-format")
@pytest.mark.parametrize("era", ERAS)
async def test_the_view_is_html_with_the_app_profile_and_its_meta_on_every_read(era: str) -> None:
    server = clock(connect_domains=["https://api.example.com"], resource_domains=["https://*.cdn.example.com"],
                   permissions=["clipboardWrite"], prefers_border=True)
    ui = {"csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://*.cdn.example.com"]},
          "permissions": {"clipboardWrite": {}}, "prefersBorder": True}
    async with Client(server, protocol_version=era) as client:
        listed = await client.list_resources()
        read = await client.read_resource("ui://clock/view.html")
    assert listed == [{"uri": "ui://clock/view.html", "name": "clock view", "description": "Shows the time",
                       "_meta": {"ui": ui}, "mimeType": MIME_TYPE}]
    assert read["contents"] == [{"uri": "ui://clock/view.html", "mimeType": MIME_TYPE, "text": PAGE,
                                 "_meta": {"ui": ui}}]


async def test_a_view_from_a_file_is_served_as_the_file_is_now(tmp_path: Path) -> None:
    page = tmp_path / "view.html"
    page.write_text("<p>one</p>")
    server = MCPServer("files")
    server.app("ui://files/view", file=page)
    async with Client(server) as client:
        first = await client.read_resource("ui://files/view")
        page.write_text("<p>two</p>")
        second = await client.read_resource("ui://files/view")
    assert [first["contents"][0]["text"], second["contents"][0]["text"]] == ["<p>one</p>", "<p>two</p>"]
    assert "_meta" not in first["contents"][0]


@pytest.mark.spec(f"{APPS}#clientserver-capability-negotiation")
@pytest.mark.parametrize("era", ERAS)
async def test_the_extension_is_declared_and_the_tool_knows_whether_the_client_renders_views(era: str) -> None:
    server = clock()
    async with Client(server, protocol_version=era, capabilities=HOST) as host:
        caps = host.initialize_result["capabilities"] if host.initialize_result else (
            await host.request("server/discover"))["capabilities"]
        shown = await host.call_tool("now")
    async with Client(server, protocol_version=era) as plain:
        text_only = await plain.call_tool("now")
    assert caps["extensions"][EXTENSION] == {}
    assert shown["content"][0]["text"] == "12:00 (view)"
    assert text_only["content"][0]["text"] == "12:00"


def test_a_server_without_views_does_not_declare_the_extension() -> None:
    server = MCPServer("plain")

    @server.tool()
    def ping() -> str:
        return "pong"

    assert "extensions" not in server.capabilities()


def test_a_view_alone_declares_the_extension() -> None:
    server = MCPServer("views")
    server.app("ui://v", PAGE)
    assert server.capabilities()["extensions"] == {EXTENSION: {}}


@pytest.mark.parametrize(("options", "says"), [
    ({"connect_domains": ["https://ok.example.com; script-src *"]}, "connectDomains: 'https://ok.example.com; script"),
    ({"resource_domains": ["cdn.example.com"]}, "is not an origin"),
    ({"frame_domains": ["javascript://x"]}, "is not an origin"),
    ({"base_uri_domains": ["https://a b"]}, "is not an origin"),
    ({"permissions": ["usb"]}, "'usb' is not one of camera"),
    ({"domain": "x.example.com/path"}, "is not a host name"),
    # the whole value is checked, not a prefix of it: a line break after a good origin is refused too
    ({"connect_domains": ["https://a.example\n"]}, "connectDomains: 'https://a.example\\n' is not an origin"),
    ({"resource_domains": ["https://a.example\n"]}, "resourceDomains: 'https://a.example\\n' is not an origin"),
    ({"frame_domains": ["https://a.example\n"]}, "frameDomains: 'https://a.example\\n' is not an origin"),
    ({"base_uri_domains": ["https://a.example\n"]}, "baseUriDomains: 'https://a.example\\n' is not an origin"),
    ({"connect_domains": ["https://a.example\nhttps://b.example"]}, "is not an origin"),
    ({"domain": "a.example\n"}, "domain: 'a.example\\n' is not a host name"),
])
def test_what_could_loosen_a_hosts_policy_is_refused_where_it_is_written(options: dict[str, Any], says: str) -> None:
    with pytest.raises(DefinitionError, match=r"test_apps.py:\d+: app ui://v: ") as raised:
        MCPServer("bad").app("ui://v", PAGE, **options)
    assert says in str(raised.value)


def test_a_view_needs_a_ui_uri_and_one_source_of_html(tmp_path: Path) -> None:
    server = MCPServer("bad")
    with pytest.raises(DefinitionError, match="must be a ui:// URI"):
        server.app("https://x/view", PAGE)
    with pytest.raises(DefinitionError, match="html= or file=, one of them"):
        server.app("ui://v")
    with pytest.raises(DefinitionError, match="html= or file=, one of them"):
        server.app("ui://v", PAGE, file=tmp_path / "x.html")
    with pytest.raises(DefinitionError, match="no such file"):
        server.app("ui://v", file=tmp_path / "missing.html")


def test_a_tool_s_view_and_visibility_are_checked_as_it_is_registered() -> None:
    server = MCPServer("bad")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"ui": "https://x"}, "must be a ui:// URI"), ({"ui": "ui://v", "visibility": ["user"]}, "visibility"),
        ({"ui": "ui://v", "visibility": []}, "visibility"), ({"visibility": ["app"]}, "is for a tool with a view"),
        ({"ui": "ui://v", "meta": {"ui": {}}}, "not in meta")]
    for options, says in cases:
        with pytest.raises(DefinitionError, match=says):
            server.tool(**options)(lambda: "x")


def test_check_finds_a_tool_whose_view_is_not_served() -> None:
    server = MCPServer("bad")

    @server.tool(ui="ui://missing")
    def show() -> str:
        return "x"

    with pytest.raises(DefinitionError, match="tool show: its view ui://missing is not a resource of this server"):
        server.check()
    server.app("ui://missing", PAGE)
    server.check()


@pytest.mark.parametrize(("capabilities", "expected"), [
    (HOST, True), ({}, False), ({"extensions": {EXTENSION: {}}}, False),
    ({"extensions": {EXTENSION: {"mimeTypes": ["text/html"]}}}, False), ({"extensions": []}, False)])
def test_supports_apps_needs_the_html_profile_declared(capabilities: dict[str, Any], expected: bool) -> None:
    assert supports_apps(capabilities) is expected
