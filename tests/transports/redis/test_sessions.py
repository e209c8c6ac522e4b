"""``RedisSessionStore`` against a real redis-server: the state, the cross-replica cap, idle expiry by
TTL (renewed by every use), and a Redis that goes away and comes back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from tests.support import http_fixture_server as fixture
from tests.support.cluster import TIMEOUT, fail_while_away, until
from tests.support.http import FakeClock, initialize, serve_in_process
from tests.support.redis import RedisServer
from wiremcp.state import SessionState
from wiremcp.transports.redis.connection import Keys, Redis, connect
from wiremcp.transports.redis.sessions import RedisSessionStore
from wiremcp.transports.sessions import SessionManager
from wiremcp.transports.streamable_http import HttpOptions, StreamableHTTPEndpoint
from wiremcp.unavailable import StoreUnavailable

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def client(redis_server: RedisServer) -> AsyncIterator[Redis]:
    client = connect(redis_server.url, timeout=TIMEOUT)
    yield client
    await client.aclose()


def full_state(sid: str) -> SessionState:
    return SessionState(
        id=sid, protocol_version="2025-11-25",
        client_capabilities={"elicitation": {"form": {}}, "roots": {"listChanged": True}},
        client_info={"name": "tester", "version": "1.2.3", "title": "Tëster"},
        server_capabilities=["tools", "resources", "prompts"], log_level="warning",
        subscriptions={"fixture://watched", "file:///tmp/a b.txt", "fixture://grüße"},
        initialized=True, ready=True, owner="https://issuer.example|alice")


async def test_create_get_save_delete_and_count(client: Redis, redis_keys: Keys) -> None:
    store = RedisSessionStore(client, redis_keys, idle_timeout=60)
    assert await store.count() == 0
    state = SessionState(id="s1", protocol_version="2025-06-18")
    assert await store.create(state) is True
    assert await store.create(SessionState(id="s2")) is True
    assert await store.count() == 2

    got = await store.get("s1")
    assert got == state
    assert got is not state
    got.log_level = "debug"
    got.ready = True
    got.subscriptions.add("fixture://watched")
    await store.save(got)
    assert await store.get("s1") == got
    assert await store.get("unknown") is None

    assert await store.delete("s1") is True
    assert await store.delete("s1") is False
    assert await store.get("s1") is None
    assert await store.count() == 1
    assert await store.get("s2") == SessionState(id="s2")


async def test_every_field_of_the_state_round_trips(client: Redis, redis_keys: Keys) -> None:
    store = RedisSessionStore(client, redis_keys, idle_timeout=60)
    state = full_state("full")
    assert state.to_dict()["subscriptions"] == sorted(state.subscriptions)
    assert await store.create(state)
    created = await store.get("full")
    assert created == state
    assert created is not None
    assert isinstance(created.subscriptions, set)
    assert created.owner == "https://issuer.example|alice"

    created.subscriptions.discard("fixture://watched")
    created.subscriptions.add("fixture://items/7")
    created.owner = None
    await store.save(created)
    saved = await store.get("full")
    assert saved is not None
    assert saved.subscriptions == {"file:///tmp/a b.txt", "fixture://grüße", "fixture://items/7"}
    assert saved.owner is None
    assert saved == created


async def test_the_cap_holds_across_replicas_under_concurrent_creates(
        redis_server: RedisServer, client: Redis, redis_keys: Keys) -> None:
    other = connect(redis_server.url, timeout=TIMEOUT)  # a second replica: its own client and store
    try:
        stores = [RedisSessionStore(client, redis_keys, idle_timeout=60),
                  RedisSessionStore(other, redis_keys, idle_timeout=60)]
        results = await asyncio.gather(*(stores[i % 2].create(SessionState(id=f"s{i}"), limit=10)
                                         for i in range(50)))
        assert results.count(True) == 10, results
        assert await stores[0].count() == 10
        assert await stores[1].count() == 10
        for i, created in enumerate(results):
            assert (await stores[(i + 1) % 2].get(f"s{i}") is not None) == created
        # Room again once one session is gone, for either replica.
        assert await stores[1].create(SessionState(id="late"), limit=10) is False
        assert await stores[0].delete(f"s{results.index(True)}")
        assert await stores[1].create(SessionState(id="late"), limit=10) is True
        assert await stores[0].count() == 10
    finally:
        await other.aclose()


async def test_an_idle_session_expires_by_its_ttl(client: Redis, redis_keys: Keys) -> None:
    store = RedisSessionStore(client, redis_keys, idle_timeout=0.2)
    state = SessionState(id="idle")
    assert await store.create(state)
    assert 0 < await client.pttl(redis_keys.session("idle")) <= 200
    assert await store.count() == 1

    async def gone() -> bool:  # neither get() nor touch(): they would restart the idle clock
        return await client.exists(redis_keys.session("idle")) == 0 and await store.count() == 0

    await until(gone, timeout=5, what="the idle session's expiry")
    assert await store.get("idle") is None
    # Nothing brings it back: not a late touch, not a late save.
    await store.touch("idle")
    await store.save(state)
    assert await store.get("idle") is None
    assert await store.count() == 0
    assert await client.zscore(redis_keys.sessions, "idle") is None


async def test_get_touch_and_save_restart_the_idle_clock(client: Redis, redis_keys: Keys) -> None:
    idle_ms = 400
    store = RedisSessionStore(client, redis_keys, idle_timeout=idle_ms / 1000)
    state = SessionState(id="busy")
    key = redis_keys.session("busy")
    assert await store.create(state)

    async def aged() -> bool:
        return 0 < await client.pttl(key) < idle_ms - 150

    renewals: list[Callable[[], Awaitable[object]]] = [
        lambda: store.get("busy"), lambda: store.touch("busy"), lambda: store.save(state)]
    for renew in renewals:
        await until(aged, timeout=5, what="the session's ageing")
        before = await client.zscore(redis_keys.sessions, "busy")
        assert before is not None
        await renew()
        assert await client.pttl(key) > idle_ms - 100  # the TTL starts over...
        after = await client.zscore(redis_keys.sessions, "busy")
        assert after is not None
        assert after > before  # ...and so does the expiry the count goes by
    # More than one idle timeout has passed since creation: the renewals kept it alive.
    assert await store.get("busy") == state
    assert await store.count() == 1


async def test_saving_or_touching_a_deleted_session_does_not_resurrect_it(client: Redis, redis_keys: Keys) -> None:
    store = RedisSessionStore(client, redis_keys, idle_timeout=60)
    state = full_state("gone")
    assert await store.create(state)
    assert await store.delete("gone")
    await store.save(state)  # a request that was in flight when another replica deleted the session
    await store.touch("gone")
    assert await store.get("gone") is None
    assert await store.count() == 0
    assert await client.exists(redis_keys.session("gone")) == 0
    assert await client.zscore(redis_keys.sessions, "gone") is None


async def test_redis_away_raises_store_unavailable_and_its_return_needs_no_new_store(
        redis_server: RedisServer, client: Redis, redis_keys: Keys) -> None:
    store = RedisSessionStore(client, redis_keys, idle_timeout=60)
    state = full_state("kept")
    assert await store.create(state)
    # Several pooled connections, all of which Redis closes when it stops.
    assert all(s == state for s in await asyncio.gather(*(store.get("kept") for _ in range(8))))
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "create": lambda: store.create(SessionState(id="new"), limit=10),
        "get": lambda: store.get("kept"),
        "save": lambda: store.save(state),
        "touch": lambda: store.touch("kept"),
        "delete": lambda: store.delete("kept"),
        "count": lambda: store.count(),
    }
    await fail_while_away(redis_server, calls)
    # The same store (and client) again, with its scripts reloaded and its stale connections replaced:
    # no request fails for a connection that died with the old Redis.
    assert all(s == state for s in await asyncio.gather(*(store.get("kept") for _ in range(8))))
    assert await store.create(SessionState(id="new"), limit=10)
    assert await store.count() == 2
    assert await store.delete("new")


async def test_concurrent_lookups_travel_together_and_each_gets_its_own_answer(
        client: Redis, redis_keys: Keys, redis_server: RedisServer) -> None:
    """Lookups made in one turn of the event loop go in one pipeline; hits, misses and repeats each come
    back to the right caller, and a Redis that is away fails every one of them with StoreUnavailable."""
    store = RedisSessionStore(client, redis_keys, idle_timeout=60)
    for i in range(20):
        assert await store.create(full_state(f"s{i}"))
    wanted = [f"s{i % 25}" for i in range(60)]
    got = await asyncio.gather(*(store.get(sid) for sid in wanted))
    assert [state.id if state is not None else None for state in got] == \
        [sid if int(sid[1:]) < 20 else None for sid in wanted]
    redis_server.stop()
    try:
        failures = await asyncio.gather(*(store.get(sid) for sid in wanted[:10]), return_exceptions=True)
        assert all(isinstance(f, StoreUnavailable) for f in failures), failures
    finally:
        redis_server.start()
    assert (await store.get("s3")) is not None


@pytest.mark.spec("2025-11-25/basic/transports#session-management")
async def test_the_store_renews_a_session_when_a_call_longer_than_its_ttl_ends(
        client: Redis, redis_keys: Keys) -> None:
    """Redis expires idle sessions by TTL: one whose call outlasted the TTL's last renewal is renewed by the
    next sweep after the call ended, so that its expiry too counts from the end of the work."""
    idle = 60.0
    clock = FakeClock()
    manager = SessionManager(fixture.server, RedisSessionStore(client, redis_keys, idle_timeout=idle),
                             idle_timeout=idle, clock=clock)
    endpoint = StreamableHTTPEndpoint(manager, HttpOptions(sse_after=60))  # the answer comes as JSON
    gate = "redis-long-call"
    try:
        async with serve_in_process(endpoint) as base, httpx.AsyncClient(timeout=10) as http:
            session = await initialize(http, base + "/mcp")
            quiet = await initialize(http, base + "/mcp")
            key, quiet_key = redis_keys.session(session.sid), redis_keys.session(quiet.sid)
            call = asyncio.ensure_future(session.tool("hold", name=gate))
            await until(lambda: _holding(manager, session.sid), timeout=5, what="the call to start")
            clock.advance(idle / 2)
            other = await initialize(http, base + "/mcp")
            assert await other.tool("release", name=gate) == f"{gate}: step 1"
            assert await call == f"{gate}: released"
            # As if Redis had counted down since the call began: both TTLs nearly run out.
            for k in (key, quiet_key):
                await client.pexpire(k, 5_000)
            clock.advance(2)
            assert await manager.expire_idle() == 0
            assert await client.pttl(key) > (idle - 5) * 1000  # renewed: counted from the call's end
            assert 0 < await client.pttl(quiet_key) <= 5_000  # nothing ended there since its last lookup
    finally:
        await manager.close()


async def _holding(manager: SessionManager, sid: str) -> bool:
    live = manager.live.get(sid)
    return live is not None and live.session.inflight > 0
