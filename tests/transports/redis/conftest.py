"""Clients of the Redis under test (``redis_url``: one server, a cluster or Sentinel), one per replica a test
plays."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.cluster import TIMEOUT, ready
from wiremcp.transports.redis.connection import Redis, connect


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[Redis]:
    client = await ready(connect(redis_url, timeout=TIMEOUT))
    yield client
    await client.aclose()


@pytest.fixture
async def other_client(redis_url: str) -> AsyncIterator[Redis]:
    """A second replica's client."""
    client = await ready(connect(redis_url, timeout=TIMEOUT))
    yield client
    await client.aclose()
