"""A remote child mounted in a gateway: the upstream's tools, resources, templates, prompts and completions served
under the gateway's prefix while the gateway serves, called through with the upstream's answers, its lists
followed live; the upstream a second wiremcp process over HTTP (``uvicorn app:asgi``) or launched on stdio
(``wiremcp stdio``). What the link to it does (relays, reconnection, failures): ``test_upstream_link.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from examples.everything import server as everything
from tests.support.gateways import ERAS, gateway, upstream
from tests.support.http import UvicornProcess, run_uvicorn
from wiremcp import MCPError, MCPServer
from wiremcp.errors import DefinitionError
from wiremcp.transports import Client
from wiremcp.transports.gateway import remote

pytestmark = pytest.mark.timeout(60)

STDIO = [sys.executable, "-m", "wiremcp", "stdio", "examples/word_count.py"]


@pytest.fixture(scope="module")
def word_count() -> Iterator[UvicornProcess]:
    with run_uvicorn("examples.word_count:server") as process:
        yield process


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
        assert await client.list_tools()
        with pytest.raises(MCPError) as refused:
            await child.lifespan_state.call("tools/call", {"name": "gone", "arguments": {}})
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
    with pytest.raises(TypeError, match="as a list of its words"):
        remote(command="npx -y server")


async def test_a_command_that_cannot_be_run_stops_the_gateway_starting_with_one_line() -> None:
    child = remote(command=["no-such-command"], name="no-such-server")
    with pytest.raises(DefinitionError) as failed:
        async with Client(gateway(child)):
            pass
    site, _, said = str(failed.value).partition(": ")
    assert site.startswith(f"{__file__}:")  # where the remote child is made
    assert said == "remote no-such-server: cannot run no-such-command: No such file or directory"


async def test_upstreams_whose_names_clash_stop_the_gateway_starting_with_one_line() -> None:
    """Two children mounted at the top whose upstreams both serve ``word_count``: the second one's catalog is
    refused as a local mount's would be, and the gateway does not start."""
    served = MCPServer("gateway")
    served.mount(remote(command=STDIO, name="first"))
    served.mount(remote(command=STDIO, name="second"))
    with pytest.raises(DefinitionError, match="already serves tool word_count"):
        async with Client(served):
            pass


def test_a_url_that_is_not_http_is_refused_where_it_is_written() -> None:
    with pytest.raises(DefinitionError, match=r"remote\('example.com/mcp'\): the URL must start with http:// or "):
        remote("example.com/mcp")


async def test_templates_prompts_and_completions_are_the_upstreams() -> None:
    child = remote(command=[sys.executable, "-m", "wiremcp", "stdio", "examples/everything.py"])
    served = MCPServer("gateway")
    served.mount(child, prefix="ev")
    async with Client(served) as client:
        (template,) = await client.list_resource_templates()
        read = await client.read_resource("test://ev/template/7/data")
        prompts = {prompt["name"]: prompt for prompt in await client.list_prompts()}
        got = await client.get_prompt("ev_test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        completed = await client.complete({"type": "ref/prompt", "name": "ev_test_prompt_with_arguments"}, "arg1", "t")
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("ev_test_prompt_with_arguments", {"arg2": "b"})
    async with Client(everything) as direct:
        own_read = await direct.read_resource("test://template/7/data")
        own_prompt = (await direct.list_prompts())
        own_got = await direct.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        own_completed = await direct.complete({"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "arg1", "t")
    assert template["uriTemplate"] == "test://ev/template/{id}/data"
    assert read["contents"] == [{**own_read["contents"][0], "uri": "test://ev/template/7/data"}]
    assert prompts["ev_test_prompt_with_arguments"]["arguments"] == next(
        p["arguments"] for p in own_prompt if p["name"] == "test_prompt_with_arguments")
    assert got == own_got
    assert completed == own_completed
    assert completed["completion"]["values"]
    assert missing.value.code == -32602  # the gateway checks the upstream's own required arguments


@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_the_upstreams_list_changes_reach_the_gateways_clients(over: str, protocol: str,
                                                                    http_server: UvicornProcess) -> None:
    name = f"added_{over}_{protocol.replace('-', '_')}"
    async with Client(gateway(upstream(over, http_server, protocol))) as client:
        before = len(client.notifications)
        await client.call_tool("wc_add_tool", {"name": name})
        while f"wc_{name}" not in {tool["name"] for tool in await client.list_tools()}:
            await client.wait_for_notification("notifications/tools/list_changed",
                                               count=1 + sum(n["method"] == "notifications/tools/list_changed"
                                                             for n in client.notifications[:before]))
            before = len(client.notifications)
        assert (await client.call_tool(f"wc_{name}"))["content"][0]["text"] == "added at runtime"
