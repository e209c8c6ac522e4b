"""The serializable session state and the session runner's bookkeeping."""

import asyncio
from typing import Any

import orjson

from wiremcp import MCPServer, jsonrpc
from wiremcp.session import ServerSession
from wiremcp.state import SessionState


def _full_state() -> SessionState:
    return SessionState(
        id="sess-1",
        protocol_version="2025-06-18",
        client_capabilities={"roots": {"listChanged": True}, "elicitation": {"form": {}}},
        client_info={"name": "client", "version": "1.2"},
        server_capabilities=["logging", "tools"],
        log_level="warning",
        subscriptions={"b://2", "a://1"},
        initialized=True,
        ready=True,
        principal={"sub": "user-1", "scopes": ["read"]},
    )


def test_round_trip_through_json() -> None:
    state = _full_state()
    data = state.to_dict()
    assert data["subscriptions"] == ["a://1", "b://2"]
    restored = SessionState.from_dict(orjson.loads(orjson.dumps(data)))
    assert restored == state


def test_default_state_round_trips() -> None:
    state = SessionState()
    assert SessionState.from_dict(orjson.loads(orjson.dumps(state.to_dict()))) == state
    assert state.initialized is False
    assert state.ready is False
    assert state.subscriptions == set()


def test_to_dict_is_a_copy() -> None:
    state = _full_state()
    data = state.to_dict()
    data["client_capabilities"]["sampling"] = {}
    assert "sampling" not in state.client_capabilities


def test_from_dict_ignores_unknown_keys_and_fills_defaults() -> None:
    restored = SessionState.from_dict({"id": "x", "initialized": True, "from_a_newer_version": 1,
                                       "subscriptions": None})
    assert restored == SessionState(id="x", initialized=True)


async def test_a_restored_state_serves_requests() -> None:
    server = MCPServer("s")

    @server.tool()
    def echo(text: str) -> str:
        return text

    state = SessionState.from_dict(_full_state().to_dict())
    session = ServerSession(server, state)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    response = await session.handle_request(
        jsonrpc.Request(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}), send)
    assert response == {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}}
    assert sent == []
    session.close()


async def test_duplicate_request_id_in_flight_is_rejected() -> None:
    server = MCPServer("s")
    started = asyncio.Event()
    release = asyncio.Event()

    @server.tool()
    async def slow() -> str:
        started.set()
        await release.wait()
        return "done"

    session = ServerSession(server, SessionState(initialized=True, ready=True, server_capabilities=["tools"]))

    async def send(message: dict[str, Any]) -> None:
        return None

    request = jsonrpc.Request("dup", "tools/call", {"name": "slow"})
    first = asyncio.ensure_future(session.handle_request(request, send))
    await started.wait()
    assert session.inflight == 1
    second = await session.handle_request(request, send)
    assert second is not None
    assert second["error"]["code"] == -32600
    release.set()
    response = await first
    assert response is not None
    assert response["result"]["content"][0]["text"] == "done"
    assert session.inflight == 0
    session.close()


def test_close_detaches_from_the_server() -> None:
    server = MCPServer("s")
    posted: list[dict[str, Any]] = []
    session = ServerSession(server, SessionState(initialized=True, ready=True, server_capabilities=["tools"]),
                            post=posted.append)

    @server.tool()
    def one() -> str:
        return "1"

    assert [m["method"] for m in posted] == ["notifications/tools/list_changed"]
    session.close()

    @server.tool()
    def two() -> str:
        return "2"

    assert len(posted) == 1
