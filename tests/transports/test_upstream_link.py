"""The link from a gateway to one upstream: what the upstream sends about a call reaches its caller (progress, log
messages, requests for input in the caller's era), a caller's cancellation reaches the upstream, and failures are
met (a launched upstream that dies is started again, a forgotten session made again, calls meanwhile answered 503
to be retried, an upstream down at start reported down). The upstream is ``tests/support/http_fixture_server.py``
over HTTP (``uvicorn app:asgi``) or launched on stdio, in both eras."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

import httpx
import pytest

from tests.support.docs_pages import STATELESS_META
from tests.support.gateways import BOUND, ERAS, FIXTURE_STDIO, gateway, upstream
from tests.support.http import UvicornProcess, initialize, request_body, serve_in_process
from wiremcp import MCPError, MCPServer
from wiremcp.refusals import UPSTREAM_UNAVAILABLE
from wiremcp.transports import Client, MCPHttpApp
from wiremcp.transports.gateway import readiness_details, remote
from wiremcp.types import JSONObject

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_progress_and_log_messages_of_a_call_reach_its_caller(over: str, protocol: str,
                                                                   http_server: UvicornProcess) -> None:
    async with Client(gateway(upstream(over, http_server, protocol)), log_level="debug") as client:
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
        over: str, protocol: str, caller: str, http_server: UvicornProcess) -> None:
    asked: list[JSONObject] = []

    async def answer(params: JSONObject) -> JSONObject:
        asked.append(params)
        return {"action": "accept", "content": {"answer": "blue"}}

    async with Client(gateway(upstream(over, http_server, protocol)), protocol_version=caller,
                      capabilities={"elicitation": {"form": {}}}, elicitation=answer) as client:
        result = await client.call_tool("wc_ask", {"question": "Which colour?"})
    assert result["content"][0]["text"] == "accept: blue"
    assert [params["message"] for params in asked] == ["Which colour?"]


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
                                                              http_server: UvicornProcess) -> None:
    served = gateway(upstream(over, http_server, protocol))
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
async def test_a_session_the_upstream_forgets_is_made_again(http_server: UvicornProcess) -> None:
    """A handshake-era upstream that no longer knows the gateway's session (it restarted; here, the session is
    deleted behind the gateway's back) answers 404: the gateway makes a new session and sends the call again."""
    child = remote(http_server.url, protocol="2025-11-25")
    async with Client(gateway(child)) as client, httpx.AsyncClient(timeout=BOUND) as http:
        link = child.lifespan_state
        first = link.client.channel.session
        deleted = await http.delete(http_server.url, headers={"Mcp-Session-Id": first,
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


@pytest.mark.spec("2025-11-25/server/resources#subscriptions")
@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_a_subscription_to_an_upstream_resource_hears_its_updates(over: str, protocol: str,
                                                                        http_server: UvicornProcess) -> None:
    """The caller subscribes to the gateway's URI; the gateway subscribes upstream (once, in the upstream's era),
    and the upstream's ``resources/updated`` reaches the caller at the gateway's URI."""
    key = f"{over}-{protocol}"
    watched = f"fixture://wc/watched/{key}"
    async with Client(gateway(upstream(over, http_server, protocol))) as client:
        await client.subscribe(watched)
        # The upstream's own session is told: a touch until the update arrives (the upstream subscription is
        # made in the background, and an update before it is not the caller's to hear).
        while not any(n["method"] == "notifications/resources/updated" for n in client.notifications):
            await client.call_tool("wc_touch", {"uri": f"fixture://watched/{key}"})
            updates = len(client.notifications)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    await client.wait_for_notification("notifications/resources/updated")
            assert len(client.notifications) >= updates
        (update,) = {n["params"]["uri"] for n in client.notifications
                     if n["method"] == "notifications/resources/updated"}
    assert update == watched


async def test_the_resources_watched_upstream_are_bounded(monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """A template's URIs are the callers' to name: past ``MAX_WATCHED`` subscriptions, updates of more are not
    followed upstream (the set of watched URIs does not grow without end)."""
    from wiremcp.transports import upstream_link

    monkeypatch.setattr(upstream_link, "MAX_WATCHED", 3)

    async def nothing(client: object) -> None:
        return None

    link = upstream_link.UpstreamLink("away", "http://127.0.0.1:9/mcp", protocol="auto", headers=None, timeout=1.0,
                                      env=None, on_connect=nothing, on_notice=lambda message: None)
    for number in range(10):
        link.watch(f"items://{number}")
    assert link.watched == {"items://0", "items://1", "items://2"}
    said = [r.getMessage() for r in caplog.records if "resources watched already" in r.getMessage()]
    assert said == ["upstream away: 3 resources watched already; updates of more are not followed"]  # once
