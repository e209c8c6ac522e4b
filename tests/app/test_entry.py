"""``wiremcp.entry``: the one way into the core. A classified request served in its era (on its
handshake session, or in the envelope its ``_meta`` declares), its ``Outcome`` (a result, a protocol error,
an internal error, or None when the client cancelled it), the observer around it, and JSON-RPC batches."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.failures import masked_error
from wiremcp import Context, MCPServer, jsonrpc
from wiremcp.asking import ClientRequests, InputRounds
from wiremcp.entry import Batch, serve, serve_batch
from wiremcp.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    InvalidParams,
    MethodNotFound,
)
from wiremcp.inbound import Inbound, classify
from wiremcp.inlet import batch_items
from wiremcp.logs import REQUEST_ID
from wiremcp.outcome import Outcome
from wiremcp.protocol import META_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_VERSION
from wiremcp.session import ServerSession
from wiremcp.state import SessionState
from wiremcp.types import JSONObject, RequestId

VERSION = "2026-07-28"
BATCHING = "2025-03-26/basic/index#batching"
CANCELLATION = "2025-11-25/basic/utilities/cancellation"


class Gate:
    """A handler waits at the gate; the test sees it arrive and lets it through (no sleeps)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.opened = asyncio.Event()


class Recorder:
    """A request observer that records what it sees."""

    def __init__(self) -> None:
        self.started_with: list[tuple[RequestId, str, str | None]] = []
        self.finished_with: list[tuple[Any, Outcome | None]] = []

    def started(self, request: jsonrpc.Request, session_id: str | None) -> Any:
        self.started_with.append((request.id, request.method, session_id))
        return ("token", request.id)

    def finished(self, token: Any, answer: Outcome | None) -> None:
        self.finished_with.append((token, answer))


class Sent:
    """The ``send`` of a request: what was sent related to it."""

    def __init__(self) -> None:
        self.messages: list[JSONObject] = []

    async def __call__(self, message: JSONObject) -> None:
        self.messages.append(message)


def make_server(gate: Gate | None = None, seen: dict[str, Any] | None = None) -> MCPServer:
    """Tools: ``echo`` (records what its context was in ``seen``), ``refuse`` (an MCPError), ``wait`` (at
    ``gate``) and ``open_gate``."""
    server = MCPServer("t")
    seen = {} if seen is None else seen

    @server.tool()
    async def echo(text: str, ctx: Context) -> str:
        seen.update(request_id=REQUEST_ID.get(), stateless=ctx.stateless, session=ctx.session, state=ctx.state,
                    asker=type(ctx.asker))
        return text

    @server.tool()
    def refuse() -> str:
        raise InvalidParams("Invalid params: refused", {"why": "test"})

    @server.tool()
    async def wait() -> str:
        assert gate is not None
        gate.entered.set()
        await gate.opened.wait()
        return "waited"

    @server.tool()
    async def open_gate() -> str:
        assert gate is not None
        gate.opened.set()
        return "opened"

    return server


def handshake_state(version: str = "2025-03-26", **changes: Any) -> SessionState:
    values: dict[str, Any] = {"id": "sess-1", "initialized": True, "ready": True, "server_capabilities": ["tools"],
                              "protocol_version": version}
    values.update(changes)
    return SessionState(**values)


@pytest.fixture
async def sessions() -> AsyncIterator[list[ServerSession]]:
    """Sessions a test opens, closed at its end (they are attached to their server)."""
    opened: list[ServerSession] = []
    yield opened
    for session in opened:
        session.close()


def open_session(sessions: list[ServerSession], server: MCPServer, state: SessionState) -> ServerSession:
    session = ServerSession(server, state)
    sessions.append(session)
    return session


def call(rid: RequestId, tool: str, arguments: JSONObject | None = None) -> jsonrpc.Request:
    return jsonrpc.Request(rid, "tools/call", {"name": tool, "arguments": arguments or {}})


def stateless(request: jsonrpc.Request, server: MCPServer) -> Inbound:
    request.params["_meta"] = {META_VERSION: VERSION, META_CAPABILITIES: {"elicitation": {}},
                               META_CLIENT_INFO: {"name": "c", "version": "1"}, META_LOG_LEVEL: "debug"}
    inbound = classify(request, server)
    assert isinstance(inbound, Inbound)
    assert inbound.stateless
    return inbound


def text_of(done: Outcome | None) -> str:
    assert done is not None
    assert "result" in done.message, done.message
    content = done.message["result"]["content"]
    assert isinstance(content[0]["text"], str)
    return content[0]["text"]


# -- serve ------------------------------------------------------------------------------------------------
async def test_a_handshake_era_request_is_served_on_its_session(sessions: list[ServerSession]) -> None:
    seen: dict[str, Any] = {}
    server = make_server(seen=seen)
    session = open_session(sessions, server, handshake_state())
    sent = Sent()
    done = await serve(server, Inbound(call(1, "echo", {"text": "hi"})), sent, session=session)
    assert done == Outcome({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}})
    assert seen["stateless"] is False
    assert seen["session"] is session
    assert seen["state"] is session.state
    assert seen["asker"] is ClientRequests
    assert seen["request_id"] == 1
    assert REQUEST_ID.get() is None  # reset once the request is answered
    assert session.inflight == 0
    assert sent.messages == []


@pytest.mark.spec("2026-07-28/basic/index#statelessness")
async def test_a_stateless_request_is_served_without_a_session_in_its_envelope() -> None:
    seen: dict[str, Any] = {}
    server = make_server(seen=seen)
    inbound = stateless(call("s-1", "echo", {"text": "hi"}), server)
    done = await serve(server, inbound, Sent())
    assert done is not None
    assert done.error is None
    result = done.message["result"]
    assert done.message["id"] == "s-1"
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "hi"}]
    assert seen["stateless"] is True
    assert seen["session"] is None
    assert seen["state"] is inbound.envelope
    assert seen["asker"] is InputRounds
    assert seen["request_id"] == "s-1"


@pytest.mark.spec("2026-07-28/basic/index#statelessness")
async def test_a_stateless_request_on_a_session_is_served_in_its_envelope(sessions: list[ServerSession]) -> None:
    seen: dict[str, Any] = {}
    server = make_server(seen=seen)
    session = open_session(sessions, server, handshake_state())
    inbound = stateless(call(2, "echo", {"text": "x"}), server)
    assert text_of(await serve(server, inbound, Sent(), session=session)) == "x"
    assert seen["state"] is inbound.envelope
    assert seen["stateless"] is True
    assert seen["asker"] is InputRounds


@pytest.mark.spec("2025-11-25/basic/index#error-responses")
async def test_an_mcp_error_in_a_handler_is_the_outcomes_error(sessions: list[ServerSession]) -> None:
    server = make_server()
    session = open_session(sessions, server, handshake_state())
    done = await serve(server, Inbound(call(4, "refuse")), Sent(), session=session)
    assert done is not None
    assert isinstance(done.error, InvalidParams)
    assert done.internal is False
    assert done.message == {"jsonrpc": "2.0", "id": 4, "error": {
        "code": INVALID_PARAMS, "message": "Invalid params: refused", "data": {"why": "test"}}}


async def test_an_unknown_method_is_method_not_found_in_both_eras(sessions: list[ServerSession]) -> None:
    server = make_server()
    session = open_session(sessions, server, handshake_state())
    handshake = await serve(server, Inbound(jsonrpc.Request(1, "nope/nope", {})), Sent(), session=session)
    modern = await serve(server, stateless(jsonrpc.Request(2, "nope/nope", {}), server), Sent())
    for done in (handshake, modern):
        assert done is not None
        assert isinstance(done.error, MethodNotFound)
        assert done.message["error"]["code"] == METHOD_NOT_FOUND


@pytest.mark.spec("2025-11-25/basic/index#error-responses")
async def test_an_unexpected_exception_is_an_internal_error_that_is_logged(
        sessions: list[ServerSession], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    server = make_server()
    session = open_session(sessions, server, handshake_state())

    async def broken(params: JSONObject, ctx: Context) -> JSONObject:
        raise RuntimeError("secret detail")

    monkeypatch.setitem(server.runtime.dispatcher._handlers, "tools/list", broken)
    with caplog.at_level(logging.ERROR, logger="wiremcp.failures"):
        done = await serve(server, Inbound(jsonrpc.Request("boom", "tools/list", {})), Sent(), session=session)
    assert done is not None
    assert done.internal is True
    assert done.error is None
    reference = masked_error(done.message["error"], "Internal error handling tools/list")
    assert "secret" not in str(done.message)
    records = [r for r in caplog.records if r.name == "wiremcp.failures" and r.levelno == logging.ERROR]
    assert len(records) == 1
    assert reference in records[0].getMessage()
    assert records[0].getMessage() == f"Internal error handling tools/list (reference {reference})"
    assert records[0].exc_info is not None
    assert isinstance(records[0].exc_info[1], RuntimeError)
    assert session.inflight == 0


async def test_the_observer_sees_a_request_start_and_finish(sessions: list[ServerSession]) -> None:
    server = make_server()
    recorder = Recorder()
    server.runtime.observe(recorder)
    session = open_session(sessions, server, handshake_state())
    done = await serve(server, Inbound(call(1, "echo", {"text": "a"})), Sent(), session=session)
    failed = await serve(server, Inbound(call(2, "refuse")), Sent(), session=session)
    modern = await serve(server, stateless(call(3, "echo", {"text": "b"}), server), Sent())
    assert recorder.started_with == [(1, "tools/call", "sess-1"), (2, "tools/call", "sess-1"),
                                     (3, "tools/call", None)]
    assert recorder.finished_with == [(("token", 1), done), (("token", 2), failed), (("token", 3), modern)]


@pytest.mark.spec("2025-03-26/basic/index#requests")
async def test_a_request_id_already_in_flight_is_refused(sessions: list[ServerSession]) -> None:
    gate = Gate()
    server = make_server(gate)
    recorder = Recorder()
    server.runtime.observe(recorder)
    session = open_session(sessions, server, handshake_state())
    first = asyncio.create_task(serve(server, Inbound(call(7, "wait")), Sent(), session=session))
    await gate.entered.wait()
    refused = await serve(server, Inbound(jsonrpc.Request(7, "tools/list", {})), Sent(), session=session)
    assert refused is not None
    assert refused.message == {"jsonrpc": "2.0", "id": 7, "error": {
        "code": INVALID_REQUEST, "message": "Request id 7 is already in use"}}
    assert refused.error is not None
    assert session.running(7)  # the first goes on
    gate.opened.set()
    assert text_of(await first) == "waited"
    assert [rid for rid, _method, _sid in recorder.started_with] == [7]  # the refused one never ran
    again = await serve(server, Inbound(jsonrpc.Request(7, "tools/list", {})), Sent(), session=session)
    assert again is not None
    assert again.error is None  # the id is free once the first is answered


@pytest.mark.spec(f"{CANCELLATION}#behavior-requirements")
async def test_a_request_the_client_cancels_has_no_outcome(sessions: list[ServerSession]) -> None:
    gate = Gate()
    server = make_server(gate)
    recorder = Recorder()
    server.runtime.observe(recorder)
    session = open_session(sessions, server, handshake_state())
    running = asyncio.create_task(serve(server, Inbound(call("c-1", "wait")), Sent(), session=session))
    await gate.entered.wait()
    session.handle_notification(jsonrpc.Notification("notifications/cancelled", {"requestId": "c-1"}))
    assert await running is None
    assert not running.cancelled()
    assert session.inflight == 0
    assert recorder.finished_with == [(("token", "c-1"), None)]


@pytest.mark.spec(f"{CANCELLATION}#behavior-requirements")
async def test_a_cancellation_that_does_not_come_from_the_client_propagates(sessions: list[ServerSession]) -> None:
    gate = Gate()
    server = make_server(gate)
    session = open_session(sessions, server, handshake_state())
    running = asyncio.create_task(serve(server, Inbound(call(1, "wait")), Sent(), session=session))
    await gate.entered.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert session.inflight == 0


# -- serve_batch ------------------------------------------------------------------------------------------
@pytest.mark.spec(BATCHING)
@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
async def test_a_batch_is_refused_unless_the_session_speaks_2025_03_26(
        sessions: list[ServerSession], version: str) -> None:
    server = make_server()
    session = open_session(sessions, server, handshake_state(version))
    refused = serve_batch(server, batch_items([jsonrpc.Request(1, "ping", {})], server), Sent(),
                          session=session)
    assert refused == {"jsonrpc": "2.0", "id": None, "error": {
        "code": INVALID_REQUEST,
        "message": "Invalid Request: JSON-RPC batches are only accepted from 2025-03-26 clients"}}
    assert session.inflight == 0


@pytest.mark.spec(BATCHING)
async def test_a_batchs_notifications_are_handled_before_serve_batch_returns(sessions: list[ServerSession]) -> None:
    server = make_server()
    session = open_session(sessions, server, handshake_state(ready=False))
    batch = serve_batch(server, batch_items([jsonrpc.Notification("notifications/initialized", {})], server), Sent(),
                        session=session)
    assert isinstance(batch, Batch)
    assert session.state.ready is True
    assert batch.running == []
    assert await batch.answers() == []


@pytest.mark.spec(BATCHING)
async def test_a_batchs_requests_are_answered_in_order(sessions: list[ServerSession]) -> None:
    gate = Gate()
    server = make_server(gate)
    session = open_session(sessions, server, handshake_state())
    items: list[jsonrpc.Message] = [call(1, "wait"), jsonrpc.Request("two", "ping", {}), call(3, "open_gate")]
    batch = serve_batch(server, batch_items(items, server), Sent(), session=session)
    assert isinstance(batch, Batch)
    assert len(batch.running) == 3
    answers = await batch.answers()  # the first finishes last: the third opens its gate
    assert [answer["id"] for answer in answers] == [1, "two", 3]
    assert answers[1] == {"jsonrpc": "2.0", "id": "two", "result": {}}
    assert answers[0]["result"]["content"] == [{"type": "text", "text": "waited"}]


@pytest.mark.spec(BATCHING)
async def test_a_cancellation_in_a_batch_reaches_a_request_already_running(sessions: list[ServerSession]) -> None:
    gate = Gate()
    server = make_server(gate)
    session = open_session(sessions, server, handshake_state())
    first = serve_batch(server, batch_items([call(1, "wait")], server), Sent(), session=session)
    assert isinstance(first, Batch)
    await gate.entered.wait()
    second = serve_batch(server, batch_items([jsonrpc.Notification("notifications/cancelled", {"requestId": 1}),
                                              jsonrpc.Request(2, "ping", {})], server), Sent(), session=session)
    assert isinstance(second, Batch)
    assert await first.answers() == []  # cancelled: no answer
    assert await second.answers() == [{"jsonrpc": "2.0", "id": 2, "result": {}}]


@pytest.mark.spec(BATCHING)
async def test_a_batchs_responses_reach_the_requests_waiting_for_them(sessions: list[ServerSession]) -> None:
    server = make_server()
    session = open_session(sessions, server, handshake_state())
    asked: list[JSONObject] = []
    arrived = asyncio.Event()

    async def send(message: JSONObject) -> None:
        asked.append(message)
        arrived.set()

    waiting = asyncio.create_task(session.request_client("roots/list", None, send, None))
    await arrived.wait()
    batch = serve_batch(server, batch_items([jsonrpc.Response(asked[0]["id"], {"roots": []}, None)], server), Sent(),
                        session=session)
    assert isinstance(batch, Batch)
    assert await waiting == {"roots": []}
    assert await batch.answers() == []


@pytest.mark.spec("2025-03-26/basic/lifecycle#initialization")
async def test_initialize_inside_a_batch_is_refused(sessions: list[ServerSession]) -> None:
    server = make_server()
    session = open_session(sessions, server, handshake_state())
    init = jsonrpc.Request("init", "initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                                  "clientInfo": {"name": "c", "version": "1"}})
    batch = serve_batch(server, batch_items([init, jsonrpc.Request(2, "ping", {})], server), Sent(),
                        session=session)
    assert isinstance(batch, Batch)
    assert len(batch.running) == 1  # only the ping runs
    answers = await batch.answers()
    assert {"jsonrpc": "2.0", "id": "init", "error": {"code": INVALID_REQUEST,
                                                      "message": "initialize must not be batched"}} in answers
    assert {"jsonrpc": "2.0", "id": 2, "result": {}} in answers
    assert len(answers) == 2


@pytest.mark.spec(BATCHING)
async def test_an_invalid_items_reply_is_included_and_an_unanswerable_one_is_not(
        sessions: list[ServerSession]) -> None:
    server = make_server()
    session = open_session(sessions, server, handshake_state())
    reply = jsonrpc.error(None, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    items: list[jsonrpc.Message] = [jsonrpc.Invalid(reply), jsonrpc.Invalid(None), jsonrpc.Request(2, "ping", {})]
    batch = serve_batch(server, batch_items(items, server), Sent(), session=session)
    assert isinstance(batch, Batch)
    answers = await batch.answers()
    assert reply in answers
    assert {"jsonrpc": "2.0", "id": 2, "result": {}} in answers
    assert len(answers) == 2


@pytest.mark.spec("2026-07-28/basic/index#_meta")
async def test_a_batched_request_with_a_malformed_meta_is_answered_with_its_rejection(
        sessions: list[ServerSession]) -> None:
    server = make_server()
    session = open_session(sessions, server, handshake_state())
    malformed = jsonrpc.Request(5, "tools/list", {"_meta": {META_VERSION: VERSION}})  # no capabilities
    batch = serve_batch(server, batch_items([malformed], server), Sent(), session=session)
    assert isinstance(batch, Batch)
    assert batch.running == []
    [answer] = await batch.answers()
    assert answer["id"] == 5
    assert answer["error"]["code"] == INVALID_PARAMS


async def test_a_batch_with_only_notifications_has_nothing_to_answer(sessions: list[ServerSession]) -> None:
    server = make_server()
    session = open_session(sessions, server, handshake_state())
    batch = serve_batch(server, batch_items([jsonrpc.Notification("notifications/initialized", {}),
                                             jsonrpc.Notification("notifications/roots/list_changed", {})], server),
                        Sent(), session=session)
    assert isinstance(batch, Batch)
    assert await batch.answers() == []


async def test_an_mcp_error_in_a_batched_request_is_its_reply(sessions: list[ServerSession]) -> None:
    server = make_server()
    session = open_session(sessions, server, handshake_state())
    batch = serve_batch(server, batch_items([call(1, "refuse"), jsonrpc.Request(2, "nope/nope", {})], server),
                        Sent(), session=session)
    assert isinstance(batch, Batch)
    answers = await batch.answers()
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(1, INVALID_PARAMS), (2, METHOD_NOT_FOUND)]

