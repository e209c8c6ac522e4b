"""Fixtures of the HTTP transport tests: one real uvicorn process shared by the whole run, and one real
redis-server for the Redis backend tests."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.support.http import READ_BOUND, UvicornProcess, run_uvicorn
from tests.support.http_fixture_server import FIXTURE_SERVER, MAX_MESSAGE_BYTES
from tests.support.redis import RedisServer, run_redis
from tests.support.stdio import spawn  # noqa: F401 - the fixture of the stdio tests
from wiremcp.transports.redis.keys import Keys


@pytest.fixture(scope="session")
def http_server() -> Iterator[UvicornProcess]:
    """``uvicorn app:asgi`` serving the HTTP fixture server (legacy SSE on, loopback-only guard)."""
    with run_uvicorn(FIXTURE_SERVER, {"WIREMCP_MAX_MESSAGE_BYTES": str(MAX_MESSAGE_BYTES)}) as server:
        yield server
        output = server.output()
    assert "Traceback" not in output, output  # no request may have crashed the server's handlers


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=READ_BOUND) as client:
        yield client


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One real ``redis-server`` for the Redis backend tests; every test keeps to its own key prefix
    (``redis_keys``). A test that stops it starts it again before it ends."""
    with run_redis() as server:
        yield server


@pytest.fixture
def redis_keys() -> Keys:
    """Key and channel names under a prefix of this test's own."""
    return Keys(f"t{uuid.uuid4().hex[:12]}")
