"""A stranger cannot keep someone else's session alive: under a real uvicorn with bearer tokens for alice and
bob, one session allowed and a one-second idle timeout, alice's session ends on time while bob sends request
after request into it (each answered 404, as an unknown session), with sessions in memory and in a real Redis.
The next ``initialize`` is accepted once it has ended; had bob's requests renewed it, none ever would be."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.http import (
    LATEST,
    READ_BOUND,
    RawSession,
    UvicornProcess,
    post_headers,
    request_body,
    run_uvicorn,
)
from tests.support.redis import RedisServer

SERVER = "tests.support.settings_server:server"
IDLE = 1.0
BOUND = 20 * IDLE
"""Failure bound for alice's session to end; it ends after ``IDLE`` (and, on Redis, the copy bound)."""
ENV = {"WIREMCP_AUTH_RESOURCE": "https://mcp.example.test/mcp", "WIREMCP_AUTH_ISSUER": "https://static.example.test",
       "WIREMCP_AUTH_STATIC_TOKENS": "alice-token=alice, bob-token=bob", "WIREMCP_MAX_SESSIONS": "1",
       "WIREMCP_SESSION_IDLE_SECONDS": str(IDLE), "WIREMCP_JSON_RESPONSE": "true"}

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(params=["memory", "redis"])
def served(request: pytest.FixtureRequest) -> Iterator[UvicornProcess]:
    env = dict(ENV)
    if request.param == "redis":
        redis: RedisServer = request.getfixturevalue("redis")
        env.update({"WIREMCP_REDIS_URL": redis.url, "WIREMCP_REDIS_PREFIX": f"own{time.monotonic_ns()}"})
    with run_uvicorn(SERVER, env) as process:
        yield process


def bearer(token: str) -> dict[str, str]:
    return {**post_headers(), "authorization": f"Bearer {token}"}


async def initialize(http: httpx.AsyncClient, url: str, token: str) -> httpx.Response:
    params = {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "owner-test", "version": "0"}}
    return await http.post(url, content=json.dumps(request_body(1, "initialize", params)), headers=bearer(token))


async def test_a_strangers_requests_do_not_keep_a_session_alive(served: UvicornProcess) -> None:
    async with httpx.AsyncClient(timeout=READ_BOUND) as http:
        opened = await initialize(http, served.url, "alice-token")
        assert opened.status_code == 200, opened.text
        sid = opened.headers["mcp-session-id"]
        alices = RawSession(http, served.url, sid, LATEST)
        ready = await alices.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                  authorization="Bearer alice-token")
        assert ready.status_code == 202, ready.text
        stranger = {"authorization": "Bearer bob-token", "mcp-session-id": sid}
        deadline = time.monotonic() + BOUND
        tries = 0
        while True:  # bob knocks on alice's session, then anyone may try to open the one place again
            knocked = await http.post(served.url, content=json.dumps(request_body(2, "ping")),
                                      headers={**bearer("bob-token"), **stranger})
            assert knocked.status_code == 404, knocked.text
            assert "mcp-session-id" not in knocked.headers
            assert (await http.get(served.url, headers={**stranger, "accept": "text/event-stream"})).status_code == 404
            tries += 1
            reopened = await initialize(http, served.url, "bob-token")
            if reopened.status_code == 200:
                break
            assert reopened.status_code == 503, reopened.text
            assert time.monotonic() < deadline, f"alice's session outlived {BOUND}s of bob's {tries} requests"
        gone = await alices.request("ping", authorization="Bearer alice-token")
    assert gone.status_code == 404, gone.text
    assert tries > 1  # bob's requests did run while alice's session was still there
