"""``RedisBackend``: the parts it wires to the one cluster link hear what other replicas announce (the task
runner: tasks cancelled or answered there; the session manager given its cluster: sessions changed or
deleted there), against a real redis-server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from tests.support import http_fixture_server as fixture
from tests.support.cluster import make_cluster, next_item, started, until
from tests.support.redis import RedisServer
from wiremcp.runtime import Runtime
from wiremcp.server import MCPServer
from wiremcp.transports.redis.backend import RedisBackend
from wiremcp.transports.redis.connection import Keys
from wiremcp.transports.sessions import SessionManager

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def backend(redis_server: RedisServer, redis_keys: Keys) -> AsyncIterator[RedisBackend]:
    """Replica "A"'s backend as ``build_redis`` makes it (each test starts its cluster link)."""
    backend = RedisBackend.connect(redis_server.url, prefix=redis_keys.prefix, replica="A", lease=1.0)
    yield backend
    await backend.cluster.close()


async def test_the_task_runner_hears_of_its_tasks_cancelled_or_answered_on_another_replica(
        backend: RedisBackend, redis_server: RedisServer, redis_keys: Keys, monkeypatch: pytest.MonkeyPatch) -> None:
    server = MCPServer("backend-tasks")
    runner = Runtime(server, bus=backend.bus, task_store=backend.tasks, replicas=backend.cluster).task_runner
    cancelled: asyncio.Queue[str] = asyncio.Queue()
    answered: asyncio.Queue[str] = asyncio.Queue()
    monkeypatch.setattr(runner, "cancel_local", cancelled.put_nowait)
    monkeypatch.setattr(runner.inputs, "wake_soon", answered.put_nowait)
    other = make_cluster(redis_server.url, redis_keys, "B")
    async with started(backend.cluster, other):
        await other.broadcast_task_cancel("task-1")
        assert await next_item(cancelled) == "task-1"
        await other.broadcast_task_input("task-2")
        assert await next_item(answered) == "task-2"


async def test_the_session_manager_hears_of_its_sessions_changed_or_deleted_on_another_replica(
        backend: RedisBackend, redis_server: RedisServer, redis_keys: Keys) -> None:
    manager = SessionManager(fixture.server, backend.sessions, backend.events, cluster=backend.cluster,
                             fresh_for=60.0)
    other = make_cluster(redis_server.url, redis_keys, "B")
    try:
        async with started(backend.cluster, other):
            live = await manager.create()
            live.checked = time.monotonic()  # confirmed by the store just now
            await other.broadcast_changed(live.id)
            await until(lambda: live.checked == float("-inf"), what="the copy to be marked stale")
            await other.broadcast_delete(live.id)
            await until(lambda: live.id not in manager.live, what="the copy to be dropped")
    finally:
        await manager.close()
