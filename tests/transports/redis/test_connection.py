"""``wiremcp.transports.redis.connection``: connecting to Redis (a client that fails fast, against a real
redis-server and a port nobody listens on), Redis's failures as ``StoreUnavailable``, and the key and
channel names, every one under the deployment's prefix."""

from __future__ import annotations

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from tests.support.cluster import ready
from tests.support.http import free_port
from wiremcp.transports.redis.connection import connect, reachable
from wiremcp.unavailable import StoreUnavailable

TIMEOUT = 5.0
"""The clients' command timeout: a failure bound; nothing here comes close."""


async def test_a_client_speaks_to_redis_under_the_projects_name(redis_url: str) -> None:
    client = await ready(connect(redis_url, timeout=TIMEOUT))
    try:
        assert await client.ping() is True
        assert await client.client_getname() == "wiremcp"
    finally:
        await client.aclose()


async def test_an_unreachable_redis_is_store_unavailable_at_once() -> None:
    client = connect(f"redis://127.0.0.1:{free_port()}/0", timeout=TIMEOUT)  # nobody listens there
    try:
        with pytest.raises(StoreUnavailable, match="session lookup: Redis is unreachable"), reachable("session lookup"):
            await client.ping()
    finally:
        await client.aclose()


@pytest.mark.parametrize(("error", "says"), [
    (RedisConnectionError("connection reset"), "events: Redis is unreachable (connection reset)"),
    (RedisTimeoutError("timed out"), "events: Redis is unreachable (timed out)"),
    (OSError("no route to host"), "events: Redis is unreachable (no route to host)"),
    (ResponseError("OOM command not allowed"), "events: Redis failed (OOM command not allowed)"),
])
def test_redis_failures_become_store_unavailable(error: Exception, says: str) -> None:
    with pytest.raises(StoreUnavailable) as raised, reachable("events"):
        raise error
    assert str(raised.value) == says
    assert raised.value.__cause__ is error


def test_other_errors_are_not_redis_s_to_explain() -> None:
    with pytest.raises(KeyError), reachable("events"):
        raise KeyError("a bug")
