"""Rate limits end to end (``tests.support.rate_limited_server``: five ``echo`` calls a minute per caller,
five ``note`` calls a minute per session): two real ``uvicorn app:asgi`` replicas on one real
``redis-server`` share the buckets, so a caller whose requests alternate between them gets five calls in
all, not five on each; the sixth is answered 429 with ``Retry-After`` and the JSON-RPC error -32023 with
``data.retryAfterMs`` (the draft SEP-3304), in the stateless era (one POST per request, ``_meta``) and in
the handshake era (``Mcp-Session-Id``). Another session is not slowed by the one refused. Over stdio, the
one local client gets the same JSON-RPC error.

Without authentication, ``by="principal"`` counts a caller by its address: both replicas see 127.0.0.1,
so the test's requests are one caller's.

The SEP is a draft with no section to name yet: these tests carry no spec marker.
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.http import RawSession, UvicornProcess, error_of, initialize, request_body, run_replicas
from tests.support.rate_limited_server import LIMIT
from tests.support.redis import RedisServer
from tests.support.replicas import replica_env
from tests.support.stateless_http import Call, meta, post, tool
from tests.support.stdio import Spawn, StdioProcess, spawn  # noqa: F401 - spawn: the fixture of the stdio test
from wiremcp.errors import RATE_LIMITED

SERVER = "tests.support.rate_limited_server:server"

pytestmark = pytest.mark.timeout(60)

_texts = itertools.count(1)

FULL_WAIT_MS = 60_000 // LIMIT
"""The longest a refused caller waits for a token: one token's time, at five a minute."""


@pytest.fixture
def replicas(redis: RedisServer) -> Iterator[tuple[UvicornProcess, UvicornProcess]]:
    """Replicas A and B on one Redis, under a key prefix of this test's own (fresh buckets). Answers are
    JSON unless a call takes seconds, so that every status is the call's own."""
    prefix = f"rl{uuid.uuid4().hex[:12]}"
    envs = {name: {**replica_env(redis, name), "WIREMCP_REDIS_PREFIX": prefix, "WIREMCP_SSE_AFTER_SECONDS": "5"}
            for name in ("A", "B")}
    with run_replicas(SERVER, envs) as running:
        yield running["A"], running["B"]


def assert_rate_limited(response: httpx.Response, rid: int | str) -> int:
    """``response`` is the refusal SEP-3304 describes, to the request ``rid``; its ``retryAfterMs``."""
    assert response.status_code == 429, (response.status_code, response.text)
    code, answered = error_of(response)
    assert (code, answered) == (RATE_LIMITED, rid), response.text
    data = response.json()["error"]["data"]
    retry_ms = data["retryAfterMs"]
    assert isinstance(retry_ms, int)
    assert 0 < retry_ms <= FULL_WAIT_MS, data
    assert (data["limit"], data["remaining"]) == (LIMIT, 0), data
    assert response.headers["retry-after"] == str(math.ceil(retry_ms / 1000)), response.headers
    assert response.headers["ratelimit-limit"] == str(LIMIT)
    assert response.headers["ratelimit-remaining"] == "0"
    return int(retry_ms)


def text_of(response: httpx.Response, rid: int | str) -> str:
    assert response.status_code == 200, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/json", response.headers
    body = response.json()
    assert body["id"] == rid, body
    assert "error" not in body, body
    return str(body["result"]["content"][0]["text"])


async def test_stateless_calls_to_either_replica_share_one_bucket(
        replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    calls: list[tuple[Call, httpx.Response]] = []
    for i in range(LIMIT + 3):
        call = tool("echo", {"text": f"call {i}"})
        calls.append((call, await post(http, replicas[i % 2].url, call)))
    statuses = [response.status_code for _, response in calls]
    assert statuses.count(200) == LIMIT, statuses
    assert statuses == [200] * LIMIT + [429] * 3
    for i, (call, response) in enumerate(calls[:LIMIT]):
        assert text_of(response, call.rid) == f"call {i}"
    for call, response in calls[LIMIT:]:
        assert "mcp-session-id" not in response.headers
        assert_rate_limited(response, call.rid)


def on(session: RawSession, replica: UvicornProcess) -> RawSession:
    """The same session, addressed to ``replica``."""
    return RawSession(session.client, replica.url, session.sid, session.version)


async def call_tool(session: RawSession, name: str, text: str) -> tuple[int, httpx.Response]:
    """A ``tools/call`` on ``session``: its request id and the answer."""
    rid = session.next_id()
    return rid, await session.post(request_body(rid, "tools/call", {"name": name, "arguments": {"text": text}}))


async def test_handshake_era_calls_of_one_caller_on_either_replica_share_one_bucket(
        replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    """``by="principal"`` without a principal counts the address before the session: a second session from
    the same address is the same caller."""
    a, b = replicas
    session = await initialize(http, a.url)
    both = (session, on(session, b))
    answers = [await call_tool(both[i % 2], "echo", f"call {i}") for i in range(LIMIT + 1)]
    statuses = [response.status_code for _, response in answers]
    assert statuses.count(200) == LIMIT, statuses
    assert statuses == [200] * LIMIT + [429]
    for i, (rid, response) in enumerate(answers[:LIMIT]):
        assert text_of(response, rid) == f"call {i}"
    rid, refused = answers[-1]
    assert_rate_limited(refused, rid)

    again = await initialize(http, b.url)  # a new session, the same address: the same caller
    rid, refused = await call_tool(again, "echo", "again")
    assert_rate_limited(refused, rid)
    assert await again.tool("note", text="still served") == "noted: still served"  # another rule's bucket


async def test_a_session_refused_slows_no_other_session(
        replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    """``note`` is limited per session (``by="session"``): one session spending its calls on both replicas
    is refused, and another session, from the same address, is served on both as if nothing happened."""
    a, b = replicas
    greedy = await initialize(http, a.url)
    greedy_on = (greedy, on(greedy, b))
    other = await initialize(http, b.url)
    other_on = (on(other, a), other)
    for i in range(LIMIT):
        text = f"greedy {next(_texts)}"
        assert await greedy_on[i % 2].tool("note", text=text) == f"noted: {text}"
    for at in greedy_on:
        rid, refused = await call_tool(at, "note", "more")
        assert_rate_limited(refused, rid)
    for at in (*other_on, *other_on):
        assert await at.tool("note", text="mine") == "noted: mine"


async def stdio_calls(process: StdioProcess, count: int, **extra: Any) -> list[dict[str, Any]]:
    """``count`` calls of ``echo``, one after the other, with ``extra`` in their params; the answers."""
    answers = []
    for i in range(count):
        await process.request(i + 1, "tools/call", {"name": "echo", "arguments": {"text": f"call {i}"}, **extra})
        answers.append(await process.response(i + 1))
    return answers


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_over_stdio_the_one_local_client_is_refused_with_retry_after_ms(
        era: str, spawn: Spawn) -> None:  # noqa: F811 - spawn: the fixture imported from tests.support.stdio
    process = await spawn(SERVER)
    if era == "handshake":
        await process.initialize()
        answers = await stdio_calls(process, LIMIT + 2)
    else:
        answers = await stdio_calls(process, LIMIT + 2, _meta=meta())
    allowed = [answer for answer in answers if "result" in answer]
    assert len(allowed) == LIMIT, answers
    assert [a["result"]["content"][0]["text"] for a in allowed] == [f"call {i}" for i in range(LIMIT)]
    for refused in answers[LIMIT:]:
        error = refused["error"]
        assert error["code"] == RATE_LIMITED, refused
        assert 0 < error["data"]["retryAfterMs"] <= FULL_WAIT_MS, refused
        assert (error["data"]["limit"], error["data"]["remaining"]) == (LIMIT, 0), refused
    await process.close_stdin()
    assert await process.wait_exit() == 0
    assert "Traceback" not in await process.stderr_to_eof()


async def test_with_redis_away_a_stateless_call_is_503_with_retry_after_and_served_once_it_is_back(
        replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient, redis: RedisServer) -> None:
    redis.stop()
    try:
        away = tool("echo", {"text": "away"})
        response = await post(http, replicas[0].url, away)
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "1"
        assert response.json()["id"] == away.rid
    finally:
        redis.start()
    back = tool("echo", {"text": "back"})
    assert text_of(await post(http, replicas[1].url, back), back.rid) == "back"
