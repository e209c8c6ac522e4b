"""The refusals (``wiremcp.refusals``) as each HTTP transport gives them, on a real uvicorn: a new session past
the limit, and a new session while the replica drains, are the same 503, -32603 error and headers on
Streamable HTTP (``initialize``) and on the 2024-11-05 HTTP+SSE transport (a new ``/sse`` stream). The
legacy transport used to answer too many sessions with -32600 and no ``Retry-After``."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support.http import (
    CLIENT_INFO,
    LATEST,
    READ_BOUND,
    initialize,
    post_headers,
    request_body,
    serve_in_process,
)
from tests.support.legacy_sse import connect
from tests.support.notes_server import server as notes
from wiremcp.refusals import SHUTTING_DOWN, TOO_MANY_SESSIONS, Refusal
from wiremcp.transports.http_app import MCPHttpApp

pytestmark = pytest.mark.timeout(30)


@contextlib.asynccontextmanager
async def one_session_app() -> AsyncIterator[tuple[MCPHttpApp, str, httpx.AsyncClient]]:
    """The notes server behind an app that takes one session at a time; the sessions it made end with it (they
    are kept in the server's backend, which outlives the app)."""
    app = MCPHttpApp(notes, max_sessions=1)
    try:
        async with serve_in_process(app) as base, httpx.AsyncClient(timeout=READ_BOUND) as http:
            yield app, base, http
    finally:
        await app.manager.close()


async def new_session(http: httpx.AsyncClient, base: str, transport: str) -> httpx.Response:
    """A new session's first answer: ``initialize`` (Streamable HTTP) or a new ``/sse`` stream's head."""
    if transport == "streamable-http":
        params = {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": CLIENT_INFO}
        return await http.post(base + "/mcp", content=json.dumps(request_body(7, "initialize", params)),
                               headers=post_headers())
    async with http.stream("GET", base + "/sse", headers={"accept": "text/event-stream"}) as response:
        await response.aread()
        return response


def assert_refused(response: httpx.Response, refusal: Refusal, request_id: object) -> None:
    assert response.status_code == refusal.status, response.text
    assert response.json() == {"jsonrpc": "2.0", "id": request_id,
                               "error": {"code": refusal.code, "message": refusal.message}}
    headers = {name.decode(): value.decode() for name, value in refusal.headers()}
    assert {name: response.headers.get(name) for name in headers} == headers


@pytest.mark.parametrize("transport", ["streamable-http", "legacy-sse"])
async def test_a_session_past_the_limit_is_the_same_refusal_on_every_transport(transport: str) -> None:
    async with one_session_app() as (_, base, http):
        await initialize(http, base + "/mcp")  # the one session there may be
        refused = await new_session(http, base, transport)
    assert_refused(refused, TOO_MANY_SESSIONS, 7 if transport == "streamable-http" else None)


@pytest.mark.parametrize("transport", ["streamable-http", "legacy-sse"])
async def test_a_new_session_while_draining_is_the_same_refusal_on_every_transport(transport: str) -> None:
    async with one_session_app() as (app, base, http):
        app.manager.draining = True  # what the drain sets at SIGTERM
        refused = await new_session(http, base, transport)
        app.manager.draining = False
    assert_refused(refused, SHUTTING_DOWN, 7 if transport == "streamable-http" else None)


async def test_the_legacy_transports_limit_counts_its_own_streams_too() -> None:
    async with one_session_app() as (_, base, http), connect(http, base):
        refused = await new_session(http, base, "streamable-http")
    assert_refused(refused, TOO_MANY_SESSIONS, 7)
