"""The deprecated HTTP+SSE transport (2024-11-05): ``GET /sse`` announces where to POST, and every
answer comes back on that stream. Against the shared uvicorn process, plus one in-process check.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tests.support import http_fixture_server as fixture
from tests.support.http import (
    READ_BOUND,
    UvicornProcess,
    error_of,
    request_body,
    serve_in_process,
)
from tests.support.http_fixture_server import MAX_MESSAGE_BYTES
from tests.support.legacy_sse import connect, handshake
from tests.support.tokens import SIGNED_IN_ISSUER, SUBJECT_HEADER, Recorder, recording_server, signed_in
from wiremcp.errors import INVALID_REQUEST
from wiremcp.principal import Principal, key_of
from wiremcp.transports.http_app import MCPHttpApp

LEGACY = "2024-11-05/basic/transports#http-with-sse"
BACKWARDS = "2025-11-25/basic/transports#backwards-compatibility"

pytestmark = pytest.mark.timeout(30)


@pytest.mark.spec(LEGACY)
@pytest.mark.spec(BACKWARDS)
async def test_the_sse_stream_announces_the_endpoint_and_carries_every_answer(
        http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    async with connect(http, http_server.base_url) as client:
        init = await handshake(client)
        assert init["result"]["protocolVersion"] == "2024-11-05"
        assert init["result"]["serverInfo"]["name"] == "http-fixture"
        tools = await client.rpc(2, "tools/list")
        assert {"echo", "chatty", "touch"} <= {t["name"] for t in tools["result"]["tools"]}
        await client.send(request_body(3, "tools/call", {"name": "chatty", "arguments": {"count": 2}}))
        said = [await client.events.message() for _ in range(3)]
        assert [m.get("params", {}).get("data") for m in said[:2]] == ["message 0", "message 1"]
        assert said[2]["id"] == 3
        assert said[2]["result"]["content"][0]["text"] == "sent 2"
        # Unrelated notifications share the one stream.
        uri = f"fixture://watched/legacy-{client.session_id[:8]}"
        await client.rpc(4, "resources/subscribe", {"uri": uri})
        await client.send(request_body(5, "tools/call", {"name": "touch", "arguments": {"uri": uri}}))
        both = [await client.events.message() for _ in range(2)]
        assert {m.get("method") or m.get("id") for m in both} == {"notifications/resources/updated", 5}
        assert (await client.rpc(6, "ping"))["result"] == {}


@pytest.mark.spec(LEGACY)
async def test_each_sse_connection_is_a_session_of_its_own(http: httpx.AsyncClient,
                                                           http_server: UvicornProcess) -> None:
    async with connect(http, http_server.base_url) as a, connect(http, http_server.base_url) as b:
        assert a.session_id != b.session_id
        await handshake(a)
        await handshake(b, "2025-03-26")
        await a.send(request_body(7, "tools/call", {"name": "echo", "arguments": {"text": "for a"}}))
        assert (await b.rpc(8, "ping"))["result"] == {}  # b's stream carries b's answer, not a's
        answer = await a.events.message()
        assert answer["id"] == 7
        assert answer["result"]["content"][0]["text"] == "for a"


@pytest.mark.spec(LEGACY)
async def test_posting_errors_have_the_right_status_and_a_json_rpc_error(
        http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    base = http_server.base_url
    async with connect(http, base) as client:
        await handshake(client)
        unknown = await http.post(base + "/messages?session_id=nope", content=b"{}",
                                  headers={"content-type": "application/json"})
        assert unknown.status_code == 404
        assert error_of(unknown) == (INVALID_REQUEST, None)
        missing = await http.post(base + "/messages", content=b"{}", headers={"content-type": "application/json"})
        assert missing.status_code == 400
        assert error_of(missing) == (INVALID_REQUEST, None)
        wrong_type = await client.post(request_body(9, "ping"), **{"content-type": "text/plain"})
        assert wrong_type.status_code == 415
        assert error_of(wrong_type) == (INVALID_REQUEST, None)
        too_large = await client.post({"pad": "x" * MAX_MESSAGE_BYTES})
        assert too_large.status_code == 413
        assert error_of(too_large) == (INVALID_REQUEST, None)
        bad_origin = await client.post(request_body(9, "ping"), origin="http://evil.example")
        assert bad_origin.status_code == 403
        get_messages = await http.get(base + client.endpoint)
        assert get_messages.status_code == 405
        assert get_messages.headers["allow"] == "POST"
        post_sse = await http.post(base + "/sse", content=b"{}")
        assert post_sse.status_code == 405
        assert post_sse.headers["allow"] == "GET"
        assert (await client.rpc(10, "ping"))["result"] == {}  # the session is still served


@pytest.mark.spec(LEGACY)
async def test_closing_the_stream_ends_the_session() -> None:
    app = MCPHttpApp(fixture.server)
    deleted: asyncio.Queue[str] = asyncio.Queue()
    delete = app.manager.delete

    async def recording_delete(session_id: str) -> bool:
        found = await delete(session_id)
        deleted.put_nowait(session_id)
        return found

    app.manager.delete = recording_delete  # type: ignore[method-assign]
    async with serve_in_process(app) as base, httpx.AsyncClient(timeout=READ_BOUND) as http:
        async with httpx.AsyncClient(timeout=READ_BOUND) as doomed, connect(doomed, base) as client:
            await handshake(client)
            session_id = client.session_id
            assert session_id in app.manager.live
        # The connection is gone: the server notices, and the session with it.
        assert await asyncio.wait_for(deleted.get(), READ_BOUND) == session_id
        assert session_id not in app.manager.live
        gone = await http.post(base + client.endpoint, content=json.dumps(request_body(1, "ping")),
                               headers={"content-type": "application/json"})
        assert gone.status_code == 404
    await app.manager.close()


# -- a session is its principal's -----------------------------------------------------------------------------
ISSUER = SIGNED_IN_ISSUER
UNKNOWN_SESSION = {"jsonrpc": "2.0", "id": None,
                   "error": {"code": INVALID_REQUEST, "message": "Not Found: unknown session"}}
"""The answer to a ``session_id`` this server does not know, with 404."""


def as_(subject: str | None) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=READ_BOUND, headers={SUBJECT_HEADER: subject} if subject else {})


@pytest.mark.parametrize(("owner", "intruder"), [
    pytest.param("alice", "bob", id="another-principal"),
    pytest.param("alice", None, id="an-anonymous-caller"),
    pytest.param(None, "alice", id="a-principal-in-an-anonymous-session"),
])
@pytest.mark.spec(LEGACY)
@pytest.mark.spec("2025-11-25/basic/transports#session-management")
async def test_only_the_principal_that_opened_the_stream_can_post_into_its_session(
        owner: str | None, intruder: str | None) -> None:
    """The session an ``/sse`` stream opened is bound to its caller's ``owner_key`` (``Principal.key``, or None
    without authentication, so neither an anonymous caller nor a principal gets the other's): a POST to its
    ``/messages?session_id=...`` from anyone else is answered as for a session that does not exist, and
    nothing of it is handled or sent on the owner's stream."""
    recorder = Recorder()
    app = MCPHttpApp(recording_server(recorder), authenticate=signed_in)
    owner_key = key_of(Principal(ISSUER, owner)) if owner is not None else None
    async with serve_in_process(app) as base, as_(owner) as owners, as_(intruder) as intruders, \
            connect(owners, base) as mine:
        await handshake(mine)
        unknown = await intruders.post(base + "/messages?session_id=" + "x" * 43, content=b"{}",
                                       headers={"content-type": "application/json"})
        assert (unknown.status_code, unknown.json()) == (404, UNKNOWN_SESSION)
        for body in (request_body(5, "tools/call", {"name": "whoami", "arguments": {}}), request_body(6, "ping"),
                     {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                     {"jsonrpc": "2.0", "id": 0, "result": {}}):
            stolen = await intruders.post(base + mine.endpoint, content=json.dumps(body),
                                          headers={"content-type": "application/json"})
            assert stolen.status_code == 404, (body, stolen.text)
            assert (stolen.headers["content-type"], stolen.json()) == (
                unknown.headers["content-type"], unknown.json()), body
        assert recorder.calls == []
        # The owner's next answer is the next message on its stream: nothing of the intruder's came first.
        answer = await mine.rpc(7, "tools/call", {"name": "whoami", "arguments": {}})
        assert answer["result"]["content"][0]["text"] == str(owner_key)
        assert [key for _, key, _ in recorder.calls] == [owner_key]
    await app.manager.close()
