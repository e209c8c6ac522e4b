"""``RedisSessionStore`` against a real redis-server: the state, the cross-replica cap, idle expiry by
TTL (renewed by every use), and a Redis that goes away and comes back; with the link between replicas,
each replica's copies of the sessions: a fresh copy answers without any Redis command, saves and deletes
made on another replica drop it, idle expiry still holds, and a link that goes down stops the copies'
use and drops them all when it is back.

Replicas are stores with their own Redis clients and replica links (``RedisReplicaLink``). Commands are counted by Redis
itself (``INFO commandstats``). Nothing waits by sleeping: an announcement is awaited on a listener of
the receiving replica's link (registered after the store's, it hears each message after the store did)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar, cast

import httpx
import pytest

from tests.support import http_fixture_server as fixture
from tests.support.cluster import TIMEOUT, fail_while_away, make_cluster, next_item, ready, started, until
from tests.support.http import FakeClock, initialize, serve_in_process
from tests.support.redis import RedisServer
from tests.support.redis_topologies import standalone_only
from wiremcp.backend import Backend
from wiremcp.replica_link import ClusterEvents
from wiremcp.state import SessionState
from wiremcp.transports.allocator import FallFromPeak
from wiremcp.transports.redis.connection import Redis, connect
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.replica_link import RedisReplicaLink
from wiremcp.transports.redis.sessions import RedisSessionStore
from wiremcp.transports.redis.target import parse_target
from wiremcp.transports.sessions import SessionManager
from wiremcp.transports.streamable_http import HttpOptions, StreamableHTTPEndpoint
from wiremcp.unavailable import StoreUnavailable

pytestmark = pytest.mark.timeout(30)

T = TypeVar("T")


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
        redis_url: str, client: Redis, redis_keys: Keys) -> None:
    other = await ready(connect(redis_url, timeout=TIMEOUT))  # a second replica: its own client and store
    try:
        stores = [RedisSessionStore(client, redis_keys, idle_timeout=60),
                  RedisSessionStore(other, redis_keys, idle_timeout=60)]
        results = await asyncio.gather(*(stores[i % 2].create(SessionState(id=f"s{i}"), limit=10)
                                         for i in range(50)))
        if redis_keys.session_shards == 1:
            assert results.count(True) == 10, results  # one shard: exact
        else:  # a cluster: never past the cap; racing creates near it may all be refused, then fill it up
            assert results.count(True) <= 10, results
            filled = results.count(True)
            while filled < 10:
                assert await stores[filled % 2].create(SessionState(id=f"fill{filled}"), limit=10)
                filled += 1
        assert await stores[0].count() == 10
        assert await stores[1].count() == 10
        for i, created in enumerate(results):
            assert (await stores[(i + 1) % 2].get(f"s{i}") is not None) == created
        # Room again once one session is gone, for either replica.
        assert await stores[1].create(SessionState(id="late"), limit=10) is False
        assert await stores[0].delete(f"s{results.index(True)}" if True in results else "fill0")
        assert await stores[1].create(SessionState(id="late"), limit=10) is True
        assert await stores[0].count() == 10
    finally:
        await other.aclose()


async def test_an_idle_session_expires_by_its_ttl(client: Redis, redis_keys: Keys) -> None:
    store = RedisSessionStore(client, redis_keys, idle_timeout=1.0)  # a loaded machine's second to count it alive
    state = SessionState(id="idle")
    assert await store.create(state)
    assert 0 < await client.pttl(redis_keys.session("idle")) <= 1000
    assert await store.count() == 1

    async def gone() -> bool:  # neither get() nor touch(): they would restart the idle clock
        return await client.exists(redis_keys.session("idle")) == 0 and await store.count() == 0

    await until(gone, what="the idle session's expiry")
    assert await store.get("idle") is None
    # Nothing brings it back: not a late touch, not a late save.
    await store.touch("idle")
    await store.save(state)
    assert await store.get("idle") is None
    assert await store.count() == 0
    assert await client.zscore(redis_keys.sessions("idle"), "idle") is None


async def test_get_touch_and_save_restart_the_idle_clock(client: Redis, redis_keys: Keys) -> None:
    idle_ms = 1000  # three ages of 400 ms pass one idle timeout; each renewal is given 300 ms of a loaded machine
    store = RedisSessionStore(client, redis_keys, idle_timeout=idle_ms / 1000)
    state = SessionState(id="busy")
    key = redis_keys.session("busy")
    assert await store.create(state)

    async def aged() -> bool:
        return 0 < await client.pttl(key) < idle_ms - 400

    renewals: list[Callable[[], Awaitable[object]]] = [
        lambda: store.get("busy"), lambda: store.touch("busy"), lambda: store.save(state)]
    for renew in renewals:
        await until(aged, what="the session's ageing")
        before = await client.zscore(redis_keys.sessions("busy"), "busy")
        assert before is not None
        await renew()
        assert await client.pttl(key) > idle_ms - 300  # the TTL starts over...
        after = await client.zscore(redis_keys.sessions("busy"), "busy")
        assert after is not None
        assert after > before  # ...and so does the expiry the count goes by
    # More than one idle timeout has passed since creation: the renewals kept it alive.
    assert await store.get("busy") == state
    assert await store.count() == 1


@pytest.mark.parametrize("owner", ["https://issuer.example|alice", None])
async def test_a_strangers_lookup_renews_nothing_and_leaves_no_copy(client: Redis, redis_keys: Keys,
                                                                     redis_url: str, owner: str | None) -> None:
    """Only the session's owner (or the server itself) restarts its idle clock: another principal's lookup, or
    an anonymous one of an owned session (and the other way round), reads the state and changes nothing."""
    idle_ms = 400
    link = make_cluster(redis_url, redis_keys, "A")
    store = RedisSessionStore(client, redis_keys, idle_timeout=idle_ms / 1000, link=link, fresh_for=0.1)
    strangers: list[str | None] = ["https://issuer.example|bob", None if owner is not None else "x|y"]
    key = redis_keys.session("owned")
    async with started(link):
        assert await store.create(SessionState(id="owned", owner=owner))

        async def aged() -> bool:
            return 0 < await client.pttl(key) < idle_ms - 150

        for stranger in strangers:
            await until(aged, what="the session's ageing")
            store._forget("owned")  # no copy: each lookup reads Redis
            ttl, expiry = await client.pttl(key), await client.zscore(redis_keys.sessions("owned"), "owned")
            both = await asyncio.gather(store.get("owned", stranger), store.get("owned", stranger))
            assert [state.owner if state else "gone" for state in both] == [owner, owner]  # read...
            assert await client.pttl(key) <= ttl  # ...but not renewed,
            assert await client.zscore(redis_keys.sessions("owned"), "owned") == expiry  # nor counted longer,
            assert "owned" not in store._cached  # and the owner's next lookup goes to Redis again
        await until(aged, what="the session's ageing")
        assert (await store.get("owned", owner) or SessionState()).owner == owner
        assert await client.pttl(key) > idle_ms - 100
        assert "owned" in store._cached


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
    assert await client.zscore(redis_keys.sessions("gone"), "gone") is None


@standalone_only
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


@standalone_only
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
    manager = SessionManager(
        fixture.server, with_sessions(RedisSessionStore(client, redis_keys, idle_timeout=idle)), idle_timeout=idle, clock=clock)
    endpoint = StreamableHTTPEndpoint(manager, HttpOptions(sse_after=60))  # the answer comes as JSON
    gate = f"redis-long-call-{redis_keys.prefix}"  # a gate of its own: each run has an event loop of its own
    try:
        async with serve_in_process(endpoint) as base, httpx.AsyncClient(timeout=10) as http:
            session = await initialize(http, base + "/mcp")
            quiet = await initialize(http, base + "/mcp")
            key, quiet_key = redis_keys.session(session.sid), redis_keys.session(quiet.sid)
            call = asyncio.ensure_future(session.tool("hold", name=gate))
            await until(lambda: _holding(manager, session.sid), what="the call to start")
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


# -- each replica's copies of the sessions ----------------------------------------------------------------
class Heard(ClusterEvents):
    """What a replica's link delivered, registered after its store: once an announcement is here, the store
    has had it too."""

    def __init__(self, cluster: RedisReplicaLink) -> None:
        self.changes: asyncio.Queue[str] = asyncio.Queue()
        self.reconnects: asyncio.Queue[None] = asyncio.Queue()
        cluster.listen(self)

    def session_changed(self, session_id: str) -> None:
        self.changes.put_nowait(session_id)

    def reconnected(self) -> None:
        self.reconnects.put_nowait(None)


async def commands(client: Redis, only: str | None = None) -> int:
    """Commands Redis has run so far (``only`` that one), but for ``INFO`` (this count), ``SET`` (the
    replicas' leases) and what loading a script costs the first time (a failed ``EVALSHA``, ``SCRIPT LOAD``)."""
    stats = await client.info("commandstats")
    return sum(int(entry["calls"]) - int(entry.get("failed_calls", 0)) for name, entry in stats.items()
               if name not in ("cmdstat_info", "cmdstat_set", "cmdstat_script")
               and (only is None or name == f"cmdstat_{only}"))


READ = 7
"""Commands a read of a session runs: two EVALSHA, the touch script's GET and PEXPIRE, and the index
renewal's TIME, ZSCORE and ZADD."""


async def measured(client: Redis, call: Awaitable[T]) -> tuple[T, int]:
    """What ``call`` answers, and how many commands Redis ran meanwhile (``commands``)."""
    before = await commands(client)
    answer = await call
    return answer, await commands(client) - before


@standalone_only
async def test_a_fresh_copy_answers_without_any_redis_command_and_a_stale_one_is_read_again(
        redis_server: RedisServer, client: Redis, redis_keys: Keys) -> None:
    clock = FakeClock()
    link = make_cluster(redis_server.url, redis_keys, "A")
    store = RedisSessionStore(client, redis_keys, idle_timeout=60, link=link, fresh_for=1.0, clock=clock)
    key = redis_keys.session("s1")
    async with started(link):
        state = full_state("s1")
        assert await store.create(state)
        before = await commands(client)
        for _ in range(100):
            assert await store.get("s1") is state  # the copy made by create: no round trip
        assert await commands(client) - before == 0
        # The TTL is the idle timeout plus the freshness bound: a session last renewed up to a bound ago
        # still has a whole idle timeout ahead of its latest request.
        assert 60_000 < await client.pttl(key) <= 61_000

        await client.pexpire(key, 30_000)  # as if Redis had counted down since
        clock.advance(0.999)
        assert await measured(client, store.get("s1")) == (state, 0)
        clock.advance(0.002)  # past the bound: read again, which renews the session
        again, sent = await measured(client, store.get("s1"))
        assert again == state
        assert again is not state
        assert sent == READ  # the touch script and the index renewal, in one round trip
        assert await client.pttl(key) > 60_000
        assert await measured(client, store.get("s1")) == (again, 0)


@standalone_only
async def test_a_save_or_delete_on_one_replica_drops_the_others_copy(
        redis_server: RedisServer, client: Redis, redis_keys: Keys) -> None:
    clock = FakeClock()  # never moves: copies stay fresh unless an announcement drops them
    other = connect(redis_server.url, timeout=TIMEOUT)
    link_a, link_b = make_cluster(redis_server.url, redis_keys, "A"), make_cluster(redis_server.url, redis_keys, "B")
    a = RedisSessionStore(client, redis_keys, idle_timeout=60, link=link_a, clock=clock)
    b = RedisSessionStore(other, redis_keys, idle_timeout=60, link=link_b, clock=clock)
    try:
        async with started(link_a, link_b):
            heard_a, heard_b = Heard(link_a), Heard(link_b)
            state = full_state("shared")
            assert await a.create(state)
            seen = await b.get("shared")
            assert seen == state
            assert await b.get("shared") is seen  # B's copy

            changed = full_state("shared")
            changed.log_level = "error"
            changed.subscriptions = {"fixture://items/1"}
            await a.save(changed)
            assert await a.get("shared") is changed  # A's copy is what A wrote
            assert await next_item(heard_b.changes) == "shared"  # announced by the save itself
            now, sent = await measured(client, b.get("shared"))
            assert now == changed  # read again on B
            assert sent == READ
            assert await b.get("shared") is now

            # B's own save reaches A the same way (and B keeps its copy: no announcement comes back to it).
            now.log_level = "debug"
            await b.save(now)
            assert await next_item(heard_a.changes) == "shared"
            assert (await a.get("shared") or SessionState()).log_level == "debug"
            assert await measured(client, b.get("shared")) == (now, 0)

            assert await a.delete("shared")
            assert await next_item(heard_b.changes) == "shared"
            assert await b.get("shared") is None  # refused on B at once
            assert await a.get("shared") is None
            assert b.cached == 0
    finally:
        await other.aclose()


@standalone_only
async def test_a_read_under_way_when_a_change_is_announced_fills_no_copy(
        redis_server: RedisServer, client: Redis, redis_keys: Keys) -> None:
    """Redis's "caching-in-progress" race: the answer of a read sent before the announcement may predate
    the change; its callers get it, the cache does not keep it. Nor is a read kept that was under way while
    this replica saved the session, nor this replica's own write if an announcement came during it."""
    link = make_cluster(redis_server.url, redis_keys, "A")
    store = RedisSessionStore(client, redis_keys, idle_timeout=60, link=link, clock=FakeClock())
    async with started(link):
        assert await store.create(full_state("raced"))
        store.reconnected()  # no copy: the next lookup reads Redis
        reading = asyncio.ensure_future(store.get("raced"))
        joining = asyncio.ensure_future(store.get("raced"))
        await asyncio.sleep(0)  # one loop turn: both lookups are made (one read, shared), none answered
        assert not reading.done()
        store.session_changed("raced")  # announced by another replica meanwhile
        first, second = await reading, await joining
        assert first is second  # one read, one answer
        again, sent = await measured(client, store.get("raced"))
        assert again == first
        assert sent == READ  # read again: the earlier answer was not kept

        store.reconnected()
        reading = asyncio.ensure_future(store.get("raced"))
        await asyncio.sleep(0)  # one loop turn: the read is on its way
        mine = full_state("raced")
        mine.log_level = "alert"
        await store.save(mine)
        assert (await reading) is not None
        assert await store.get("raced") is mine  # what this replica wrote, not what the read found

        store.reconnected()
        saving = asyncio.ensure_future(store.save(mine))
        await asyncio.sleep(0)  # one loop turn: the write is on its way
        reading = asyncio.ensure_future(store.get("raced"))
        await saving
        assert (await reading) is not None
        assert await store.get("raced") is mine  # the read sent during the write did not replace it

        # A change announced while this replica's own write is on its way may have come after it in Redis.
        saving = asyncio.ensure_future(store.save(mine))
        await asyncio.sleep(0)  # one loop turn: the write is on its way
        store.session_changed("raced")
        await saving
        again, sent = await measured(client, store.get("raced"))
        assert again == mine
        assert again is not mine
        assert sent == READ  # read again: what this replica wrote was not kept


@standalone_only
async def test_copies_are_bounded_in_number_and_age(redis_server: RedisServer, client: Redis, redis_keys: Keys) -> None:
    clock = FakeClock()
    link = make_cluster(redis_server.url, redis_keys, "A")
    store = RedisSessionStore(client, redis_keys, idle_timeout=60, link=link, fresh_for=1.0, max_cached=3,
                              clock=clock)
    async with started(link):
        for i in range(5):
            assert await store.create(SessionState(id=f"s{i}"))
        assert store.cached == 3  # the oldest two went
        for i in (2, 3, 4):
            assert (await measured(client, store.get(f"s{i}")))[1] == 0
        assert (await measured(client, store.get("s0")))[1] == READ
        clock.advance(1.5)  # every copy is past its freshness: the next one kept drops them
        assert await store.create(SessionState(id="s5"))
        assert store.cached == 1
        clock.advance(1.5)
        store.compact()
        assert store.cached == 0



@standalone_only
async def test_copies_forgotten_a_few_per_sweep_are_given_back_with_the_stores_copies(
        redis_server: RedisServer, client: Redis, redis_keys: Keys, monkeypatch: pytest.MonkeyPatch) -> None:
    """With Redis a sweep forgets this replica's idle copies (the sessions live on in Redis), a few at a time:
    the same rule as in memory (``FallFromPeak``, here a floor of 40) gives their memory back once enough have
    gone, and the store's own copies past their freshness go at the same time (``compact``)."""
    clock = FakeClock()
    link = make_cluster(redis_server.url, redis_keys, "A")
    store = RedisSessionStore(client, redis_keys, idle_timeout=60, link=link, fresh_for=1.0, clock=clock)
    manager = SessionManager(fixture.server, with_sessions(store), idle_timeout=60, clock=clock)
    manager.release_rule = FallFromPeak(0.25, 40)
    released: list[tuple[int, int]] = []
    monkeypatch.setattr("wiremcp.transports.sessions.release_freed_memory",
                        lambda: released.append((len(manager.live), store.cached)))
    async with started(link):
        try:
            for _second in range(10):
                for _ in range(10):
                    await manager.create()
                clock.advance(1)
            assert store.cached == 10  # the last ten's: the others were dropped as they went stale
            clock.advance(50)
            left = []
            for _ in range(10):
                clock.advance(1)
                assert await manager.expire_idle() == 10
                left.append(len(manager.live))
            assert left == [90, 80, 70, 60, 50, 40, 30, 20, 10, 0]
            assert released == [(60, 0), (20, 0)]
            assert await store.count() == 100  # forgotten here only: Redis ends them by their TTL
        finally:
            await manager.close()


async def test_a_replica_that_only_looks_sessions_up_forgets_its_idle_copies(client: Redis, redis_keys: Keys) -> None:
    """Its reaper starts with the first copy it makes, as it does with the first session it creates: a replica
    serving sessions made on others forgets its copies once idle (and gives back their memory) all the same."""
    idle = 0.2
    made_here = SessionManager(
        fixture.server, with_sessions(RedisSessionStore(client, redis_keys, idle_timeout=idle)), idle_timeout=idle)
    looking = SessionManager(
        fixture.server, with_sessions(RedisSessionStore(client, redis_keys, idle_timeout=idle)), idle_timeout=idle)
    try:
        sid = (await made_here.create()).id
        assert await looking.get(sid) is not None
        assert sid in looking.live
        await until(lambda: sid not in looking.live, what="the idle copy to be forgotten")
    finally:
        await made_here.close()
        await looking.close()

async def test_the_freshness_bound_is_a_quarter_of_the_idle_timeout_at_most_and_needs_a_link(
        redis_url: str, client: Redis, redis_keys: Keys) -> None:
    link = make_cluster(redis_url, redis_keys, "A")
    assert RedisSessionStore(client, redis_keys, idle_timeout=60, link=link, fresh_for=1.0).fresh_for == 1.0
    assert RedisSessionStore(client, redis_keys, idle_timeout=2, link=link, fresh_for=1.0).fresh_for == 0.5
    assert RedisSessionStore(client, redis_keys, idle_timeout=60, link=link, fresh_for=0).fresh_for == 0
    assert RedisSessionStore(client, redis_keys, idle_timeout=60, fresh_for=1.0).fresh_for == 0  # no link
    await link.close()


@pytest.mark.spec("2025-11-25/basic/transports#session-management")
@standalone_only
async def test_with_copies_an_idle_session_still_expires_and_one_in_use_never_does(
        redis_server: RedisServer, client: Redis, redis_keys: Keys) -> None:
    """Lookups answered from the copy renew nothing, yet at every request the session has at least a whole
    idle timeout ahead of it in Redis; the renewals are few; the idle session beside it ends on time."""
    idle_ms = 400
    link = make_cluster(redis_server.url, redis_keys, "A")
    store = RedisSessionStore(client, redis_keys, idle_timeout=idle_ms / 1000, link=link, fresh_for=1.0)
    assert store.fresh_for == idle_ms / 4000  # 0.1 s
    async with started(link):
        assert await store.create(SessionState(id="busy"))
        assert await store.create(SessionState(id="idle"))
        before = await commands(client, "pexpire")
        lookups = 0
        end = time.monotonic() + 3 * idle_ms / 1000
        while time.monotonic() < end:
            assert await store.get("busy") is not None
            served = time.monotonic()
            lookups += 1
            left = await client.pttl(redis_keys.session("busy"))
            ahead = left + 1000 * (time.monotonic() - served)  # from the lookup on, in Redis's count
            assert ahead >= idle_ms - 5, (lookups, left)
            await asyncio.sleep(0.01)  # the pace of the client's requests, not a wait for something
        renewals = await commands(client, "pexpire") - before  # one in every read of the session
        assert renewals <= 3 * idle_ms / 100 + 2, (renewals, lookups)  # about one per 0.1 s
        assert renewals < lookups / 3, (renewals, lookups)
        assert await client.exists(redis_keys.session("idle")) == 0  # three idle timeouts later
        assert await store.count() == 1

        async def gone() -> bool:  # no lookup: it would renew
            return await client.exists(redis_keys.session("busy")) == 0

        await until(gone, what="the session's expiry once unused")
        assert await store.get("busy") is None


async def command(client: Redis, *words: str) -> object:
    return await cast(Any, client).execute_command(*words)


@standalone_only
async def test_while_the_link_is_down_no_copy_is_used_and_all_are_dropped_when_it_is_back(
        redis_server: RedisServer, client: Redis, redis_keys: Keys) -> None:
    """A's link to the others is cut (its pub/sub connection killed, and kept from reconnecting by
    disabling its Redis user) while B saves: A misses the announcement. Meanwhile A reads Redis for every
    lookup, and once the link is back no copy made before survives."""
    user, password = f"link{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    await command(client, "ACL", "SETUSER", user, "on", f">{password}", "~*", "&*", "+@all")
    link_a = RedisReplicaLink(connect(redis_server.url, timeout=TIMEOUT),
                     connect(redis_server.url.replace("redis://", f"redis://{user}:{password}@"), timeout=TIMEOUT,
                             blocking=True), redis_keys, target=parse_target(redis_server.url), replica="A", lease=1.0)
    link_b = make_cluster(redis_server.url, redis_keys, "B")
    other = connect(redis_server.url, timeout=TIMEOUT)
    clock = FakeClock()  # never moves: only the link decides
    a = RedisSessionStore(client, redis_keys, idle_timeout=60, link=link_a, clock=clock)
    b = RedisSessionStore(other, redis_keys, idle_timeout=60, link=link_b, clock=clock)
    try:
        async with started(link_a, link_b):
            heard_a = Heard(link_a)
            first = full_state("s")
            assert await a.create(first)
            assert await a.get("s") is first  # A's copy

            await command(client, "ACL", "SETUSER", user, "off")
            await command(client, "CLIENT", "KILL", "USER", user)
            await until(lambda: not link_a.connected, what="A noticing its link is down")
            changed = full_state("s")
            changed.log_level = "critical"
            await b.save(changed)  # announced, but not to A
            now, sent = await measured(client, a.get("s"))
            assert now == changed  # the copy is not used while the link is down
            assert sent == READ
            later, sent = await measured(client, a.get("s"))
            assert later is not now  # nor is one kept
            assert sent == READ

            await command(client, "ACL", "SETUSER", user, "on")
            await next_item(heard_a.reconnects)
            assert link_a.connected
            assert a.cached == 0
            now, sent = await measured(client, a.get("s"))
            assert now == changed
            assert sent == READ
    finally:
        await other.aclose()
        await command(client, "ACL", "DELUSER", user)


def with_sessions(store: RedisSessionStore) -> Backend:
    """The in-memory backend with its sessions in ``store`` (what these tests look at)."""
    return replace(Backend.in_memory(), sessions=store)
