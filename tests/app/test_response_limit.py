"""``wiremcp.response_limit``: ``ResponseSizeLimit`` measures each result's JSON (``orjson.Fragment``
included) and, over the limit, answers a ``tools/call`` with a tool error and any other request with
-32603, in both eras; results within the limit, other methods and notifications pass untouched."""

from __future__ import annotations

import logging

import orjson
import pytest

from wiremcp import MCPServer
from wiremcp.errors import INTERNAL_ERROR
from wiremcp.middleware import Call, CallNext
from wiremcp.protocol import META_SERVER_INFO
from wiremcp.response_limit import ResponseSizeLimit
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

STATELESS = "2026-07-28"
ERAS = pytest.mark.parametrize("version", ["2025-11-25", STATELESS])
BIG = "x" * 1000


def _server() -> MCPServer:
    server = MCPServer("limited", "1.0")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.resource("test://big")
    def big() -> str:
        return BIG

    return server


def _size(result: JSONObject) -> int:
    return len(orjson.dumps(result))


async def _call(client: Client, method: str, params: JSONObject) -> JSONObject:
    return await client.request_raw(method, client.with_meta(params) if client.stateless else params)


@ERAS
async def test_results_within_the_limit_pass_untouched(version: str) -> None:
    server = _server()
    server.add_middleware(ResponseSizeLimit(100_000))
    async with Client(server, protocol_version=version) as client:
        result = await client.call_tool("echo", {"text": BIG})
        read = await client.read_resource("test://big")
    assert result["content"] == [{"type": "text", "text": BIG}]
    assert "isError" not in result or result["isError"] is False
    assert read["contents"][0]["text"] == BIG


@ERAS
async def test_a_tool_result_over_the_limit_is_a_tool_error(version: str, caplog: pytest.LogCaptureFixture) -> None:
    server = _server()
    server.add_middleware(ResponseSizeLimit(500))
    with caplog.at_level(logging.WARNING, logger="wiremcp.response_limit"):
        async with Client(server, protocol_version=version) as client:
            response = await _call(client, "tools/call", {"name": "echo", "arguments": {"text": BIG}})
            small = await client.call_tool("echo", {"text": "small"})
    result = response["result"]
    assert result["isError"] is True
    (block,) = result["content"]
    assert block["type"] == "text"
    assert "over the limit of 500 bytes" in block["text"]
    size = int(block["text"].split(" is ")[1].split(" bytes")[0])
    assert size > 1000
    if version == STATELESS:  # still a result of its era
        assert result["resultType"] == "complete"
        assert result["_meta"][META_SERVER_INFO] == {"name": "limited", "version": "1.0"}
    assert small["content"][0]["text"] == "small"
    (record,) = [r for r in caplog.records if r.name == "wiremcp.response_limit"]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == f"tools/call echo: the result is {size} bytes, over the limit of 500"


@ERAS
async def test_any_other_result_over_the_limit_is_an_internal_error(version: str) -> None:
    server = _server()
    server.add_middleware(ResponseSizeLimit(500))
    async with Client(server, protocol_version=version) as client:
        response = await _call(client, "resources/read", {"uri": "test://big"})
        listed = await client.list_tools()
    error = response["error"]
    assert error["code"] == INTERNAL_ERROR
    assert error["message"] == "Response too large"
    assert error["data"]["limit"] == 500
    assert error["data"]["size"] > 1000
    assert "result" not in response
    assert [tool["name"] for tool in listed] == ["echo"]


async def test_the_limit_is_inclusive_and_counts_the_results_json() -> None:
    answer: JSONObject = {"content": [{"type": "text", "text": "exactly"}], "isError": False}
    server = _server()
    limit = server.add_middleware(ResponseSizeLimit(_size(answer), methods=["tools/call"]))

    @server.add_middleware
    async def fixed(call: Call, call_next: CallNext) -> JSONObject | None:
        return answer if call.method == "tools/call" else await call_next()

    async with Client(server) as client:
        assert await client.call_tool("echo", {"text": "-"}) == answer
        limit.max_bytes -= 1
        assert (await client.call_tool("echo", {"text": "-"}))["isError"] is True


async def test_fragments_are_measured_as_the_wire_carries_them() -> None:
    raw = orjson.dumps({"uri": "test://big", "text": BIG})
    server = _server()
    server.add_middleware(ResponseSizeLimit(len(raw) + len(b'{"contents":[]}')))

    @server.add_middleware
    async def prebuilt(call: Call, call_next: CallNext) -> JSONObject | None:
        if call.method != "resources/read":
            return await call_next()
        return {"contents": [orjson.Fragment(raw if call.uri == "test://big" else raw + b" ")]}

    async with Client(server) as client:
        read = await client.read_resource("test://big")
        over = await client.request_raw("resources/read", {"uri": "test://bigger"})
    assert read["contents"][0]["text"] == BIG
    assert over["error"]["data"] == {"size": len(raw) + len(b'{"contents":[]}') + 1,
                                     "limit": len(raw) + len(b'{"contents":[]}')}


async def test_only_the_methods_named_are_limited_and_notifications_pass() -> None:
    server = _server()
    server.add_middleware(ResponseSizeLimit(100, methods=["resources/read"]))
    changed: list[str] = []

    @server.add_middleware
    async def noted(call: Call, call_next: CallNext) -> JSONObject | None:
        if call.notification:
            changed.append(call.method)
        return await call_next()

    async def roots(params: JSONObject) -> JSONObject:
        return {"roots": []}

    async with Client(server, roots=roots) as client:
        result = await client.call_tool("echo", {"text": BIG})
        await client.notify("notifications/roots/list_changed")
        refused = await client.request_raw("resources/read", {"uri": "test://big"})
    assert result["content"][0]["text"] == BIG
    assert changed == ["notifications/initialized", "notifications/roots/list_changed"]
    assert refused["error"]["message"] == "Response too large"


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ResponseSizeLimit(0)
