"""Fixtures the end-to-end tests share: a real ``redis-server`` per module and an httpx client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.support.http import READ_BOUND
from tests.support.redis import RedisServer, run_redis
from tests.support.redis_topologies import LocalRedisCluster, LocalRedisSentinel


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with run_redis() as server:
        yield server


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[LocalRedisCluster]:
    """A real Redis Cluster per module: six ``redis-server`` processes, three primaries, three replicas."""
    with LocalRedisCluster() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def redis_sentinel() -> Iterator[LocalRedisSentinel]:
    """A real Sentinel setup per module: a primary, a replica and three sentinels."""
    with LocalRedisSentinel() as sentinel:
        yield sentinel


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=READ_BOUND) as client:
        yield client
