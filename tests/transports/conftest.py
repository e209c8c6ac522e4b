"""Fixtures of the HTTP transport tests: one real uvicorn process shared by the whole run (the real Redis
of the Redis backend tests is ``tests/support/redis_fixtures``', in the suite's ``conftest``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.support.http import READ_BOUND, UvicornProcess, run_uvicorn
from tests.support.http_fixture_server import FIXTURE_SERVER, MAX_MESSAGE_BYTES
from tests.support.stdio import spawn  # noqa: F401 - the fixture of the stdio tests


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
