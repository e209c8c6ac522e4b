"""Middleware with real parts: ``tests/support/middleware_server.py`` under a real uvicorn (both eras on the
one endpoint) and over stdio (``wiremcp stdio``, both eras): the order two middleware run in, a refusal, a
change of the arguments and of the result, a notification, a 2025-03-26 batch, a 2025-11-25 task and a
stateless-era call that asks for input and is retried."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.http import UvicornProcess, initialize, request_body, run_uvicorn
from tests.support.middleware_server import REFUSED
from tests.support.stateless_http import meta, post, tool
from tests.support.stdio import Spawn, StdioProcess, spawn  # noqa: F401 - spawn: the fixture of the stdio tests

SERVER = "tests.support.middleware_server:server"
AROUND_ECHO = ["outer> tools/call|echo|{flags}", "inner> tools/call", "inner< tools/call", "outer< tools/call"]

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def served() -> Iterator[UvicornProcess]:
    with run_uvicorn(SERVER) as server:
        yield server


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


# -- over HTTP ------------------------------------------------------------------------------------------------
async def stateless(http: httpx.AsyncClient, url: str, name: str, arguments: dict[str, Any] | None = None,
                    **params: Any) -> httpx.Response:
    call = tool(name, arguments or {})
    assert call.params is not None
    call.params.update(params)
    return await post(http, url, call)


async def seen_stateless(http: httpx.AsyncClient, url: str) -> list[str]:
    response = await stateless(http, url, "seen")
    return list(json.loads(text(response.json()["result"])))


async def test_stateless_era_over_http_order_change_and_refusal(served: UvicornProcess) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        await seen_stateless(http, served.url)
        shouted = await stateless(http, served.url, "echo", {"text": "hi"})
        assert (shouted.status_code, text(shouted.json()["result"])) == (200, "HI!")
        assert await seen_stateless(http, served.url) == [line.format(flags="s") for line in AROUND_ECHO]
        refused = await stateless(http, served.url, "forbidden")
        assert refused.status_code == 200  # an error the spec gives no status of its own
        assert refused.json()["error"] == {"code": REFUSED, "message": "Refused by middleware",
                                           "data": {"tool": "forbidden"}}
        # the refusal passes through the outer middleware as the exception it is: no "outer<"
        assert await seen_stateless(http, served.url) == ["outer> tools/call|forbidden|s", "inner> tools/call"]


async def test_stateless_era_a_call_that_asks_for_input_and_its_retry_each_go_through(
        served: UvicornProcess) -> None:
    caps: dict[str, Any] = {"elicitation": {"form": {}}}
    async with httpx.AsyncClient(timeout=10) as http:
        await seen_stateless(http, served.url)
        first = (await stateless(http, served.url, "ask", _meta=meta(capabilities=caps))).json()["result"]
        assert first["resultType"] == "input_required"
        (key,) = first["inputRequests"]
        retry = {"inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}}}
        if "requestState" in first:
            retry["requestState"] = first["requestState"]
        second = await stateless(http, served.url, "ask", _meta=meta(capabilities=caps), **retry)
        assert text(second.json()["result"]) == "hello Ada"
        assert await seen_stateless(http, served.url) == [
            "outer> tools/call|ask|s", "inner> tools/call", "inner< tools/call", "outer< tools/call",
            "outer> tools/call|ask|rs", "inner> tools/call", "inner< tools/call", "outer< tools/call"]


async def test_handshake_era_over_http_notification_batch_and_task(served: UvicornProcess) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        session = await initialize(http, served.url, "2025-11-25", initialized=False)
        assert (await session.notify("notifications/initialized")).status_code == 202
        assert text(await session.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}})) == "HI!"
        task = await session.call("tools/call", {"name": "slow", "arguments": {"text": "x"}, "task": {"ttl": 60000}})
        assert "task" in task
        assert json.loads(await session.tool("seen")) == [
            "outer> initialize||", "inner> initialize", "inner< initialize", "outer< initialize",
            "outer> notifications/initialized||n", "inner> notifications/initialized",
            "inner< notifications/initialized", "outer< notifications/initialized",
            *(line.format(flags="") for line in AROUND_ECHO),
            "outer> tools/call|slow|t", "inner> tools/call", "inner< tools/call", "outer< tools/call"]
        old = await initialize(http, served.url, "2025-03-26")
        await old.tool("seen")
        batch = [request_body(7, "tools/call", {"name": "echo", "arguments": {"text": "a"}}),
                 {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                 request_body(8, "tools/call", {"name": "forbidden", "arguments": {}})]
        answered = {a["id"]: a for a in (await old.post(batch)).json()}
        assert text(answered[7]["result"]) == "A!"
        assert answered[8]["error"]["code"] == REFUSED
        lines = json.loads(await old.tool("seen"))
        assert sorted(line for line in lines if line.startswith("outer>")) == [
            "outer> notifications/roots/list_changed||bn", "outer> tools/call|echo|b", "outer> tools/call|forbidden|b"]


# -- over stdio -----------------------------------------------------------------------------------------------
async def stdio_call(process: StdioProcess, rid: int, name: str, arguments: dict[str, Any],
                     **extra: Any) -> dict[str, Any]:
    await process.request(rid, "tools/call", {"name": name, "arguments": arguments, **extra})
    return await process.response(rid)


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_over_stdio_order_change_and_refusal(era: str,
                                                   spawn: Spawn) -> None:  # noqa: F811 - the fixture
    process = await spawn(SERVER)
    extra: dict[str, Any] = {"_meta": meta()} if era == "stateless" else {}
    if era == "handshake":
        await process.initialize()
    await stdio_call(process, 1, "seen", {}, **extra)
    assert text((await stdio_call(process, 2, "echo", {"text": "hi"}, **extra))["result"]) == "HI!"
    refused = await stdio_call(process, 3, "forbidden", {}, **extra)
    assert refused["error"]["code"] == REFUSED
    lines = json.loads(text((await stdio_call(process, 4, "seen", {}, **extra))["result"]))
    flags = "s" if era == "stateless" else ""
    assert lines == [*(line.format(flags=flags) for line in AROUND_ECHO),
                     f"outer> tools/call|forbidden|{flags}", "inner> tools/call"]
    await process.close_stdin()
    assert await process.wait_exit() == 0
