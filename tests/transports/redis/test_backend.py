"""``RedisBackend``: the parts it wires to the one cluster link hear what other replicas announce (the task
runner: tasks cancelled or answered there; the session manager given its cluster: sessions changed or
deleted there; the session store: its copies of sessions saved or deleted there, so that two replicas
serving one session over HTTP answer from their copies yet see each other's changes and deletes), against
a real redis-server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support import http_fixture_server as fixture
from tests.support.cluster import TIMEOUT, make_cluster, next_item, started, until
from tests.support.http import RawSession, initialize, serve_in_process
from tests.support.redis import RedisServer
from wiremcp.replica_link import ClusterEvents
from wiremcp.runtime import Runtime
from wiremcp.server import MCPServer
from wiremcp.transports.redis.backend import RedisBackend
from wiremcp.transports.redis.connection import Redis, connect
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.replica_link import RedisReplicaLink
from wiremcp.transports.redis.sessions import RedisSessionStore
from wiremcp.transports.sessions import SessionManager
from wiremcp.transports.streamable_http import HttpOptions, StreamableHTTPEndpoint

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def backend(redis_url: str, redis_keys: Keys) -> AsyncIterator[RedisBackend]:
    """Replica "A"'s backend as ``build_redis`` makes it (each test starts its cluster link)."""
    backend = RedisBackend.connect(redis_url, prefix=redis_keys.prefix, replica="A", lease=1.0)
    yield backend
    await backend.link.close()


async def test_the_task_runner_hears_of_its_tasks_cancelled_or_answered_on_another_replica(
        backend: RedisBackend, redis_url: str, redis_keys: Keys, monkeypatch: pytest.MonkeyPatch) -> None:
    server = MCPServer("backend-tasks")
    runner = Runtime(server, backend=backend).task_runner
    cancelled: asyncio.Queue[str] = asyncio.Queue()
    answered: asyncio.Queue[str] = asyncio.Queue()
    monkeypatch.setattr(runner, "cancel_local", cancelled.put_nowait)
    monkeypatch.setattr(runner.inputs, "wake_soon", answered.put_nowait)
    other = make_cluster(redis_url, redis_keys, "B")
    async with started(backend.link, other):
        await other.broadcast_task_cancel("task-1")
        assert await next_item(cancelled) == "task-1"
        await other.broadcast_task_input("task-2")
        assert await next_item(answered) == "task-2"


async def test_the_session_manager_hears_of_its_sessions_deleted_on_another_replica(
        backend: RedisBackend, redis_url: str, redis_keys: Keys) -> None:
    manager = SessionManager(fixture.server, backend)
    other = make_cluster(redis_url, redis_keys, "B")
    try:
        async with started(backend.link, other):
            live = await manager.create()
            await other.broadcast_delete(live.id)
            await until(lambda: live.id not in manager.live, what="the copy to be dropped")
    finally:
        await manager.close()


class Heard(ClusterEvents):
    """What a replica's link delivered, registered after everything the backend and the manager wired to it:
    once a message is here, they have all had it."""

    def __init__(self, cluster: RedisReplicaLink) -> None:
        self.changes: asyncio.Queue[str] = asyncio.Queue()
        self.deletes: asyncio.Queue[str] = asyncio.Queue()
        cluster.listen(self)

    def session_changed(self, session_id: str) -> None:
        self.changes.put_nowait(session_id)

    def session_deleted(self, session_id: str) -> None:
        self.deletes.put_nowait(session_id)


async def _store_commands(client: Redis) -> int:
    """Commands Redis has run, but for ``INFO`` and the replicas' lease renewals (``SET``)."""
    stats = await client.info("commandstats")
    return sum(int(entry["calls"]) - int(entry.get("failed_calls", 0)) for name, entry in stats.items()
               if name not in ("cmdstat_info", "cmdstat_set", "cmdstat_script"))


@pytest.mark.spec("2025-11-25/basic/transports#session-management")
async def test_two_replicas_answer_from_their_copies_and_see_each_others_changes_and_deletes(
        redis_server: RedisServer, redis_keys: Keys) -> None:
    """Replicas A and B as ``build_redis`` makes them (with a freshness bound long enough that only an
    announcement can drop a copy), each serving the session over HTTP: requests answered from B's copy
    send nothing to Redis; ``logging/setLevel`` on A is what B's next request sees; DELETE on A is a 404
    on B's next request."""
    backends = {name: RedisBackend.connect(redis_server.url, prefix=redis_keys.prefix, replica=name, lease=1.0,
                                           session_cache=30.0) for name in ("A", "B")}
    managers = {name: SessionManager(fixture.server, backend)
                for name, backend in backends.items()}
    stats = connect(redis_server.url, timeout=TIMEOUT)
    options = HttpOptions(sse_after=60)
    try:
        async with started(*(b.link for b in backends.values())), \
                serve_in_process(StreamableHTTPEndpoint(managers["A"], options)) as url_a, \
                serve_in_process(StreamableHTTPEndpoint(managers["B"], options)) as url_b, \
                httpx.AsyncClient(timeout=10) as http:
            heard_b = Heard(backends["B"].link)
            at_a = await initialize(http, url_a + "/mcp")
            at_b = RawSession(http, url_b + "/mcp", at_a.sid, at_a.version)

            chatty = {"name": "chatty", "arguments": {"count": 1}}
            logged = await at_b.request("tools/call", chatty)
            assert logged.headers["content-type"].startswith("text/event-stream")  # its log message came first
            before = await _store_commands(stats)
            for i in range(20):
                assert await at_b.tool("echo", text=str(i)) == str(i)
            assert await _store_commands(stats) - before == 0  # B's copy: no round trip

            assert (await at_a.request("logging/setLevel", {"level": "error"})).status_code == 200
            # B's one copy is dropped (an earlier announcement may be what the queue holds first)
            copies = backends["B"].sessions
            assert isinstance(copies, RedisSessionStore)
            await until(lambda: copies.cached == 0, what="B's copy to be dropped")
            quiet = await at_b.request("tools/call", chatty)
            assert quiet.status_code == 200
            assert quiet.headers["content-type"] == "application/json"  # the info message is below "error"

            assert (await at_a.delete()).status_code == 200
            assert await next_item(heard_b.deletes) == at_a.sid
            gone = await at_b.request("tools/list")
            assert gone.status_code == 404, gone.text
    finally:
        for manager in managers.values():
            await manager.close()
        for backend in backends.values():
            await backend.link.close()
        await stats.aclose()
