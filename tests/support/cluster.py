"""Helpers of the Redis backend tests (the server and key prefixes are fixtures in ``conftest.py``).

Nothing here sleeps to wait for something: ``until`` polls a condition with a deadline, and
``next_item`` waits on a queue with one.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TypeVar

import pytest
from redis.exceptions import RedisError

from tests.support.http import READ_BOUND
from tests.support.redis import RedisServer
from wiremcp.transports.redis.connection import Redis, prepare
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.replica_link import RedisReplicaLink
from wiremcp.unavailable import StoreUnavailable

T = TypeVar("T")

TIMEOUT = 2.0
"""Redis command timeout of the clients built here."""
POLL = 0.01
"""The poll interval of ``until``: a bounded wait's step, not a wait for something."""


async def until(condition: Callable[[], bool | Awaitable[bool]], timeout: float = READ_BOUND,
                what: str | Callable[[], str] = "the condition") -> None:
    """Return once ``condition()`` holds; fail if it does not within ``timeout``, saying ``what`` (or what
    ``what()`` says then)."""
    deadline = time.monotonic() + timeout
    while True:
        outcome = condition()
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if outcome:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{what if isinstance(what, str) else what()} did not hold within {timeout}s")
        await asyncio.sleep(POLL)


async def next_item(queue: asyncio.Queue[T], timeout: float = READ_BOUND) -> T:
    """The next item put on ``queue``; fails if none arrives within ``timeout``."""
    async with asyncio.timeout(timeout):
        return await queue.get()


async def ready(client: Redis) -> Redis:
    """``client``, its cluster's slots read (``prepare``) before tests use it concurrently."""
    await prepare(client)
    return client


def make_cluster(url: str, keys: Keys, replica: str, *, lease: float = 1.0) -> RedisReplicaLink:
    """A replica's cluster link as ``RedisBackend.connect`` builds it (a command client and a pub/sub one)."""
    return RedisReplicaLink.connect(url, keys, replica=replica, lease=lease, timeout=TIMEOUT)


@contextlib.asynccontextmanager
async def started(*clusters: RedisReplicaLink) -> AsyncIterator[None]:
    """Start the clusters (subscribed to the others' messages) and close them at the end."""
    try:
        for cluster in clusters:
            await cluster.start()
            assert cluster.connected, f"replica {cluster.replica} did not subscribe"
        yield
    finally:
        for cluster in clusters:
            await cluster.close()


async def fail_while_away(redis: RedisServer, calls: Mapping[str, Callable[[], Awaitable[object]]]) -> None:
    """Stop Redis, check that every call fails with ``StoreUnavailable`` (caused by the Redis client's
    own error, not leaking it), then start Redis again on the same port with the same data."""
    redis.stop()
    try:
        for name, call in calls.items():
            with pytest.raises(StoreUnavailable) as caught:
                await call()
            assert not isinstance(caught.value, RedisError), name
            assert isinstance(caught.value.__cause__, RedisError | OSError), (name, caught.value.__cause__)
    finally:
        redis.start()
