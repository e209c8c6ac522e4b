"""``RedisGrantStore`` against a real redis-server, as two replicas (two clients, two stores on one Redis and
prefix), on every topology: the key names (kinds and keys kept apart however they are split, long and odd
ones hashed, no hash tag of a client's choosing), records stored as canonical JSON with their lifetime in
ms, counters whose window is not extended, one taker across replicas, and a Redis that goes away and comes
back."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.cluster import fail_while_away
from tests.support.redis import RedisServer
from tests.support.redis_topologies import standalone_only
from wiremcp.transports.redis.connection import Redis
from wiremcp.transports.redis.grants import MAX_PLAIN_PART, MAX_TTL_MS, RedisGrantStore
from wiremcp.transports.redis.keys import Keys

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def replicas(redis_clients: tuple[Redis, Redis], redis_keys: Keys) -> tuple[RedisGrantStore, RedisGrantStore]:
    """Two replicas' stores on one Redis and prefix."""
    return RedisGrantStore(redis_clients[0], redis_keys), RedisGrantStore(redis_clients[1], redis_keys)


def test_plain_names_are_readable_and_the_others_hashed(
        redis_keys: Keys, replicas: tuple[RedisGrantStore, RedisGrantStore]) -> None:
    store, p = replicas[0], redis_keys.prefix
    assert store.key_name("client", "https://a.example/x?y=1") == f"{p}:g:7:=client:=https://a.example/x?y=1"
    assert store.counter_name("client", "10.0.0.1") == f"{p}:gc:7:=client:=10.0.0.1"
    for odd in ("{tag}", "a}", "é", "\x00", "\ud800", "k" * (MAX_PLAIN_PART + 1)):
        name = store.key_name("client", odd)
        assert name.startswith(f"{p}:g:7:=client:#"), odd
        assert len(name) == len(f"{p}:g:7:=client:#") + 64, odd
        assert "{" not in name, odd
        assert "}" not in name, odd
    assert store.key_name("client", "k" * MAX_PLAIN_PART).endswith(":=" + "k" * MAX_PLAIN_PART)
    # however kind and key are split by colons, or written plain or hashed, they name different keys
    names = {store.key_name(kind, key) for kind, key in (
        ("a:b", "c"), ("a", "b:c"), ("a:b:c", ""), ("", "a:b:c"), ("=a", "b"), ("a", "=b"), ("a", "#b"))}
    assert len(names) == 7


async def test_a_record_is_kept_as_canonical_json_for_its_ttl_in_ms(
        redis_clients: tuple[Redis, Redis], replicas: tuple[RedisGrantStore, RedisGrantStore]) -> None:
    a, b = replicas
    await a.put("code", "c", {"z": 1, "a": [True, None]}, 60)
    name = a.key_name("code", "c")
    assert await redis_clients[0].get(name) == b'{"a":[true,null],"z":1,"~fmt":2}'  # with its format's number
    assert 0 < await redis_clients[0].pttl(name) <= 60_000
    assert await b.get("code", "c") == {"a": [True, None], "z": 1}
    assert await b.replace("code", "c", {"a": [True, None], "z": 1}, {"v": 2}, 1e30)  # capped, not refused
    assert MAX_TTL_MS - 60_000 < await redis_clients[1].pttl(name) <= MAX_TTL_MS
    await a.put("code", "c", {}, 1e-9)  # a nanosecond is a millisecond: the least Redis keeps


async def test_a_counter_s_lifetime_is_set_by_its_first_count_only(
        redis_clients: tuple[Redis, Redis], replicas: tuple[RedisGrantStore, RedisGrantStore]) -> None:
    a, b = replicas
    assert await a.count("calls", "k", 60) == 1
    name = a.counter_name("calls", "k")
    assert name != a.key_name("calls", "k")
    first = await redis_clients[0].pttl(name)
    assert 0 < first <= 60_000
    assert await b.count("calls", "k", 3600) == 2  # a longer window given later does not extend it
    assert 0 < await redis_clients[0].pttl(name) <= first
    await redis_clients[0].persist(name)  # a counter without a lifetime (not the script's doing) is given one
    assert await a.count("calls", "k", 60) == 3
    assert 0 < await redis_clients[0].pttl(name) <= 60_000


async def test_one_replica_of_many_takes_a_code(replicas: tuple[RedisGrantStore, RedisGrantStore]) -> None:
    a, b = replicas
    await a.put("code", "c", {"code": "c"}, 60)
    taken = await asyncio.gather(*((a if n % 2 else b).take("code", "c") for n in range(40)))
    assert [t for t in taken if t is not None] == [{"code": "c"}]


async def test_what_redis_cannot_keep_is_refused_before_it_is_sent(
        replicas: tuple[RedisGrantStore, RedisGrantStore]) -> None:
    a, _ = replicas
    with pytest.raises(ValueError, match="ttl must be a positive, finite number of seconds"):
        await a.put("code", "c", {}, 0)
    with pytest.raises(ValueError, match="ttl must be"):
        await a.count("code", "c", float("nan"))
    with pytest.raises(TypeError, match="a grant record must be a JSON object"):
        await a.add("code", "c", "text", 10)  # type: ignore[arg-type]
    assert await a.get("code", "c") is None


@standalone_only
async def test_an_unreachable_redis_raises_store_unavailable_then_recovers(
        replicas: tuple[RedisGrantStore, RedisGrantStore], redis_server: RedisServer) -> None:
    a, b = replicas
    await a.put("family", "f", {"g": 1}, 60)
    await fail_while_away(redis_server, {
        "put": lambda: a.put("family", "f", {"g": 2}, 60),
        "add": lambda: a.add("family", "new", {}, 60),
        "get": lambda: a.get("family", "f"),
        "take": lambda: a.take("family", "f"),
        "replace": lambda: a.replace("family", "f", {"g": 1}, {"g": 2}, 60),
        "delete": lambda: a.delete("family", "f"),
        "count": lambda: a.count("family", "f", 60),
    })
    assert await b.get("family", "f") == {"g": 1}  # kept (append-only file), and nothing half done
    assert await a.replace("family", "f", {"g": 1}, {"g": 2}, 60)
    assert await b.take("family", "f") == {"g": 2}
