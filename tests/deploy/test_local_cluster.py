"""``deploy/local_cluster.py``: the compose topology on loopback.

The whole cluster (Redis, two ``uvicorn app:asgi`` replicas, real nginx with ``deploy/nginx.conf``),
driven by the official ``mcp`` client: sessions whose requests alternate between the replicas (as nginx's
access log shows), in the handshake era, and the stateless era through the same nginx. nginx on its own
is ``test_nginx.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from deploy.local_cluster import LocalCluster
from deploy.nginx import Routed
from tests.support.http import READ_BOUND

pytestmark = pytest.mark.timeout(60)

DEMO_TOOLS = {"text_stats", "digest", "now", "add_note"}


# -- the whole cluster, with the official client ---------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    logs: Path = tmp_path_factory.mktemp("local-cluster")
    env = {"WIREMCP_LOG_LEVEL": "WARNING", "UVICORN_LOG_LEVEL": "warning", "WIREMCP_DRAIN_SECONDS": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    with LocalCluster(2, log_dir=logs, env=env, access_log=False) as running:
        yield running
        replicas = running.replicas
    for replica in replicas:
        output = replica.output()
        assert "Traceback" not in output, (replica.name, output)


async def routed(cluster: LocalCluster) -> list[Routed]:
    """What nginx's access log says it did so far (``Nginx.routed``)."""
    assert cluster.balancer is not None
    return await asyncio.to_thread(cluster.balancer.routed)


@asynccontextmanager
async def official_client(url: str, mode: str) -> AsyncIterator[Client]:
    problems: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            problems.append(message)

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(READ_BOUND, read=60.0)) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=READ_BOUND, message_handler=on_message,
                          cache=None) as client:
            yield client
    assert problems == []


async def use_the_demo(client: Client, text: str) -> None:
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert tools >= DEMO_TOOLS
    result = await client.call_tool("text_stats", {"text": text})
    assert not result.is_error, result
    assert result.structured_content == {"words": len(text.split()), "chars": len(text), "lines": 1}
    digest = await client.call_tool("digest", {"text": text, "algorithm": "md5"})
    assert not digest.is_error, digest


@pytest.mark.spec("2025-11-25/basic/transports#session-management")
async def test_sessions_are_served_by_both_replicas_in_turn(cluster: LocalCluster) -> None:
    before = len(await routed(cluster))
    for n in range(3):
        async with official_client(cluster.url, "legacy") as client:
            assert client.protocol_version == "2025-11-25"
            await use_the_demo(client, f"session {n} of three")
    served = (await routed(cluster))[before:]
    sessions = {r.session for r in served}
    assert None not in sessions
    assert len(sessions) == 3
    for sid in sessions:
        mine = [r for r in served if r.session == sid]
        assert all(r.status in (200, 202) for r in mine), mine  # never 404: every replica knows the session
        assert {r.replica for r in mine} == {0, 1}, mine  # made on one replica, used on both
        assert "DELETE" in {r.method for r in mine}, mine  # (nginx logs a request when it ends: the GET stream after)
    counts = [sum(r.replica == i for r in served) for i in (0, 1)]
    assert abs(counts[0] - counts[1]) <= 1, counts


@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#backward-compatibility")
async def test_the_stateless_era_goes_through_the_same_nginx(cluster: LocalCluster) -> None:
    before = len(await routed(cluster))
    async with official_client(cluster.url, "auto") as client:
        assert client.protocol_version == "2026-07-28"
        for n in range(2):
            await use_the_demo(client, f"stateless round {n}")
    served = (await routed(cluster))[before:]
    assert len(served) >= 6
    assert {r.session for r in served} == {None}
    assert {r.status for r in served} == {200}
    assert {r.replica for r in served} == {0, 1}
