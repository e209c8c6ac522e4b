"""The Redis settings the Scale-out page (``docs/scale-out.md``) names, each observed on a real ``uvicorn app:asgi``
process and a real ``redis-server``, each test failing where its setting would be left at its default:

- ``WIREMCP_REDIS_URL`` and ``WIREMCP_REDIS_PREFIX``: a session's record is in that Redis, under that prefix,
  and nothing is under the default prefix;
- ``WIREMCP_REPLICA_ID`` and ``WIREMCP_REPLICA_LEASE_SECONDS``: the replica's liveness key names that id (as
  ``<id>@<life>``) and lives longer than the default lease allows (5 s) and no longer than the configured one;
- ``WIREMCP_SESSION_CACHE_SECONDS`` at 0: a session record deleted behind the replica's back (no pub/sub
  announcement) is gone on the very next request (with the default cache the replica would answer from its copy);
- ``WIREMCP_REDIS_TIMEOUT_SECONDS``: with a relay holding Redis's replies far longer than the configured timeout
  (and shorter than the default one), a request that needs Redis is answered 503; once the replies flow again,
  the same process serves.
- ``WIREMCP_REDIS_WAIT_REPLICAS`` and ``WIREMCP_REDIS_WAIT_TIMEOUT_MS``: the events of a call's stream are each
  followed by ``WAIT <replicas> <ms>`` with the configured numbers, as Redis's ``MONITOR`` shows (the default sends
  no WAIT); Redis has no replica here, so every WAIT comes back short, the events stay kept and are retried, and the
  call is answered all the same. (What WAIT is for, a failover, is ``test_redis_failover.py``'s.)

One process serves the first three groups (they do not disturb one another); the timeout's has its own, behind
the relay, and WAIT's its own. Nothing sleeps to wait for something: every wait polls the observable effect against a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis as redis_py
import redis.asyncio as redis_async

from tests.support.cluster import until
from tests.support.http import (
    START_BOUND,
    SSEReader,
    UvicornProcess,
    error_of,
    initialize,
    post_headers,
    request_body,
    run_uvicorn,
)
from tests.support.redis import RedisServer
from wiremcp.transports.redis.keys import Keys

SERVER = "tests.support.http_fixture_server:server"
PREFIX = "settings-test"
REPLICA = "rep-x"
LEASE = 9.0
"""Far from the default lease (5 s): a liveness key with more than 5 s to live can only come from this setting."""
DEFAULT_LEASE = 5.0
TIMEOUT_PREFIX = "settings-timeout"
TIMEOUT = 0.3
"""``WIREMCP_REDIS_TIMEOUT_SECONDS`` of the process behind the relay."""
HELD = 1.0
"""How long the relay holds each of Redis's replies when told to: three times the configured timeout, half the
default one (2 s), so that under the default every command would still succeed, only late."""
POLL_BOUND = 20.0
"""Failure bound of a poll for an effect."""
WAIT_PREFIX = "settings-wait"
WAIT_REPLICAS = 3
WAIT_MS = 137
"""Neither the default (no WAIT), nor the default wait (100 ms)."""

pytestmark = [pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def served(redis: RedisServer) -> Iterator[UvicornProcess]:
    """One replica with every setting of the first three groups."""
    env = {"WIREMCP_REDIS_URL": redis.url, "WIREMCP_REDIS_PREFIX": PREFIX, "WIREMCP_REPLICA_ID": REPLICA,
           "WIREMCP_REPLICA_LEASE_SECONDS": str(LEASE), "WIREMCP_SESSION_CACHE_SECONDS": "0"}
    with run_uvicorn(SERVER, env) as process:
        yield process
        output = process.output()
    assert "Traceback" not in output, output


@pytest.fixture(scope="module")
def store(redis: RedisServer) -> Iterator[redis_py.Redis]:
    """A plain client of the same Redis, to look at what the replica keeps there."""
    client = redis_py.Redis.from_url(redis.url, decode_responses=True)
    yield client
    client.close()


def _initialize_body() -> bytes:
    params = {"protocolVersion": "2025-11-25", "capabilities": {},
              "clientInfo": {"name": "settings", "version": "0"}}
    return json.dumps(request_body(1, "initialize", params)).encode()


# -- one replica: prefix, replica id and lease, session cache ---------------------------------------------------
@pytest.mark.setting("WIREMCP_REDIS_URL", "WIREMCP_REDIS_PREFIX")
async def test_sessions_are_kept_in_the_configured_redis_under_the_configured_prefix(
        served: UvicornProcess, store: redis_py.Redis, http: httpx.AsyncClient) -> None:
    session = await initialize(http, served.url)
    record = Keys(PREFIX).session(session.sid)
    assert store.exists(record) == 1, f"no {record} in Redis; keys there: {sorted(store.scan_iter())}"
    assert sorted(store.scan_iter(match="wiremcp:*")) == [], "keys under the default prefix"


@pytest.mark.setting("WIREMCP_REPLICA_ID", "WIREMCP_REPLICA_LEASE_SECONDS")
async def test_the_replica_holds_a_lease_under_its_id_for_the_configured_time(
        served: UvicornProcess, store: redis_py.Redis) -> None:
    pattern = Keys(PREFIX).alive("*")
    await until(lambda: any(True for _ in store.scan_iter(match=pattern)), POLL_BOUND, f"a liveness key {pattern}")
    keys = sorted(store.scan_iter(match=pattern))
    assert len(keys) == 1, keys
    assert keys[0].startswith(Keys(PREFIX).alive(f"{REPLICA}@")), keys
    seen: list[int] = []

    def renewed_beyond_the_default() -> bool:
        ttl = int(store.pttl(keys[0]))
        seen.append(ttl)
        assert 0 < ttl <= LEASE * 1000, f"the lease's time to live is {ttl} ms"
        return ttl > DEFAULT_LEASE * 1000

    # Renewed every third of the lease: right after a renewal, it has almost all of it (9 s) to live.
    await until(renewed_beyond_the_default, POLL_BOUND,
                lambda: f"more than {DEFAULT_LEASE}s to live for the lease (the last times: {seen[-5:]} ms)")


@pytest.mark.setting("WIREMCP_SESSION_CACHE_SECONDS")
async def test_without_a_session_cache_a_record_deleted_behind_the_replicas_back_is_gone_at_once(
        served: UvicornProcess, store: redis_py.Redis, http: httpx.AsyncClient) -> None:
    session = await initialize(http, served.url)
    assert await session.tool("echo", text="read it") == "read it"  # the replica has just read the session
    assert store.delete(Keys(PREFIX).session(session.sid)) == 1  # no announcement: only Redis knows
    gone = await session.request("tools/call", {"name": "echo", "arguments": {"text": "from a copy?"}})
    assert gone.status_code == 404, f"answered {gone.status_code} from the replica's copy: {gone.text}"
    assert error_of(gone)[0] == -32600


# -- the command timeout, behind a relay that can hold Redis's replies ---------------------------------------------
class SlowRelay:
    """A TCP relay to Redis on its own thread and event loop (the server connects through it while the test's
    loop is busy elsewhere). ``held``: seconds each chunk Redis sends back is held, from its arrival."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.held = 0.0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="slow-relay", daemon=True)
        self._connections: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def __enter__(self) -> SlowRelay:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self._loop).result(START_BOUND)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(START_BOUND)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(START_BOUND)
        self._loop.close()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _serve(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            redis_in, redis_out = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_out.close()
            self._connections.discard(task)
            return
        replies: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def requests() -> None:
            while chunk := await client_in.read(1 << 16):
                redis_out.write(chunk)
                await redis_out.drain()

        async def from_redis() -> None:
            while chunk := await redis_in.read(1 << 16):
                replies.put_nowait((loop.time() + self.held, chunk))

        async def to_client() -> None:
            while True:
                due, chunk = await replies.get()
                await asyncio.sleep(max(0.0, due - loop.time()))  # the hold is what this relay is for
                client_out.write(chunk)
                await client_out.drain()

        pumps = [asyncio.create_task(pump()) for pump in (requests, from_redis, to_client)]
        try:
            await asyncio.wait(pumps[:2], return_when=asyncio.FIRST_COMPLETED)  # either side closed
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for writer in (client_out, redis_out):
                with contextlib.suppress(Exception):
                    writer.close()
            self._connections.discard(task)


@pytest.mark.setting("WIREMCP_REDIS_TIMEOUT_SECONDS")
async def test_a_redis_slower_than_the_timeout_fails_the_request_with_503(
        redis: RedisServer, http: httpx.AsyncClient) -> None:
    with SlowRelay(redis.port) as relay:
        env = {"WIREMCP_REDIS_URL": relay.url, "WIREMCP_REDIS_PREFIX": TIMEOUT_PREFIX,
               "WIREMCP_REDIS_TIMEOUT_SECONDS": str(TIMEOUT)}
        with run_uvicorn(SERVER, env) as process:
            session = await initialize(http, process.url)
            assert await session.tool("echo", text="fast") == "fast"

            relay.held = HELD
            slow = await http.post(process.url, content=_initialize_body(), headers=post_headers())
            assert slow.status_code == 503, f"{slow.status_code} with Redis {HELD}s late: {slow.text}"
            assert error_of(slow)[0] == -32603
            assert slow.headers.get("retry-after") == "1", slow.headers

            relay.held = 0.0
            again = await initialize(http, process.url)  # a new session: Redis again, on the same process
            assert await again.tool("echo", text="served") == "served"
            assert await session.tool("echo", text="still") == "still"
            output = process.output()
        assert "Traceback" not in output, output



# -- WAIT after each event of a call's stream -----------------------------------------------------------------------
@pytest.mark.setting("WIREMCP_REDIS_WAIT_REPLICAS", "WIREMCP_REDIS_WAIT_TIMEOUT_MS")
async def test_each_event_is_followed_by_a_wait_for_the_configured_replicas_and_time(
        redis: RedisServer, http: httpx.AsyncClient) -> None:
    env = {"WIREMCP_REDIS_URL": redis.url, "WIREMCP_REDIS_PREFIX": WAIT_PREFIX,
           "WIREMCP_REDIS_WAIT_REPLICAS": str(WAIT_REPLICAS), "WIREMCP_REDIS_WAIT_TIMEOUT_MS": str(WAIT_MS),
           "WIREMCP_SSE_AFTER_SECONDS": "0.05"}
    seen: list[Any] = []
    monitoring = asyncio.Event()

    async def monitor() -> None:
        client = redis_async.Redis.from_url(redis.url, decode_responses=True)
        try:
            async with client.monitor() as commands:
                monitoring.set()
                async for command in commands.listen():
                    seen.append(command["command"])
        finally:
            await client.aclose()

    with run_uvicorn(SERVER, env) as process:
        watcher = asyncio.create_task(monitor())
        try:
            await asyncio.wait_for(monitoring.wait(), POLL_BOUND)
            session = await initialize(http, process.url)
            call = request_body(session.next_id(), "tools/call",
                                {"name": "count_up", "arguments": {"steps": 3}, "_meta": {"progressToken": 1}})
            async with session.stream_post(call) as response:
                assert response.headers["content-type"].startswith("text/event-stream"), response.headers
                events = await SSEReader(response).rest()
            assert events[-1].message["id"] == call["id"], events[-1]
            await until(lambda: f"WAIT {WAIT_REPLICAS} {WAIT_MS}" in seen, POLL_BOUND,
                        lambda: f"WAIT {WAIT_REPLICAS} {WAIT_MS} among the commands Redis ran: {seen[-20:]}")
            assert all(c == f"WAIT {WAIT_REPLICAS} {WAIT_MS}" for c in seen if c.startswith("WAIT")), seen
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        output = process.output()
    assert "Traceback" not in output, output
    assert "its events are kept until Redis has them (0 of 3 replicas have them)" in output, output
