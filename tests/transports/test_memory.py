"""``wiremcp.transports.memory``: the in-memory transport and its test client, driving a server in this
process through the real wire encoding: the capabilities its handlers declare, the handshake (or none,
in the stateless era, where every request carries ``_meta`` and ``input_required`` is answered and
retried), errors raised as ``MCPError``, requests from the server answered, lists read to their end."""

from __future__ import annotations

import pytest

from wiremcp import Context, InputRequired, MCPServer
from wiremcp.errors import METHOD_NOT_FOUND, MCPError
from wiremcp.protocol import META_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_VERSION
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

STATELESS = "2026-07-28"


async def _answer(params: JSONObject) -> JSONObject:
    return {"roots": [{"uri": "file:///work"}]}


def _server() -> MCPServer:
    server = MCPServer("memory", page_size=2)

    for i in range(5):
        server.tool(f"t{i}")(lambda: "x")

    @server.tool()
    async def roots(ctx: Context) -> list[str]:
        return [r["uri"] for r in await ctx.list_roots()]

    @server.tool()
    def forever(ctx: Context) -> str:
        raise InputRequired({"k": {"method": "roots/list"}})

    return server


def test_the_handlers_given_are_the_capabilities_declared() -> None:
    client = Client(_server(), elicitation=_answer, sampling=_answer, roots=_answer, capabilities={"x": {}})
    assert client.capabilities == {"x": {}, "elicitation": {"form": {}, "url": {}}, "sampling": {},
                                   "roots": {"listChanged": True}}
    assert Client(_server(), capabilities={"roots": {}}, roots=_answer).capabilities == {"roots": {}}


async def test_the_handshake_is_made_on_entry_unless_told_not_to() -> None:
    async with Client(_server(), client_info={"name": "me", "version": "1"}) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["serverInfo"]["name"] == "memory"
        assert client.session.state.ready
        assert client.session.state.client_info == {"name": "me", "version": "1"}
    async with Client(_server(), initialize=False) as bare:
        assert bare.initialize_result is None
        assert not bare.session.state.initialized


async def test_a_stateless_client_makes_no_handshake_and_sends_meta_with_every_request() -> None:
    async with Client(_server(), protocol_version=STATELESS, log_level="info", roots=_answer) as client:
        assert client.stateless
        assert client.initialize_result is None
        assert client.with_meta({"name": "x", "_meta": {META_VERSION: "mine"}}) == {"name": "x", "_meta": {
            META_VERSION: "mine", META_CAPABILITIES: {"roots": {"listChanged": True}},
            META_CLIENT_INFO: {"name": "wiremcp-test-client", "version": "0"}, META_LOG_LEVEL: "info"}}
        result = await client.call_tool("roots")  # input_required, answered, retried
    assert result["resultType"] == "complete"
    assert result["structuredContent"] == {"result": ["file:///work"]}


async def test_a_stateless_client_gives_up_after_its_rounds() -> None:
    async with Client(_server(), protocol_version=STATELESS, roots=_answer, max_rounds=3) as client:
        with pytest.raises(MCPError, match="still input_required after 3 rounds"):
            await client.call_tool("forever")


async def test_an_error_response_is_raised_and_the_raw_one_returned() -> None:
    async with Client(_server()) as client:
        with pytest.raises(MCPError) as raised:
            await client.request("tools/explode")
        raw = await client.request_raw("tools/explode", id="mine")
    assert raised.value.code == METHOD_NOT_FOUND
    assert raw == {"jsonrpc": "2.0", "id": "mine", "error": {"code": METHOD_NOT_FOUND,
                                                             "message": "Method not found: tools/explode"}}


@pytest.mark.spec("2025-11-25/client/roots#listing-roots")
async def test_the_servers_requests_are_answered_by_the_handlers_or_refused() -> None:
    async with Client(_server(), roots=_answer) as answering:
        assert (await answering.call_tool("roots"))["structuredContent"] == {"result": ["file:///work"]}
    async with Client(_server(), capabilities={"roots": {}}) as refusing:  # declared, but no handler
        result = await refusing.call_tool("roots")
    assert result["isError"] is True


async def test_lists_are_read_across_every_page() -> None:
    async with Client(_server()) as client:
        tools = await client.list_tools()
    assert [t["name"] for t in tools] == ["t0", "t1", "t2", "t3", "t4", "roots", "forever"]


async def test_notifications_are_kept_and_waited_for() -> None:
    server = _server()
    async with Client(server) as client:
        server.tool("late")(lambda: "x")
        (note,) = await client.wait_for_notification("notifications/tools/list_changed")
        assert client.notifications == [note]
        assert await client.ping() == {}
