"""A remote child mounted in a gateway: the upstream's tools served under the gateway's prefix while the gateway
serves, called through with the upstream's answers; the upstream a second wiremcp process over HTTP
(``uvicorn app:asgi``) or launched on stdio (``wiremcp stdio``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from examples.everything import server as everything
from tests.support.http import UvicornProcess, run_uvicorn
from wiremcp import MCPError, MCPServer
from wiremcp.transports import Client
from wiremcp.transports.remote import _forwarded, remote

pytestmark = pytest.mark.timeout(60)

STDIO = [sys.executable, "-m", "wiremcp", "stdio", "examples/word_count.py"]


@pytest.fixture(scope="module")
def word_count() -> Iterator[UvicornProcess]:
    with run_uvicorn("examples.word_count:server") as process:
        yield process


def gateway(child: MCPServer) -> MCPServer:
    server = MCPServer("gateway")
    server.mount(child, prefix="wc")
    return server


@pytest.mark.parametrize("over", ["http", "stdio"])
async def test_the_upstreams_tools_are_served_under_the_prefix_and_called_through(
        over: str, word_count: UvicornProcess) -> None:
    child = remote(word_count.url) if over == "http" else remote(command=STDIO)
    served = gateway(child)
    assert served.tools == {}  # nothing before the gateway serves: the child connects then
    async with Client(served) as client:
        (tool,) = await client.list_tools()
        answer = await client.call_tool("wc_word_count", {"text": "read the wire"})
        invalid = await client.call_tool("wc_word_count", {"words": 3})
    assert tool["name"] == "wc_word_count"
    assert tool["description"] == "Count the words and characters in a text."
    assert tool["inputSchema"]["required"] == ["text"]
    assert tool["outputSchema"]["required"] == ["words", "chars"]
    assert tool["annotations"]["readOnlyHint"] is True
    assert answer == {"content": [{"type": "text", "text": '{"words":3,"chars":13}'}],
                      "structuredContent": {"words": 3, "chars": 13}}
    assert invalid["isError"] is True  # refused by the gateway against the upstream's own schema
    assert served.tools == {}  # withdrawn when the gateway stopped


async def test_the_upstreams_json_rpc_error_is_the_callers(word_count: UvicornProcess) -> None:
    """A tool the upstream does not (or no longer) have: its JSON-RPC error reaches the caller as it was sent."""
    child = remote(word_count.url)
    async with Client(gateway(child)) as client:
        child.add_tool(_forwarded(child.lifespan_state, {"name": "gone", "inputSchema": {"type": "object"}}))
        with pytest.raises(MCPError) as refused:
            await client.call_tool("wc_gone", {})
    assert refused.value.code == -32602
    assert "gone" in refused.value.message


async def test_the_upstreams_resources_are_listed_under_the_prefix_and_read_through() -> None:
    child = remote(command=[sys.executable, "-m", "wiremcp", "stdio", "examples/everything.py"])
    served = MCPServer("gateway")
    served.mount(child, prefix="ev")
    async with Client(served) as client:
        listed = {resource["uri"]: resource for resource in await client.list_resources()}
        text = await client.read_resource("test://ev/static-text")
        binary = await client.read_resource("test://ev/static-binary")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("test://ev/nothing-here")
    assert listed["test://ev/static-text"]["mimeType"] == "text/plain"
    assert listed["test://ev/static-binary"]["mimeType"] == "image/png"
    # as a local mount reads them: at the gateway's URI
    assert text["contents"] == [{"uri": "test://ev/static-text", "mimeType": "text/plain",
                                 "text": "This is the content of the static text resource."}]
    assert binary["contents"][0]["uri"] == "test://ev/static-binary"
    assert binary["contents"][0]["mimeType"] == "image/png"
    async with Client(everything) as client:  # the same bytes as the upstream's own
        assert (await client.read_resource("test://static-binary"))["contents"][0]["blob"] == binary["contents"][0]["blob"]
    assert unknown.value.code == -32002
    assert served.resources.static == {}  # withdrawn when the gateway stopped


def test_remote_takes_a_url_or_a_command() -> None:
    with pytest.raises(ValueError, match="a url or a command: one of them"):
        remote()
    with pytest.raises(ValueError, match="a url or a command: one of them"):
        remote("http://127.0.0.1:1/mcp", command=["x"])
    with pytest.raises(ValueError, match="needs the command to run"):
        remote(command=[])
