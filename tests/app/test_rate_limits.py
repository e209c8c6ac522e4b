"""``wiremcp.rate_limits``: the in-memory buckets (burst, refill, when to retry, the keys kept, the calls
running), and the ``RateLimit`` middleware: which requests count, who a caller is, the cap on tool calls
running at once, and the error a refused caller gets (-32023, ``data.retryAfterMs``) in both eras. Time is a
clock the test moves; held tools wait on events."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from wiremcp import MCPServer
from wiremcp.errors import RATE_LIMITED, MCPError, RateLimited
from wiremcp.middleware import Call, CallNext
from wiremcp.principal import Principal
from wiremcp.rate_limits import InMemoryRateLimits, RateLimit, Taken
from wiremcp.session import ServerSession
from wiremcp.state import SessionState
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

STATELESS = "2026-07-28"
ERAS = pytest.mark.parametrize("version", ["2025-11-25", STATELESS])
ALICE = Principal("https://issuer.example", "alice")
BOB = Principal("https://issuer.example", "bob")


class Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


class Held:
    """Holds the calls of a tool until released, counting those that arrived."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.arrived = 0
        self.all_arrived = asyncio.Event()
        self.release = asyncio.Event()


def _server(held: Held | None = None) -> MCPServer:
    server = MCPServer("limited")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    def expensive() -> str:
        return "spent"

    @server.tool()
    async def hold() -> str:
        assert held is not None
        held.arrived += 1
        if held.arrived >= held.expected:
            held.all_arrived.set()
        await held.release.wait()
        return "released"

    return server


async def _call(client: Client, name: str, arguments: JSONObject | None = None) -> JSONObject:
    """The whole response to a ``tools/call`` (with the stateless era's ``_meta`` when it speaks it)."""
    params: JSONObject = {"name": name, "arguments": arguments or {}}
    return await client.request_raw("tools/call", client.with_meta(params) if client.stateless else params)


def _refused(response: JSONObject) -> bool:
    return "error" in response and response["error"]["code"] == RATE_LIMITED


# == the in-memory store =========================================================================================


async def test_a_new_bucket_is_full_and_gives_its_burst_at_once() -> None:
    store = InMemoryRateLimits(clock=Clock())
    taken = [await store.take("k", 1.0, 3) for _ in range(4)]
    assert taken[:3] == [Taken(True, 2), Taken(True, 1), Taken(True, 0)]
    assert taken[3] == Taken(False, 0, 1.0)


async def test_a_bucket_refills_at_its_rate_up_to_its_burst() -> None:
    clock = Clock()
    store = InMemoryRateLimits(clock=clock)
    assert (await store.take("k", 2.0, 2)).allowed
    assert (await store.take("k", 2.0, 2)).allowed
    refused = await store.take("k", 2.0, 2)
    assert not refused.allowed
    assert refused.retry_after == pytest.approx(0.5)  # one token in half a second at 2 a second
    clock.now += 0.25
    again = await store.take("k", 2.0, 2)
    assert not again.allowed
    assert again.retry_after == pytest.approx(0.25)
    clock.now += 0.25
    assert (await store.take("k", 2.0, 2)).allowed
    clock.now += 3600  # a long pause refills to the burst, no more
    assert [(await store.take("k", 2.0, 2)).allowed for _ in range(3)] == [True, True, False]


async def test_past_max_keys_the_least_recently_used_bucket_is_forgotten() -> None:
    store = InMemoryRateLimits(max_keys=2, clock=Clock())
    await store.take("a", 1.0, 1)
    await store.take("b", 1.0, 1)
    assert not (await store.take("a", 1.0, 1)).allowed  # a is used again: b is now the least recent
    await store.take("c", 1.0, 1)  # a third key: b is forgotten
    assert not (await store.take("a", 1.0, 1)).allowed  # a was kept (still empty)
    assert (await store.take("b", 1.0, 1)).allowed  # b came back full


async def test_enter_counts_calls_running_up_to_the_limit_and_leave_ends_them() -> None:
    store = InMemoryRateLimits()
    assert await store.enter("k", 2)
    assert await store.enter("k", 2)
    assert not await store.enter("k", 2)
    assert await store.enter("other", 2)  # each key on its own
    await store.leave("k")
    assert await store.enter("k", 2)
    for _ in range(3):
        await store.leave("k")  # (one more than entered: nothing goes negative)
    assert await store.enter("k", 1)
    assert not await store.enter("k", 1)


# == the middleware: what counts ================================================================================


def test_settings_are_checked_and_the_defaults_follow_the_rate() -> None:
    for bad in ({"rate": 0}, {"rate": 1, "per": 0}, {"rate": 1, "burst": 0}, {"rate": 1, "concurrent": 0},
                {"rate": 1, "by": "ip"}):
        with pytest.raises(ValueError, match="RateLimit"):
            RateLimit(**bad)
    assert RateLimit(0.5).burst == 1
    assert RateLimit(2.5).burst == 3
    assert RateLimit(10, per=60).rate == pytest.approx(10 / 60)
    assert RateLimit(5).name == RateLimit(5).name  # the same on every replica
    assert RateLimit(5).name != RateLimit(6).name
    assert RateLimit(5, concurrent=2).name != RateLimit(5, concurrent=3).name
    assert RateLimit(5, name="tools").name == "tools"


@ERAS
async def test_over_the_limit_a_caller_gets_rate_limited_with_when_to_retry(version: str) -> None:
    clock = Clock()
    server = _server()
    server.add_middleware(RateLimit(1, burst=2, methods=["tools/call"], store=InMemoryRateLimits(clock=clock)))
    async with Client(server, protocol_version=version, principal=ALICE) as client:
        first, second, third = [await _call(client, "echo", {"text": "x"}) for _ in range(3)]
        assert len(await client.list_tools()) == 3  # another method: not counted
        clock.now += 1.0
        fourth = await _call(client, "echo", {"text": "x"})
    assert "result" in first
    assert "result" in second
    assert third["error"]["code"] == RATE_LIMITED == -32023
    assert third["error"]["data"] == {"retryAfterMs": 1000, "limit": 2, "remaining": 0}
    assert third["error"]["message"] == "Rate limited: retry after 1000 ms"
    assert "result" in fourth


async def test_with_tools_only_the_calls_of_those_tools_count() -> None:
    server = _server()
    server.add_middleware(RateLimit(1, tools=["expensive"], store=InMemoryRateLimits(clock=Clock())))
    async with Client(server) as client:
        spent = [await _call(client, "expensive") for _ in range(2)]
        free = [await _call(client, "echo", {"text": "x"}) for _ in range(3)]
        assert await client.ping() == {}
        assert await client.ping() == {}
    assert ["result" in r for r in spent] == [True, False]
    assert all("result" in r for r in free)


async def test_each_tool_has_its_own_bucket_and_unknown_names_share_one() -> None:
    server = _server()
    store = InMemoryRateLimits(clock=Clock())
    server.add_middleware(RateLimit(1, methods=["tools/call"], each_tool=True, store=store))
    async with Client(server) as client:
        echo = [await _call(client, "echo", {"text": "x"}) for _ in range(2)]
        expensive = await _call(client, "expensive")
        made_up = [await _call(client, name) for name in ("made-up-1", "made-up-2")]
    assert ["result" in r for r in echo] == [True, False]
    assert "result" in expensive
    assert made_up[0]["error"]["code"] != RATE_LIMITED  # the server's answer: no such tool
    assert _refused(made_up[1])  # what clients send makes no new bucket
    assert len(store._buckets) == 3


async def test_notifications_are_never_limited() -> None:
    server = _server()
    seen: list[str] = []
    server.add_middleware(RateLimit(1, store=InMemoryRateLimits(clock=Clock())))

    @server.add_middleware
    async def noted(call: Call, call_next: CallNext) -> JSONObject | None:
        if call.notification:
            seen.append(call.method)
        return await call_next()

    async def roots(params: JSONObject) -> JSONObject:
        return {"roots": []}

    async with Client(server, roots=roots) as client:  # initialize took the one token
        assert _refused(await client.request_raw("ping"))
        await client.notify("notifications/roots/list_changed")
    assert seen == ["notifications/initialized", "notifications/roots/list_changed"]


async def test_the_runtimes_store_is_the_default() -> None:
    class Spy(InMemoryRateLimits):
        def __init__(self) -> None:
            super().__init__()
            self.keys: list[str] = []

        async def take(self, key: str, rate: float, burst: int) -> Taken:
            self.keys.append(key)
            return await super().take(key, rate, burst)

    server = _server()
    spy = server.runtime.backend.rate_limits = Spy()
    rule = server.add_middleware(RateLimit(100, methods=["tools/call"]))
    async with Client(server, principal=ALICE) as client:
        await client.call_tool("echo", {"text": "x"})
    assert spy.keys == [f"{rule.name}|p:{ALICE.key}"]


# == the middleware: who a caller is ============================================================================


async def test_each_principal_has_its_own_bucket() -> None:
    server = _server()
    server.add_middleware(RateLimit(1, methods=["tools/call"], store=InMemoryRateLimits(clock=Clock())))
    async with Client(server, principal=ALICE) as alice, Client(server, principal=BOB) as bob:
        assert "result" in await _call(alice, "echo", {"text": "x"})
        assert _refused(await _call(alice, "echo", {"text": "x"}))
        assert "result" in await _call(bob, "echo", {"text": "x"})


def test_who_a_caller_is() -> None:
    server = MCPServer("keys")
    session = ServerSession(server, SessionState(id="sess-1"))
    nameless = ServerSession(server, SessionState())
    try:
        def call(**kwargs: Any) -> Call:
            return Call(server, "tools/call", {"name": "echo"}, request_id=1, **kwargs)

        by_principal, by_session, by_peer = RateLimit(1), RateLimit(1, by="session"), RateLimit(1, by="peer")
        both = call(session=session, peer="203.0.113.7")
        for rule in (by_principal, by_session, by_peer):  # a principal wins, whatever ``by`` says
            assert rule.caller(call(principal=ALICE, session=session, peer="203.0.113.7")) == f"p:{ALICE.key}"
        assert by_session.caller(both) == "s:sess-1"
        assert by_peer.caller(both) == "a:203.0.113.7"
        assert by_principal.caller(both) == "a:203.0.113.7"
        assert by_session.caller(call(peer="203.0.113.7")) == "a:203.0.113.7"  # what the message has
        assert by_peer.caller(call(session=session)) == "s:sess-1"
        assert by_session.caller(call(session=nameless)) == "local"  # stdio: a session without an id
        assert by_peer.caller(call()) == "local"
        assert by_session.caller(call(session=session, stateless=True)) == "local"  # a stateless call has none
    finally:
        session.close()
        nameless.close()


async def test_callers_without_a_principal_in_memory_are_the_one_local_client() -> None:
    server = _server()
    store = InMemoryRateLimits(clock=Clock())
    rule = server.add_middleware(RateLimit(1, methods=["tools/call"], store=store))
    async with Client(server) as first, Client(server) as second:
        assert "result" in await _call(first, "echo", {"text": "x"})
        assert _refused(await _call(second, "echo", {"text": "x"}))
    assert list(store._buckets) == [f"{rule.name}|local"]


# == the middleware: tool calls at once =========================================================================


@ERAS
async def test_at_most_concurrent_tool_calls_of_a_caller_run_at_once(version: str) -> None:
    held = Held(expected=2)
    server = _server(held)
    server.add_middleware(RateLimit(1000, concurrent=2, store=InMemoryRateLimits(clock=Clock())))
    async with Client(server, protocol_version=version, principal=ALICE) as client, \
            Client(server, protocol_version=version, principal=BOB) as other:
        running = [asyncio.ensure_future(_call(client, "hold")) for _ in range(2)]
        await held.all_arrived.wait()
        refused = await _call(client, "echo", {"text": "x"})
        assert "result" in await _call(other, "echo", {"text": "x"})  # another caller's calls are its own
        assert await client.request("tools/list")  # only tools/call is capped
        held.release.set()
        done = await asyncio.gather(*running)
        again = await _call(client, "echo", {"text": "x"})
    assert _refused(refused)
    assert refused["error"]["message"] == "Rate limited: at most 2 tool calls at once: retry after 1000 ms"
    assert refused["error"]["data"] == {"retryAfterMs": 1000}
    assert [r["result"]["content"][0]["text"] for r in done] == ["released", "released"]
    assert "result" in again


async def test_a_call_that_fails_inside_the_cap_still_leaves_its_place() -> None:
    server = _server()

    @server.tool()
    def broken() -> str:
        raise RuntimeError("bug")

    server.add_middleware(RateLimit(1000, concurrent=1, store=InMemoryRateLimits(clock=Clock())))

    @server.add_middleware
    async def refuse(call: Call, call_next: CallNext) -> JSONObject | None:
        if call.arguments.get("text") == "no":
            raise MCPError(-32001, "no")
        if call.arguments.get("text") == "bug":
            raise RuntimeError("bug")
        return await call_next()

    async with Client(server) as client:
        assert (await _call(client, "echo", {"text": "no"}))["error"]["code"] == -32001
        assert (await _call(client, "echo", {"text": "bug"}))["error"]["code"] == -32603
        assert (await _call(client, "broken"))["result"]["isError"] is True
        assert "result" in await _call(client, "echo", {"text": "yes"})


async def test_a_cancelled_call_leaves_its_place() -> None:
    held = Held(expected=1)
    server = _server(held)
    server.add_middleware(RateLimit(1000, concurrent=1, store=InMemoryRateLimits(clock=Clock())))
    async with Client(server) as client:
        running = asyncio.ensure_future(client.request_raw("tools/call", {"name": "hold", "arguments": {}}, id="h"))
        await held.all_arrived.wait()
        assert _refused(await _call(client, "echo", {"text": "x"}))
        await client.notify("notifications/cancelled", {"requestId": "h"})
        assert "result" in await _call(client, "echo", {"text": "x"})
        running.cancel()


def test_the_error_is_minus_32023_with_retry_after_in_milliseconds() -> None:
    error = RateLimited(1.2345, limit=10, remaining=0)
    assert error.code == RATE_LIMITED == -32023
    assert error.to_error()["data"] == {"retryAfterMs": 1235, "limit": 10, "remaining": 0}
    assert RateLimited(-1).to_error()["data"] == {"retryAfterMs": 0}
