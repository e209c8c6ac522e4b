"""A remote child mounted in a gateway: the upstream's tools, resources, templates, prompts and completions served
under the gateway's prefix while the gateway serves, called through with the upstream's answers, what the upstream
sends about a call relayed to its caller, its lists followed live; the upstream a second wiremcp process over HTTP
(``uvicorn app:asgi``) or launched on stdio (``wiremcp stdio``)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine, Iterator
from typing import Any

import httpx
import pytest

from examples.everything import server as everything
from tests.support.docs_pages import STATELESS_META
from tests.support.http import UvicornProcess, initialize, request_body, run_uvicorn, serve_in_process
from tests.support.http_fixture_server import FIXTURE_SERVER
from wiremcp import MCPError, MCPServer
from wiremcp.refusals import UPSTREAM_UNAVAILABLE
from wiremcp.transports import Client, MCPHttpApp
from wiremcp.transports.remote import readiness_details, remote
from wiremcp.transports.upstream import Failed
from wiremcp.types import JSONObject

pytestmark = pytest.mark.timeout(60)

BOUND = 10.0

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
    with pytest.raises(Failed) as failed:
        async with Client(gateway(remote(command=["no-such-command"], name="no-such-server"))):
            pass
    assert str(failed.value) == "remote no-such-server: cannot run no-such-command: No such file or directory"


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


@pytest.fixture(scope="module")
def fixture_http() -> Iterator[UvicornProcess]:
    with run_uvicorn(FIXTURE_SERVER) as process:
        yield process


FIXTURE_STDIO = [sys.executable, "-m", "wiremcp", "stdio", FIXTURE_SERVER]


def upstream(over: str, fixture_http: UvicornProcess, protocol: str = "auto") -> MCPServer:
    return remote(fixture_http.url, protocol=protocol) if over == "http" else remote(command=FIXTURE_STDIO,
                                                                                     protocol=protocol)


ERAS = [("http", "auto"), ("http", "2025-11-25"), ("stdio", "auto"), ("stdio", "2025-11-25")]
"""Where the upstream is and the era the gateway speaks to it (auto: the stateless era, which it offers)."""


@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_progress_and_log_messages_of_a_call_reach_its_caller(over: str, protocol: str,
                                                                   fixture_http: UvicornProcess) -> None:
    async with Client(gateway(upstream(over, fixture_http, protocol)), log_level="debug") as client:
        answer = await client.call_tool("wc_count_up", {"steps": 3}, progress_token="mine")
        chatty = await client.call_tool("wc_chatty", {"count": 2})
    assert answer["content"][0]["text"] == "counted to 3"
    progress = [n["params"] for n in client.notifications if n["method"] == "notifications/progress"]
    assert progress == [{"progressToken": "mine", "progress": step, "total": 3, "message": f"step {step}"}
                        for step in (1, 2, 3)]
    assert chatty["content"][0]["text"] == "sent 2"
    logged = [n["params"]["data"] for n in client.notifications if n["method"] == "notifications/message"]
    assert logged == ["message 0", "message 1"]


@pytest.mark.parametrize(("over", "protocol"), ERAS)
@pytest.mark.parametrize("caller", ["2025-11-25", "2026-07-28"])
async def test_the_upstreams_elicitation_is_asked_of_the_caller_in_the_callers_era(
        over: str, protocol: str, caller: str, fixture_http: UvicornProcess) -> None:
    asked: list[JSONObject] = []

    async def answer(params: JSONObject) -> JSONObject:
        asked.append(params)
        return {"action": "accept", "content": {"answer": "blue"}}

    async with Client(gateway(upstream(over, fixture_http, protocol)), protocol_version=caller,
                      capabilities={"elicitation": {"form": {}}}, elicitation=answer) as client:
        result = await client.call_tool("wc_ask", {"question": "Which colour?"})
    assert result["content"][0]["text"] == "accept: blue"
    assert [params["message"] for params in asked] == ["Which colour?"]


@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_the_upstreams_list_changes_reach_the_gateways_clients(over: str, protocol: str,
                                                                    fixture_http: UvicornProcess) -> None:
    name = f"added_{over}_{protocol.replace('-', '_')}"
    async with Client(gateway(upstream(over, fixture_http, protocol))) as client:
        before = len(client.notifications)
        await client.call_tool("wc_add_tool", {"name": name})
        while f"wc_{name}" not in {tool["name"] for tool in await client.list_tools()}:
            await client.wait_for_notification("notifications/tools/list_changed",
                                               count=1 + sum(n["method"] == "notifications/tools/list_changed"
                                                             for n in client.notifications[:before]))
            before = len(client.notifications)
        assert (await client.call_tool(f"wc_{name}"))["content"][0]["text"] == "added at runtime"


async def test_a_launched_upstream_that_dies_is_started_again_and_calls_meanwhile_are_retryable() -> None:
    child = remote(command=FIXTURE_STDIO)
    async with Client(gateway(child)) as client:
        link = child.lifespan_state
        first = link.client
        first.channel.process.kill()
        await first.channel.reader
        with pytest.raises(MCPError) as down:  # while it is down: at once, a 503 over HTTP
            await client.call_tool("wc_echo", {"text": "x"})
        async with link.changed:
            await link.changed.wait_for(lambda: link.connections == 2 and link.client is not None)
        assert (await client.call_tool("wc_echo", {"text": "again"}))["content"][0]["text"] == "again"
    assert down.value.code == -32603
    assert down.value.message == "Service Unavailable: an upstream server cannot be reached; try again shortly"
    assert link.connections == 2


@pytest.mark.spec("2025-11-25/basic/transports#sending-messages-to-the-server")
async def test_an_upstream_killed_mid_call_answers_the_caller_503_to_retry_and_is_served_again() -> None:
    """Over HTTP: the call in flight when the launched upstream dies is answered at once with 503 and
    ``Retry-After`` (not a hang), as is a call while it is down; once it is started again, calls are served."""
    child = remote(command=FIXTURE_STDIO)
    served = gateway(child)
    async with served.runtime.lifespans.held(), serve_in_process(MCPHttpApp(served)) as base, \
            httpx.AsyncClient(timeout=BOUND) as http:
        url = f"{base}/mcp"
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}

        def call(rid: int, name: str, arguments: JSONObject) -> Coroutine[Any, Any, httpx.Response]:
            body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                    "params": {"name": name, "arguments": arguments, "_meta": STATELESS_META}}
            return http.post(url, json=body, headers={**headers, "Mcp-Name": name})

        link = child.lifespan_state
        held = asyncio.create_task(call(1, "wc_until_cancelled", {"name": "killed"}))
        started = await call(3, "wc_until_cancelled_started", {"name": "killed"})  # it runs upstream
        assert started.json()["result"]["content"][0]["text"] == "killed: started"
        link.client.channel.process.kill()
        answer = await held
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        assert answer.json()["error"]["message"] == UPSTREAM_UNAVAILABLE.message
        async with link.changed:
            await link.changed.wait_for(lambda: link.connections == 2 and link.client is not None)
        again = await call(2, "wc_echo", {"text": "back"})
        assert again.status_code == 200
        assert again.json()["result"]["content"][0]["text"] == "back"


@pytest.mark.spec("2025-11-25/basic/utilities/cancellation")
@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_a_call_the_caller_cancels_is_cancelled_upstream(over: str, protocol: str,
                                                              fixture_http: UvicornProcess) -> None:
    served = gateway(upstream(over, fixture_http, protocol))
    name = f"cancelled-{over}-{protocol}"
    async with served.runtime.lifespans.held(), serve_in_process(MCPHttpApp(served)) as base, \
            httpx.AsyncClient(timeout=BOUND) as http:
        session = await initialize(http, f"{base}/mcp")
        waiting = asyncio.create_task(session.post(request_body(7, "tools/call", {
            "name": "wc_until_cancelled", "arguments": {"name": name}})))
        assert await session.tool("wc_until_cancelled_started", name=name) == f"{name}: started"
        assert (await session.notify("notifications/cancelled", {"requestId": 7})).status_code == 202
        assert await session.tool("wc_cancel_outcome", name=name) == f"{name}: CancelledError"
        waiting.cancel()


@pytest.mark.spec("2025-11-25/basic/transports#session-management")
async def test_a_session_the_upstream_forgets_is_made_again(fixture_http: UvicornProcess) -> None:
    """A handshake-era upstream that no longer knows the gateway's session (it restarted; here, the session is
    deleted behind the gateway's back) answers 404: the gateway makes a new session and sends the call again."""
    child = remote(fixture_http.url, protocol="2025-11-25")
    async with Client(gateway(child)) as client, httpx.AsyncClient(timeout=BOUND) as http:
        link = child.lifespan_state
        first = link.client.channel.session
        deleted = await http.delete(fixture_http.url, headers={"Mcp-Session-Id": first,
                                                                "MCP-Protocol-Version": "2025-11-25"})
        assert deleted.status_code == 200
        answer = await client.call_tool("wc_echo", {"text": "still here"})
        assert answer["content"][0]["text"] == "still here"
        assert link.client.channel.session not in (None, first)
        assert link.connections == 1  # the same link: a new session, not a reconnection


async def test_an_http_upstream_down_at_start_leaves_the_gateway_serving_and_is_reported_down() -> None:
    """The gateway starts all the same (its own tools and other upstreams are served); ``/readyz`` reports the
    upstream down with the kind of failure only, and the link keeps trying."""
    served = gateway(remote("http://127.0.0.1:9/mcp", name="away"))

    @served.tool
    def own() -> str:
        return "served"

    async with Client(served) as client:
        assert (await client.call_tool("own"))["content"][0]["text"] == "served"
        details = readiness_details(served)
        assert details is not None
        assert details["upstreams"]() == {"away": {"status": "down", "reason": "Failed", "connections": 0}}
    assert readiness_details(MCPServer("plain")) is None
