"""Streamable HTTP (the handshake era) against a real ``uvicorn app:asgi`` process.

Every answer is checked at the HTTP level (status, headers, the JSON-RPC error in the body)
and every SSE stream event by event. Long-running calls use ``stepper``/``release`` of the
fixture server, so what exists on a stream at any moment is known, not timed.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support import http_fixture_server as fixture
from tests.support.http import (
    LATEST,
    READ_BOUND,
    RawSession,
    SSEEvent,
    SSEReader,
    UvicornProcess,
    asgi_client,
    error_of,
    initialize,
    parse_sse,
    post_headers,
    request_body,
    serve_in_process,
)
from tests.support.http_fixture_server import MAX_MESSAGE_BYTES
from tests.support.tokens import SIGNED_IN_ISSUER, SUBJECT_HEADER, Recorder, recording_server, signed_in
from wiremcp import MCPServer
from wiremcp.backend import Backend
from wiremcp.errors import INTERNAL_ERROR, INVALID_REQUEST, MISSING_CLIENT_CAPABILITY, PARSE_ERROR
from wiremcp.principal import Principal, key_of
from wiremcp.runtime import Runtime
from wiremcp.transports.channels import READER_QUEUE
from wiremcp.transports.http_app import MCPHttpApp
from wiremcp.transports.streamable_http import HttpOptions

TRANSPORTS = "2025-11-25/basic/transports"
VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"]

pytestmark = pytest.mark.timeout(30)


def spec(section: str) -> pytest.MarkDecorator:
    return pytest.mark.spec(f"{TRANSPORTS}#{section}")


_uniq = iter(range(1_000_000))


def unique(prefix: str) -> str:
    """A name no other test uses (gates, URIs and tools live as long as the shared server)."""
    return f"{prefix}-{next(_uniq)}"


def tool_call(rid: int | str, name: str, arguments: dict[str, Any], progress: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if progress is not None:
        params["_meta"] = {"progressToken": progress}
    return request_body(rid, "tools/call", params)


@pytest.fixture
async def session(http: httpx.AsyncClient, http_server: UvicornProcess) -> RawSession:
    return await initialize(http, http_server.url)


@pytest.fixture
async def witness(http: httpx.AsyncClient, http_server: UvicornProcess) -> RawSession:
    """Another session, which must keep being served whatever happens to the others."""
    return await initialize(http, http_server.url, "2025-06-18")


async def still_served(*sessions: RawSession) -> None:
    for s in sessions:
        assert await s.call("ping") == {}


# -- the handshake -----------------------------------------------------------------------------------------
@spec("session-management")
async def test_initialize_assigns_a_distinct_visible_ascii_high_entropy_session_id(
        http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    ids = [(await initialize(http, http_server.url, initialized=False)).sid for _ in range(20)]
    assert len(set(ids)) == len(ids)
    for sid in ids:
        assert re.fullmatch(r"[\x21-\x7e]+", sid), sid
        assert len(sid) >= 32  # 256 random bits as URL-safe base64 is 43 characters
    assert len(set("".join(ids))) > 40  # many distinct characters: not a counter or a timestamp
    assert len({sid[:8] for sid in ids}) == len(ids)


@spec("session-management")
async def test_every_request_needs_the_session_id_and_the_session_answers_with_it(
        http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    first = await initialize(http, http_server.url)
    second = await initialize(http, http_server.url)
    assert await first.tool("echo", text="one") == "one"
    assert await second.tool("echo", text="two") == "two"
    assert first.sid != second.sid


@spec("protocol-version-header")
async def test_a_missing_protocol_version_header_is_taken_as_2025_03_26(
        http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    old = await initialize(http, http_server.url, "2025-03-26", send_version=False)
    assert await old.tool("echo", text="no header") == "no header"
    batch = await old.post([request_body(1, "ping"), request_body(2, "ping")])
    assert batch.status_code == 200
    assert [m["id"] for m in batch.json()] == [1, 2]  # a 2025-03-26 feature: so the session is taken as one
    # A newer session is accepted without the header too (clients built on the 2025-03-26 transport).
    new = await initialize(http, http_server.url, send_version=False)
    assert await new.call("ping") == {}


@spec("backwards-compatibility")
@pytest.mark.spec("2025-03-26/basic/index#batching")
async def test_2025_03_26_sessions_accept_json_rpc_batches(http: httpx.AsyncClient,
                                                           http_server: UvicornProcess) -> None:
    old = await initialize(http, http_server.url, "2025-03-26")
    response = await old.post([
        request_body("a", "ping"),
        tool_call("b", "echo", {"text": "batched"}),
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": "c"},  # neither request nor response: answered with an error
    ])
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    replies = {m["id"]: m for m in response.json()}
    assert replies.keys() == {"a", "b", "c"}
    assert replies["a"]["result"] == {}
    assert replies["b"]["result"]["content"][0]["text"] == "batched"
    assert replies["c"]["error"]["code"] == INVALID_REQUEST
    only_notes = await old.post([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}])
    assert only_notes.status_code == 202
    assert only_notes.content == b""


# -- error paths: exact status, JSON-RPC error in the body, and everyone else still served ------------------
Make = Callable[[RawSession, UvicornProcess], Awaitable[httpx.Response]]


async def _ping(s: RawSession, **headers: str) -> httpx.Response:
    return await s.post(request_body(1, "ping"), **headers)


async def _get(s: RawSession, **headers: str) -> httpx.Response:
    out = s.headers(**headers)
    return await s.client.get(s.url, headers=out)


async def _chunks(total: int, size: int = 16 * 1024) -> AsyncIterator[bytes]:
    sent = 0
    while sent < total:
        chunk = b" " * min(size, total - sent)
        sent += len(chunk)
        yield chunk


async def _too_large_chunked(s: RawSession, server: UvicornProcess) -> httpx.Response:
    # No Content-Length: the limit is found while reading. The body overflows on its last chunk.
    return await s.client.post(s.url, content=_chunks(MAX_MESSAGE_BYTES + 16 * 1024), headers=s.headers())


async def _too_large_declared(s: RawSession, server: UvicornProcess) -> httpx.Response:
    return await s.client.post(s.url, content=b" " * (MAX_MESSAGE_BYTES + 1), headers=s.headers())


async def _no_session_id(s: RawSession, server: UvicornProcess) -> httpx.Response:
    return await s.client.post(s.url, content=json.dumps(request_body(1, "tools/list")), headers=post_headers())


async def _newer_than_negotiated(s: RawSession, server: UvicornProcess) -> httpx.Response:
    older = await initialize(s.client, s.url, "2025-06-18")
    return await _ping(older, **{"mcp-protocol-version": "2025-11-25"})


async def _raw(s: RawSession, content: bytes, **headers: str) -> httpx.Response:
    return await s.client.post(s.url, content=content, headers=s.headers(**headers))


async def _batch_from(version: str, s: RawSession) -> httpx.Response:
    other = await initialize(s.client, s.url, version)
    return await other.post([request_body(1, "ping"), request_body(2, "ping")])


async def _unknown_session(s: RawSession, server: UvicornProcess) -> httpx.Response:
    return await _ping(s, **{"mcp-session-id": "no-such-session-" + "x" * 30})


async def _after_delete(s: RawSession, server: UvicornProcess) -> httpx.Response:
    doomed = await initialize(s.client, s.url)
    deleted = await doomed.delete()
    assert deleted.status_code == 200
    assert (await _get(doomed, accept="text/event-stream")).status_code == 404
    assert (await doomed.delete()).status_code == 404
    return await _ping(doomed)


ERRORS: list[tuple[str, int, int, int | None, Make]] = [
    ("post-accepts-only-json", 406, INVALID_REQUEST, None, lambda s, _: _ping(s, accept="application/json")),
    ("post-accepts-only-sse", 406, INVALID_REQUEST, None, lambda s, _: _ping(s, accept="text/event-stream")),
    ("post-accepts-html", 406, INVALID_REQUEST, None, lambda s, _: _ping(s, accept="text/html")),
    ("get-accepts-only-json", 406, INVALID_REQUEST, None, lambda s, _: _get(s, accept="application/json")),
    ("content-type-text", 415, INVALID_REQUEST, None, lambda s, _: _ping(s, **{"content-type": "text/plain"})),
    ("content-type-form", 415, INVALID_REQUEST, None,
     lambda s, _: _ping(s, **{"content-type": "application/x-www-form-urlencoded"})),
    ("too-large-content-length", 413, INVALID_REQUEST, None, _too_large_declared),
    ("too-large-chunked", 413, INVALID_REQUEST, None, _too_large_chunked),
    ("missing-session-id", 400, INVALID_REQUEST, None, _no_session_id),
    ("unsupported-protocol-version", 400, INVALID_REQUEST, None,
     lambda s, _: _ping(s, **{"mcp-protocol-version": "1999-01-01"})),
    ("protocol-version-newer-than-negotiated", 400, INVALID_REQUEST, None, _newer_than_negotiated),
    ("parse-error", 400, PARSE_ERROR, None, lambda s, _: _raw(s, b'{"jsonrpc": "2.0", "id": 1, "method": ')),
    ("parse-error-without-session", 400, PARSE_ERROR, None,
     lambda s, _: s.client.post(s.url, content=b"{oops", headers=post_headers())),
    ("invalid-request", 400, INVALID_REQUEST, 1, lambda s, _: _raw(s, b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}')),
    ("batch-from-2025-11-25", 400, INVALID_REQUEST, None, lambda s, _: _batch_from("2025-11-25", s)),
    ("batch-from-2025-06-18", 400, INVALID_REQUEST, None, lambda s, _: _batch_from("2025-06-18", s)),
    ("bad-origin", 403, INVALID_REQUEST, None, lambda s, _: _ping(s, origin="http://evil.example")),
    ("bad-origin-on-get", 403, INVALID_REQUEST, None,
     lambda s, _: _get(s, origin="https://evil.example:8443", accept="text/event-stream")),
    ("bad-host", 421, INVALID_REQUEST, None, lambda s, _: _ping(s, host="evil.example")),
    ("rebinding-host", 421, INVALID_REQUEST, None, lambda s, srv: _ping(s, host=f"127.0.0.1.evil.example:{srv.port}")),
    ("unknown-session", 404, INVALID_REQUEST, None, _unknown_session),
    ("after-delete", 404, INVALID_REQUEST, None, _after_delete),
    # Without a session, GET and DELETE belong to no era (the stateless one has neither): 405, Allow: POST.
    ("get-without-session", 405, INVALID_REQUEST, None,
     lambda s, _: s.client.get(s.url, headers={"accept": "text/event-stream"})),
    ("get-without-session-with-version", 405, INVALID_REQUEST, None,
     lambda s, _: s.client.get(s.url, headers={"accept": "text/event-stream", "mcp-protocol-version": s.version})),
    ("delete-without-session", 405, INVALID_REQUEST, None, lambda s, _: s.client.delete(s.url)),
    ("put", 405, INVALID_REQUEST, None, lambda s, _: s.client.put(s.url, content=b"{}", headers=s.headers())),
    ("patch", 405, INVALID_REQUEST, None, lambda s, _: s.client.patch(s.url, content=b"{}", headers=s.headers())),
]


@pytest.mark.parametrize(("status", "code", "rid", "make"), [pytest.param(*case[1:], id=case[0]) for case in ERRORS])
@spec("sending-messages-to-the-server")
@spec("session-management")
@spec("protocol-version-header")
@spec("security-warning")
async def test_error_answers_have_the_exact_status_and_a_json_rpc_error(
        status: int, code: int, rid: int | None, make: Make, session: RawSession, witness: RawSession,
        http_server: UvicornProcess) -> None:
    response = await make(session, http_server)
    assert response.status_code == status, response.text
    assert error_of(response) == (code, rid)  # no id but where the request's could be read
    if status == 405:
        with_session = "mcp-session-id" in response.request.headers
        assert response.headers["allow"] == ("GET, POST, DELETE" if with_session else "POST")
    await still_served(session, witness)


@spec("sending-messages-to-the-server")
async def test_notifications_and_client_responses_get_202_with_an_empty_body(session: RawSession,
                                                                            witness: RawSession) -> None:
    note = await session.notify("notifications/roots/list_changed")
    answer = await session.post({"jsonrpc": "2.0", "id": 12345, "result": {}})
    failure = await session.post({"jsonrpc": "2.0", "id": 12346, "error": {"code": -1, "message": "no"}})
    for response in (note, answer, failure):
        assert response.status_code == 202
        assert response.content == b""
        assert response.headers["content-length"] == "0"
    await still_served(session, witness)


@spec("listening-for-messages-from-the-server")
async def test_a_second_concurrent_get_stream_is_409(session: RawSession, witness: RawSession) -> None:
    uri = unique("fixture://watched/conflict")
    await session.call("resources/subscribe", {"uri": uri})
    async with session.stream_get() as first:
        assert first.status_code == 200
        events = SSEReader(first)
        priming = await events.next()
        assert priming.data == ""
        assert priming.id == "get_0"
        second = await session.get()
        assert second.status_code == 409
        assert error_of(second) == (INVALID_REQUEST, None)
        await still_served(session, witness)
        await session.tool("touch", uri=uri)
        assert (await events.message())["method"] == "notifications/resources/updated"  # the first still works


@spec("session-management")
async def test_delete_ends_the_sessions_open_get_stream(session: RawSession, witness: RawSession) -> None:
    async with session.stream_get() as stream:
        events = SSEReader(stream)
        await events.next()  # priming: the stream is open
        assert (await session.delete()).status_code == 200
        assert await events.rest() == []  # ends, and nothing more was sent
    await still_served(witness)


# -- application/json or text/event-stream ---------------------------------------------------------------
@spec("sending-messages-to-the-server")
async def test_a_fast_request_is_answered_with_application_json(session: RawSession) -> None:
    response = await session.post(tool_call(7, "echo", {"text": "quick"}))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["id"] == 7
    assert body["result"]["content"] == [{"type": "text", "text": "quick"}]


@pytest.mark.parametrize("version", VERSIONS)
@spec("sending-messages-to-the-server")
@spec("resumability-and-redelivery")
async def test_a_request_that_sends_messages_is_answered_with_sse(
        version: str, http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    s = await initialize(http, http_server.url, version)
    async with s.stream_post(tool_call(9, "chatty", {"count": 3})) as response:
        assert response.status_code == 200
        assert response.headers["x-accel-buffering"] == "no"
        events = await SSEReader(response).rest()  # the server ends the stream after the response
    primed = version >= "2025-11-25"
    if primed:
        priming = events.pop(0)
        assert priming.id is not None
        assert priming.data == ""
        assert priming.retry == 1000
        assert priming.seq == 0
    assert all(e.data and e.retry is None for e in events)  # no empty-data event for older clients
    messages = [e.message for e in events]
    assert [m["params"]["data"] for m in messages[:-1]] == ["message 0", "message 1", "message 2"]
    assert messages[-1] == {"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": "sent 3"}]}}
    assert all(e.event == "message" for e in events)
    assert len({e.stream for e in events}) == 1
    assert [e.seq for e in events] == list(range(int(primed), int(primed) + 4))


@spec("sending-messages-to-the-server")
async def test_with_json_responses_related_messages_go_to_the_get_stream() -> None:
    app = MCPHttpApp(fixture.server, options=HttpOptions(json_response=True))
    async with serve_in_process(app) as base, httpx.AsyncClient(timeout=10) as http:
        s = await initialize(http, base + "/mcp")
        async with s.stream_get() as get:
            on_get = SSEReader(get)
            await on_get.next()  # priming
            response = await s.post(tool_call(81, "chatty", {"count": 2}))
            assert response.headers["content-type"] == "application/json"
            assert response.json()["result"]["content"][0]["text"] == "sent 2"
            said = [await on_get.message(), await on_get.message()]
        assert [m["params"]["data"] for m in said] == ["message 0", "message 1"]
    await app.manager.close()


@pytest.mark.parametrize("version", VERSIONS)
@spec("listening-for-messages-from-the-server")
async def test_the_get_stream_is_primed_only_for_2025_11_25_clients(
        version: str, http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    s = await initialize(http, http_server.url, version)
    uri = unique("fixture://watched/primed")
    await s.call("resources/subscribe", {"uri": uri})
    async with s.stream_get() as response:
        assert response.status_code == 200
        assert response.headers["x-accel-buffering"] == "no"
        events = SSEReader(response)
        if version >= "2025-11-25":
            priming = await events.next()
            assert (priming.id, priming.data, priming.retry) == ("get_0", "", 1000)
        await s.tool("touch", uri=uri)
        update = await events.next()
    assert update.data
    assert update.retry is None
    assert update.message == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}


@spec("sending-messages-to-the-server")
async def test_a_burst_larger_than_the_reader_queue_reaches_the_client_whole(session: RawSession) -> None:
    count = 3 * READER_QUEUE
    # Before the answer becomes a stream: all of it is buffered, then delivered at once.
    async with session.stream_post(tool_call(61, "chatty", {"count": count})) as response:
        before = await SSEReader(response).rest()
    assert len(before) == count + 2  # priming, the messages, the response
    assert before[-1].message["result"]["content"][0]["text"] == f"sent {count}"
    # While streaming, from a handler that never yields in between.
    gate = unique("burst")
    async with session.stream_post(tool_call(62, "burst", {"name": gate, "count": count})) as response:
        events = SSEReader(response)
        await events.next()  # priming
        assert (await events.message())["params"]["data"] == "first"
        assert await session.tool("release", name=gate) == f"{gate}: step {count}"
        during = await events.rest()
    assert [e.message["params"]["data"] for e in during[:-1]] == [f"burst {i}" for i in range(count)]
    assert during[-1].message["result"]["content"][0]["text"] == f"burst of {count} sent"


@spec("resumability-and-redelivery")
@spec("multiple-connections")
async def test_event_ids_are_unique_across_the_session_and_name_their_stream(session: RawSession) -> None:
    uri = unique("fixture://watched/ids")
    await session.call("resources/subscribe", {"uri": uri})
    streams: dict[str, list[SSEEvent]] = {}
    async with session.stream_get() as get:
        on_get = SSEReader(get)
        streams["get"] = [await on_get.next()]
        for n in range(3):
            async with session.stream_post(tool_call(n, "chatty", {"count": 2})) as post:
                streams[f"post{n}"] = await SSEReader(post).rest()
        await session.tool("touch", uri=uri)
        streams["get"].append(await on_get.next())
    ids = [e.id for events in streams.values() for e in events]
    assert None not in ids
    assert len(set(ids)) == len(ids)
    names = {key: {e.stream for e in events} for key, events in streams.items()}
    assert all(len(n) == 1 for n in names.values())  # one stream name per stream ...
    assert len(set.union(*names.values())) == len(streams)  # ... and a different one for each
    assert names["get"] == {"get"}
    for events in streams.values():
        assert [e.seq for e in events] == list(range(events[0].seq, events[0].seq + len(events)))


# -- resumability --------------------------------------------------------------------------------------------
@spec("resumability-and-redelivery")
async def test_resuming_after_a_disconnect_delivers_every_remaining_event_once_in_order(
        session: RawSession, http_server: UvicornProcess) -> None:
    gate = unique("resume")
    call = tool_call(21, "stepper", {"name": gate, "steps": 3}, progress="tok")
    async with httpx.AsyncClient(timeout=10) as doomed, session.stream_post(call, doomed) as response:
        events = SSEReader(response)
        priming = await events.next()
        started = await events.next()
    # The connection is closed now (client and all). The call goes on: a disconnect is not a cancellation.
    assert priming.data == ""
    assert priming.retry == 1000
    assert started.message["params"] == {"progressToken": "tok", "progress": 0, "total": 3, "message": "started"}
    assert await session.tool("release", name=gate) == f"{gate}: step 1"  # sent while nobody listens: stored

    async with session.stream_get(started.id) as resumed:
        assert resumed.status_code == 200
        events = SSEReader(resumed)
        replayed = await events.next()
        assert await session.tool("release", name=gate) == f"{gate}: step 2"
        live = await events.next()
        assert await session.tool("release", name=gate) == f"{gate}: step 3"
        rest = await events.rest()  # step 3 and the response; then the stream ends
    received = [replayed, live, *rest]
    assert [e.id for e in received] == [f"{started.stream}_{seq}" for seq in range(2, 6)]
    assert [e.message.get("params", {}).get("progress") for e in received[:3]] == [1, 2, 3]
    assert received[-1].message == {"jsonrpc": "2.0", "id": 21,
                                    "result": {"content": [{"type": "text", "text": f"{gate}: 3 steps done"}]}}

    # The finished stream can still be replayed from any of its ids, and the replay ends with the response.
    again = await session.get(priming.id)
    assert again.status_code == 200
    assert [e.id for e in parse_sse(again.text)] == [f"{started.stream}_{seq}" for seq in range(1, 6)]


@spec("sending-messages-to-the-server")
@spec("resumability-and-redelivery")
async def test_a_handler_can_close_its_stream_and_the_client_polls_for_the_rest(session: RawSession) -> None:
    gate = unique("poll")
    async with session.stream_post(tool_call(31, "poll", {"name": gate})) as response:
        events = await SSEReader(response).rest()  # the server closes the connection mid-call
    priming, before, hint = events
    assert priming.data == ""
    assert priming.retry == 1000
    assert before.message["params"]["data"] == "before closing"
    assert hint.retry == 1000
    assert hint.data is None
    assert hint.id is None
    assert await session.tool("release", name=gate) == f"{gate}: step 1"  # sent while nobody listens
    again = await session.get(before.id)
    assert again.status_code == 200
    rest = parse_sse(again.text)
    assert [e.id for e in rest] == [f"{before.stream}_{seq}" for seq in (2, 3)]
    assert rest[0].message["params"]["data"] == "while the client was away"
    assert rest[1].message["result"]["content"] == [{"type": "text", "text": f"{gate}: closed=True"}]


@spec("sending-messages-to-the-server")
async def test_closing_the_stream_is_refused_to_clients_older_than_2025_11_25(
        http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    old = await initialize(http, http_server.url, "2025-06-18")
    gate = unique("poll-old")
    async with old.stream_post(tool_call(32, "poll", {"name": gate})) as response:
        events = SSEReader(response)
        first = await events.next()
        assert first.message["params"]["data"] == "before closing"  # no priming event either
        assert await old.tool("release", name=gate) == f"{gate}: step 1"
        rest = await events.rest()
    assert rest[-1].message["result"]["content"] == [{"type": "text", "text": f"{gate}: closed=False"}]


@spec("resumability-and-redelivery")
@spec("listening-for-messages-from-the-server")
async def test_the_get_stream_can_be_resumed_too(session: RawSession) -> None:
    uri = unique("fixture://watched/resume-get")
    await session.call("resources/subscribe", {"uri": uri})
    async with httpx.AsyncClient(timeout=10) as doomed, session.stream_get(None, doomed) as first:
        events = SSEReader(first)
        assert (await events.next()).id == "get_0"
        await session.tool("touch", uri=uri)
        seen = await events.next()
    assert seen.id == "get_1"
    await session.tool("touch", uri=uri)  # while disconnected
    await session.tool("touch", uri=uri)
    async with session.stream_get(seen.id) as resumed:
        events = SSEReader(resumed)
        missed = [await events.next(), await events.next()]
        await session.tool("touch", uri=uri)
        live = await events.next()
    assert [e.id for e in [*missed, live]] == ["get_2", "get_3", "get_4"]  # no new priming, nothing twice
    assert all(e.message["params"] == {"uri": uri} for e in [*missed, live])


@spec("sending-messages-to-the-server")
@spec("resumability-and-redelivery")
async def test_a_slow_silent_request_is_streamed_so_that_it_can_be_resumed(session: RawSession) -> None:
    gate = unique("slow")
    async with session.stream_post(tool_call(51, "hold", {"name": gate})) as response:
        # Nothing is sent by the tool; after ``sse_after`` (0.5 s) the answer becomes a stream anyway.
        assert response.headers["content-type"].startswith("text/event-stream")
        events = SSEReader(response)
        priming = await events.next()
        assert priming.data == ""
        assert priming.id is not None
        assert await session.tool("release", name=gate) == f"{gate}: step 1"
        rest = await events.rest()
    assert [e.message for e in rest] == [
        {"jsonrpc": "2.0", "id": 51, "result": {"content": [{"type": "text", "text": f"{gate}: released"}]}}]
    assert rest[0].id == f"{priming.stream}_1"


@spec("sending-messages-to-the-server")
@pytest.mark.spec("2025-11-25/basic/utilities/cancellation#behavior-requirements")
async def test_an_explicit_cancellation_ends_the_stream_without_a_response(session: RawSession) -> None:
    gate = unique("cancelled")
    async with session.stream_post(tool_call(71, "stepper", {"name": gate, "steps": 2}, progress="c")) as response:
        events = SSEReader(response)
        await events.next()  # priming
        await events.next()  # progress 0: running
        cancel = await session.notify("notifications/cancelled", {"requestId": 71, "reason": "changed my mind"})
        assert cancel.status_code == 202
        assert await events.rest() == []  # the stream ends, and no response is sent
    assert await session.call("ping") == {}


@spec("resumability-and-redelivery")
async def test_an_unknown_last_event_id_is_a_400_json_rpc_error(session: RawSession, witness: RawSession,
                                                                http: httpx.AsyncClient,
                                                                http_server: UvicornProcess) -> None:
    async with session.stream_post(tool_call(1, "chatty", {"count": 1})) as response:
        stream = (await SSEReader(response).rest())[0].stream
    other = await initialize(http, http_server.url)
    unknown = ["nonsense", "p_", "_3", "get_x", "pdeadbeef0000_1", f"{stream}_99", "get_99999", "x" * 300 + "_1"]
    for last_event_id in unknown:
        response = await session.get(last_event_id)
        assert response.status_code == 400, (last_event_id, response.text)
        assert error_of(response) == (INVALID_REQUEST, None)
    # Another session's stream is not replayed to this one.
    foreign = await other.get(f"{stream}_1")
    assert foreign.status_code == 400
    await still_served(session, witness, other)


@spec("resumability-and-redelivery")
async def test_an_evicted_last_event_id_is_a_400_json_rpc_error() -> None:
    # In process, with an event store that keeps only the last four events.
    server = MCPServer("evicting")
    server.tool()(fixture.chatty)
    Runtime(server, backend=Backend.in_memory(max_events=4))
    app = MCPHttpApp(server)
    async with asgi_client(app) as client:
        s = await initialize(client, "/mcp")
        response = await s.post(tool_call(3, "chatty", {"count": 8}))
        assert response.headers["content-type"].startswith("text/event-stream")
        events = parse_sse(response.text)
        assert [e.seq for e in events] == list(range(10))  # priming, 8 messages, the response
        evicted = await s.get(events[1].id)
        assert evicted.status_code == 400
        assert error_of(evicted) == (INVALID_REQUEST, None)
        kept = await s.get(events[5].id)
        assert kept.status_code == 200
        assert [e.id for e in parse_sse(kept.text)] == [e.id for e in events[6:]]
        assert await s.call("ping") == {}
        await app.manager.close()


# -- messages from the server ---------------------------------------------------------------------------------
@pytest.mark.spec("2025-11-25/client/elicitation#capabilities")
async def test_a_tool_needing_a_capability_the_client_did_not_declare_is_32021_and_nothing_is_sent(
        http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    """The same error as the stateless era's (-32021, ``requiredCapabilities``); JSON-RPC errors of the
    handshake era come with HTTP 200, and the client is sent no request it cannot answer."""
    s = await initialize(http, http_server.url)  # no elicitation capability
    response = await s.request("tools/call", {"name": "ask", "arguments": {"question": "Colour?"}})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"  # no stream: nothing went to the client
    body = response.json()
    assert body["error"]["code"] == MISSING_CLIENT_CAPABILITY
    assert body["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}
    assert await s.call("ping") == {}


@spec("sending-messages-to-the-server")
async def test_an_elicitation_goes_out_on_the_calls_stream_and_the_answer_resumes_the_call(
        http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    s = await initialize(http, http_server.url, capabilities={"elicitation": {}})
    uri = unique("fixture://watched/sentinel")
    await s.call("resources/subscribe", {"uri": uri})
    async with s.stream_get() as get:
        on_get = SSEReader(get)
        await on_get.next()  # priming
        async with s.stream_post(tool_call(31, "ask", {"question": "Favourite colour?"})) as post:
            on_post = SSEReader(post)
            await on_post.next()  # priming
            ask = await on_post.message()
            assert ask["method"] == "elicitation/create"
            assert ask["params"]["mode"] == "form"
            assert ask["params"]["message"] == "Favourite colour?"
            answer = await s.post({"jsonrpc": "2.0", "id": ask["id"],
                                   "result": {"action": "accept", "content": {"answer": "blue"}}})
            assert answer.status_code == 202
            assert answer.content == b""
            rest = await on_post.rest()
        assert [e.message for e in rest] == [
            {"jsonrpc": "2.0", "id": 31, "result": {"content": [{"type": "text", "text": "accept: blue"}]}}]
        await s.tool("touch", uri=uri)
        assert (await on_get.message())["method"] == "notifications/resources/updated"  # nothing came before it


@spec("listening-for-messages-from-the-server")
@spec("multiple-connections")
async def test_unrelated_notifications_go_to_the_get_stream_only_and_once(session: RawSession) -> None:
    uri = unique("fixture://watched/unrelated")
    gate = unique("busy")
    name = unique("added").replace("-", "_")
    await session.call("resources/subscribe", {"uri": uri})
    async with session.stream_get() as get:
        on_get = SSEReader(get)
        await on_get.next()  # priming
        async with session.stream_post(tool_call(41, "stepper", {"name": gate, "steps": 1}, progress="busy")) as post:
            on_post = SSEReader(post)
            await on_post.next()  # priming
            await on_post.next()  # progress 0: a POST stream is open while the notifications go out
            added = await session.post(tool_call(42, "add_tool", {"name": name}))
            assert added.headers["content-type"] == "application/json"  # not a stream: nothing related to send
            assert added.json()["result"]["content"][0]["text"] == f"added {name}"
            await session.tool("touch", uri=uri)  # the sentinel: after it, nothing earlier can still come
            on_get_events = [await on_get.message(), await on_get.message()]
            await session.tool("release", name=gate)
            on_post_events = [e.message for e in await on_post.rest()]
    assert on_get_events == [
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}},
    ]
    assert [m.get("method") for m in on_post_events] == ["notifications/progress", None]
    assert on_post_events[-1]["id"] == 41
    tools = {t["name"] for t in (await session.call("tools/list"))["tools"]}
    assert name in tools


@spec("session-management")
async def test_the_session_limit_is_a_503_and_other_sessions_are_still_served() -> None:
    app = MCPHttpApp(fixture.server, max_sessions=2)
    async with asgi_client(app) as client:
        first = await initialize(client, "/mcp")
        second = await initialize(client, "/mcp")
        refused = await client.post("/mcp", headers=post_headers(), content=json.dumps(request_body(
            "init", "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "x", "version": "0"}})))
        assert refused.status_code == 503
        assert refused.headers["retry-after"].isdigit()
        assert "mcp-session-id" not in refused.headers
        assert error_of(refused) == (INTERNAL_ERROR, "init")
        await still_served(first, second)
        assert (await first.delete()).status_code == 200
        third = await initialize(client, "/mcp")  # room again
        await still_served(second, third)
        await app.manager.close()


@spec("sending-messages-to-the-server")
async def test_an_accept_wildcard_is_enough(session: RawSession) -> None:
    response = await session.post(request_body(1, "ping"), accept="*/*")
    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


# -- a session is its principal's -----------------------------------------------------------------------------
ISSUER = SIGNED_IN_ISSUER
UNKNOWN_SESSION = {"jsonrpc": "2.0", "id": None,
                   "error": {"code": INVALID_REQUEST, "message": "Not Found: unknown or expired session"}}
"""The answer to a session id this server does not know (``_session``), with 404."""


def owner_of(subject: str | None) -> str | None:
    return key_of(Principal(ISSUER, subject)) if subject is not None else None


@dataclass
class SignedIn:
    """The in-process app behind ``signed_in``, serving a server that records who each call ran for."""

    app: MCPHttpApp
    recorder: Recorder
    url: str
    clients: dict[str | None, httpx.AsyncClient]

    async def initialize(self, subject: str | None) -> RawSession:
        mine = await initialize(self.clients[subject], self.url)
        assert await mine.tool("whoami") == str(owner_of(subject))
        return mine

    def as_(self, subject: str | None, sid: str) -> RawSession:
        """The session ``sid`` as ``subject`` would use it, had it learned the id."""
        return RawSession(self.clients[subject], self.url, sid, LATEST)


@pytest.fixture
async def signed() -> AsyncIterator[SignedIn]:
    recorder = Recorder()
    app = MCPHttpApp(recording_server(recorder), authenticate=signed_in)
    try:
        # The clients are closed first, so the server finds no connection to wait for when it stops.
        async with serve_in_process(app) as base, contextlib.AsyncExitStack() as stack:
            clients = {subject: await stack.enter_async_context(httpx.AsyncClient(
                timeout=READ_BOUND, headers={SUBJECT_HEADER: subject} if subject else {}))
                for subject in ("alice", "bob", None)}
            yield SignedIn(app, recorder, base + "/mcp", clients)
    finally:
        await app.endpoint.stateless.close()
        await app.manager.close()


def answer_of(response: httpx.Response) -> tuple[int, str | None, Any]:
    """(status, content type, body) of a complete answer."""
    kind = response.headers.get("content-type")
    return response.status_code, kind, response.json() if kind == "application/json" else response.content


INTRUDERS = [pytest.param("alice", "bob", id="another-principal"),
             pytest.param("alice", None, id="an-anonymous-caller"),
             pytest.param(None, "alice", id="a-principal-in-an-anonymous-session")]
"""(whose session it is, who tries to use it). A session is bound to ``owner_key`` of the request that made
it: ``Principal.key`` (issuer|subject), or None without authentication; every later request must have the
same. So an anonymous caller (None) is refused a principal's session, and a principal is refused an anonymous
one (its key is not None): a session made before signing in is not taken over by whoever signs in later."""


@pytest.mark.parametrize(("owner", "intruder"), INTRUDERS)
@spec("session-management")
async def test_a_post_into_someone_elses_session_is_answered_as_an_unknown_session(
        owner: str | None, intruder: str | None, signed: SignedIn) -> None:
    """Requests, notifications and answers to the server's requests alike: the same 404 and body as for a
    session that does not exist, nothing handled, and the session still its owner's."""
    mine = await signed.initialize(owner)
    unknown = answer_of(await signed.as_(intruder, "no-such-session-" + "x" * 30).post(request_body(1, "ping")))
    assert unknown == (404, "application/json", UNKNOWN_SESSION)
    stolen = signed.as_(intruder, mine.sid)
    for body in (tool_call(2, "whoami", {}), request_body(3, "ping"),
                 {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                 {"jsonrpc": "2.0", "id": 0, "result": {}}):
        response = await stolen.post(body)
        assert answer_of(response) == unknown, body  # indistinguishable from a session that does not exist
        assert "mcp-session-id" not in response.headers
    assert signed.recorder.names() == ["whoami"]  # the owner's, in initialize(): the intruder's never ran
    assert await mine.tool("whoami") == str(owner_of(owner))
    assert [key for _, key, _ in signed.recorder.calls] == [owner_of(owner)] * 2


@pytest.mark.parametrize(("owner", "intruder"), INTRUDERS)
@spec("session-management")
@spec("listening-for-messages-from-the-server")
async def test_the_get_stream_of_someone_elses_session_is_404_and_stays_its_owners(
        owner: str | None, intruder: str | None, signed: SignedIn) -> None:
    mine = await signed.initialize(owner)
    stolen = signed.as_(intruder, mine.sid)
    async with stolen.stream_get() as response:
        assert response.status_code == 404  # at once: no stream was opened (it would never end)
        await response.aread()
    assert answer_of(response) == (404, "application/json", UNKNOWN_SESSION)
    # The owner's GET stream opens (had the intruder's attached, a second one would be 409) ...
    async with mine.stream_get() as response:
        assert response.status_code == 200
        priming = await SSEReader(response).next()
        assert priming.id == "get_0"
        # ... and the intruder cannot replay it with its event ids either.
        async with stolen.stream_get(priming.id) as replay:
            assert replay.status_code == 404
            await replay.aread()
        assert answer_of(replay) == (404, "application/json", UNKNOWN_SESSION)
        assert await mine.tool("whoami") == str(owner_of(owner))


@pytest.mark.parametrize(("owner", "intruder"), INTRUDERS)
@spec("session-management")
async def test_a_delete_of_someone_elses_session_is_404_and_the_session_lives_on(
        owner: str | None, intruder: str | None, signed: SignedIn) -> None:
    mine = await signed.initialize(owner)
    refused = await signed.as_(intruder, mine.sid).delete()
    assert answer_of(refused) == (404, "application/json", UNKNOWN_SESSION)
    assert mine.sid in signed.app.manager.live
    assert await mine.tool("whoami") == str(owner_of(owner))
    assert (await mine.delete()).status_code == 200  # its owner can end it
    assert answer_of(await mine.post(request_body(1, "ping"))) == (404, "application/json", UNKNOWN_SESSION)


@spec("session-management")
async def test_without_authentication_the_session_id_alone_names_a_session(signed: SignedIn) -> None:
    """What the check does where nobody signs in: every anonymous request has the owner key None, so any
    anonymous client holding the id is the session's owner (there is nobody to tell apart; the id's entropy
    is the protection, as on a server without authentication)."""
    mine = await signed.initialize(None)
    async with httpx.AsyncClient(timeout=READ_BOUND) as elsewhere:
        assert await RawSession(elsewhere, signed.url, mine.sid, LATEST).tool("whoami") == "None"
