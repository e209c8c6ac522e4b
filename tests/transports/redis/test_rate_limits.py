"""``RedisRateLimits`` against a real redis-server, as two replicas (two clients, two stores on one Redis): the
token bucket (a burst, then refusals that say when to retry; refill at the rate, capped at the burst), the
counts of calls running, keys that expire once they say nothing, atomicity under concurrent replicas, and a
Redis that goes away and comes back."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.cluster import fail_while_away, until
from tests.support.redis import RedisServer
from tests.support.redis_topologies import standalone_only
from wiremcp.rate_limits import Taken
from wiremcp.transports.redis.connection import Redis
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.rate_limits import RedisRateLimits

pytestmark = pytest.mark.timeout(30)

SLOW = 1e-6
"""Tokens a second so few that no token comes back while a test runs."""


@pytest.fixture
def replicas(redis_clients: tuple[Redis, Redis], redis_keys: Keys) -> tuple[RedisRateLimits, RedisRateLimits]:
    """Two replicas' stores on one Redis and prefix."""
    return RedisRateLimits(redis_clients[0], redis_keys), RedisRateLimits(redis_clients[1], redis_keys)


async def test_a_new_bucket_lets_a_burst_through_then_refuses_saying_when_to_retry(
        replicas: tuple[RedisRateLimits, RedisRateLimits]) -> None:
    a, b = replicas
    rate = 1 / 60  # one a minute
    taken = [await (a if i % 2 else b).take("k", rate, 3) for i in range(3)]
    assert [t.allowed for t in taken] == [True, True, True]
    assert [t.remaining for t in taken] == [2, 1, 0]
    assert all(t.retry_after == 0 for t in taken)
    refused = await a.take("k", rate, 3)
    assert not refused.allowed
    assert refused.remaining == 0
    # a whole token, at one a minute, less what elapsed since the first take: a loaded machine may take seconds
    assert 50 < refused.retry_after <= 60
    again = await b.take("k", rate, 3)  # a refusal takes nothing: the wait only shrinks
    assert not again.allowed
    assert 0 < again.retry_after <= refused.retry_after


async def test_each_key_has_its_own_bucket(replicas: tuple[RedisRateLimits, RedisRateLimits]) -> None:
    a, b = replicas
    assert (await a.take("greedy", SLOW, 1)).allowed
    assert not (await b.take("greedy", SLOW, 1)).allowed
    assert (await b.take("other", SLOW, 1)) == Taken(True, 0, 0.0)


async def test_a_token_comes_back_after_the_wait_the_refusal_named(
        replicas: tuple[RedisRateLimits, RedisRateLimits]) -> None:
    a, b = replicas
    assert (await a.take("k", 20.0, 1)).allowed
    started = time.monotonic()
    refused = await b.take("k", 20.0, 1)
    assert not refused.allowed
    assert 0 < refused.retry_after <= 0.05

    async def allowed() -> bool:
        return (await a.take("k", 20.0, 1)).allowed

    await until(allowed, what="a token's return")
    assert time.monotonic() - started >= refused.retry_after - 0.001  # not before its time (Redis's clock)


async def test_a_bucket_never_holds_more_than_its_burst(
        redis_clients: tuple[Redis, Redis], replicas: tuple[RedisRateLimits, RedisRateLimits]) -> None:
    a, _ = replicas
    assert (await a.take("k", 1.0, 4)).remaining == 3
    await redis_clients[0].hset(a.bucket_key("k"), mapping={"t": "0", "at": "0"})  # empty since 1970
    assert (await a.take("k", 1.0, 4)).remaining == 3  # refilled to 4, not to 1.7 billion


async def test_a_bucket_key_lives_until_the_bucket_would_be_full_again(
        redis_clients: tuple[Redis, Redis], replicas: tuple[RedisRateLimits, RedisRateLimits]) -> None:
    a, b = replicas
    key = a.bucket_key("k")
    assert key.startswith(b.bucket_key(""))
    assert (await a.take("k", 10.0, 5)).allowed
    assert (await b.take("k", 10.0, 5)).allowed
    assert await redis_clients[0].type(key) == b"hash"
    assert 0 < await redis_clients[0].pttl(key) <= 200  # two tokens at ten a second

    async def gone() -> bool:
        return not await redis_clients[1].exists(key)

    await until(gone, what="the bucket's expiry")
    assert (await b.take("k", 10.0, 5)).remaining == 4  # back, full


async def test_a_fast_bucket_expires_in_a_millisecond_not_at_once(
        redis_clients: tuple[Redis, Redis], replicas: tuple[RedisRateLimits, RedisRateLimits]) -> None:
    a, _ = replicas
    for _ in range(20):
        assert (await a.take("k", 1e9, 1)).allowed  # full again within a microsecond
    assert await redis_clients[0].pttl(a.bucket_key("k")) in (-2, 0, 1)  # (1 ms at most; perhaps already gone)


async def test_concurrent_takes_from_two_replicas_allow_exactly_the_burst(
        replicas: tuple[RedisRateLimits, RedisRateLimits]) -> None:
    a, b = replicas
    taken = await asyncio.gather(*((a if i % 2 else b).take("shared", SLOW, 50) for i in range(200)))
    allowed = [t for t in taken if t.allowed]
    assert len(allowed) == 50
    assert sorted(t.remaining for t in allowed) == list(range(50))  # each token taken once
    assert all(t.remaining == 0 and t.retry_after > 0 for t in taken if not t.allowed)


async def test_enter_counts_calls_running_up_to_the_limit_across_replicas(
        redis_clients: tuple[Redis, Redis], replicas: tuple[RedisRateLimits, RedisRateLimits]) -> None:
    a, b = replicas
    key = a.running_key("caller")
    assert key != a.bucket_key("caller")
    assert await a.enter("caller", 2)
    assert await b.enter("caller", 2)
    assert not await a.enter("caller", 2)
    assert await redis_clients[0].get(key) == b"2"
    assert 0 < await redis_clients[0].pttl(key) <= 600_000
    await b.leave("caller")
    assert await redis_clients[0].get(key) == b"1"
    assert await a.enter("caller", 2)
    assert not await b.enter("caller", 2)
    await a.leave("caller")
    await a.leave("caller")
    assert not await redis_clients[0].exists(key)  # deleted at 0
    await b.leave("caller")  # one leave too many (its count had expired): nothing goes below 0
    assert not await redis_clients[0].exists(key)
    assert await a.enter("caller", 1)
    assert not await b.enter("caller", 1)


async def test_concurrent_enters_from_two_replicas_count_exactly_the_limit(
        replicas: tuple[RedisRateLimits, RedisRateLimits]) -> None:
    a, b = replicas
    entered = await asyncio.gather(*((a if i % 2 else b).enter("caller", 10) for i in range(100)))
    assert entered.count(True) == 10


async def test_the_count_of_a_replica_that_vanished_expires(
        redis_clients: tuple[Redis, Redis], redis_keys: Keys) -> None:
    crashed = RedisRateLimits(redis_clients[0], redis_keys, running_ttl=0.2)
    survivor = RedisRateLimits(redis_clients[1], redis_keys, running_ttl=0.2)
    assert await crashed.enter("caller", 1)  # and never leaves
    assert not await survivor.enter("caller", 1)

    async def freed() -> bool:
        return await survivor.enter("caller", 1)

    await until(freed, what="the count's expiry")


async def test_what_redis_cannot_do_is_refused_before_it_is_sent(
        redis_clients: tuple[Redis, Redis], redis_keys: Keys) -> None:
    store = RedisRateLimits(redis_clients[0], redis_keys)
    for rate, burst in ((0.0, 1), (-1.0, 1), (float("inf"), 1), (float("nan"), 1), (1.0, 0)):
        with pytest.raises(ValueError, match="rate must be positive and finite, burst at least 1"):
            await store.take("k", rate, burst)
    with pytest.raises(ValueError, match="running_ttl must be positive"):
        RedisRateLimits(redis_clients[0], redis_keys, running_ttl=0)


@standalone_only
async def test_an_unreachable_redis_raises_store_unavailable_then_recovers(
        replicas: tuple[RedisRateLimits, RedisRateLimits], redis_server: RedisServer) -> None:
    a, b = replicas
    assert (await a.take("k", SLOW, 2)).remaining == 1
    assert await a.enter("caller", 1)
    await fail_while_away(redis_server, {
        "take": lambda: a.take("k", SLOW, 2),
        "enter": lambda: a.enter("caller", 1),
        "leave": lambda: a.leave("caller"),
    })
    assert (await b.take("k", SLOW, 2)).remaining == 0  # the bucket survived (append-only file)
    assert not (await a.take("k", SLOW, 2)).allowed
    assert not await b.enter("caller", 1)
    await b.leave("caller")
    assert await a.enter("caller", 1)
