"""``wiremcp.input_rounds``: how a request whose handler raises ``InputRequired`` is served, in each era,
through the in-memory client: the stateless era's ``input_required`` result (its sealed ``requestState``
bringing the handler's own state back), the handshake era's real requests to the client (at most
``MAX_ROUNDS`` rounds), and an input request of no known kind, refused in both. (The whole exchange, every
kind of input and the capability checks, is ``test_dispatcher.py``'s.)"""

from __future__ import annotations

import pytest

from wiremcp import Context, InputRequired, MCPServer
from wiremcp.errors import INTERNAL_ERROR
from wiremcp.input_required import MAX_ROUNDS
from wiremcp.protocol import META_SERVER_INFO
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

STATELESS = "2026-07-28"
MRTR = "2026-07-28/basic/patterns/mrtr"
ROOTS: JSONObject = {"method": "roots/list"}


def _server(asked: list[str]) -> MCPServer:
    server = MCPServer("rounds", "1.0")

    @server.tool()
    def stateful(ctx: Context) -> str:
        """No input request, only the handler's own state carried to the next round."""
        asked.append(f"stateful: {ctx.request_state}")
        if ctx.request_state is None:
            raise InputRequired(request_state="step-1")
        return f"resumed at {ctx.request_state}"

    @server.tool()
    def insatiable(ctx: Context) -> str:
        asked.append(f"insatiable: {sorted(ctx.input_responses)}")
        raise InputRequired({"roots": ROOTS})

    @server.tool()
    def odd(ctx: Context) -> str:
        raise InputRequired({"k": {"method": "tools/call", "params": {"name": "odd"}}})

    return server


@pytest.mark.spec(f"{MRTR}#inputrequiredresult")
async def test_a_handlers_state_alone_makes_a_round_and_comes_back_sealed() -> None:
    asked: list[str] = []
    async with Client(_server(asked), protocol_version=STATELESS) as client:
        params = client.with_meta({"name": "stateful", "arguments": {}})
        first = (await client.request_raw("tools/call", params))["result"]
        assert first.keys() == {"resultType", "_meta", "requestState"}  # nothing to ask: no inputRequests
        assert first["resultType"] == "input_required"
        assert first["_meta"] == {META_SERVER_INFO: {"name": "rounds", "version": "1.0"}}
        assert "step-1" not in first["requestState"]  # sealed
        done = (await client.request_raw("tools/call", {**params, "requestState": first["requestState"]}))["result"]
    assert done["content"][0]["text"] == "resumed at step-1"
    assert asked == ["stateful: None", "stateful: step-1"]


async def test_the_handshake_era_gives_up_after_max_rounds() -> None:
    asked: list[str] = []
    served: list[JSONObject] = []

    async def roots(params: JSONObject) -> JSONObject:
        served.append(params)
        return {"roots": []}

    async with Client(_server(asked), roots=roots, capabilities={"roots": {}}) as client:
        response = await client.request_raw("tools/call", {"name": "insatiable", "arguments": {}})
    assert response["error"] == {"code": INTERNAL_ERROR, "message": f"Gave up after {MAX_ROUNDS} rounds of input"}
    assert len(served) == MAX_ROUNDS
    assert asked == ["insatiable: []"] + ["insatiable: ['roots']"] * (MAX_ROUNDS - 1)


@pytest.mark.parametrize("version", [STATELESS, "2025-11-25"])
async def test_an_input_request_of_no_known_kind_is_an_internal_error(version: str) -> None:
    async with Client(_server([]), protocol_version=version, capabilities={"roots": {}}) as client:
        params: JSONObject = {"name": "odd", "arguments": {}}
        response = await client.request_raw("tools/call", client.with_meta(params) if client.stateless else params)
    assert response["error"]["code"] == INTERNAL_ERROR
    assert "Invalid input request method: 'tools/call'" in response["error"]["message"]
    assert "result" not in response
