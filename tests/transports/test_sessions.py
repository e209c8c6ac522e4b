"""``wiremcp.transports.sessions``: sessions over HTTP: ids, idle expiry (with an injected clock), the
session limit, the store, and the memory a sweep of idle sessions hands back.

All in process: a ``SessionManager`` with a ``FakeClock`` behind a ``StreamableHTTPEndpoint``,
driven by plain ASGI calls, httpx over ``ASGITransport``, or uvicorn in the test's own loop.
"""

from __future__ import annotations

import asyncio
import gc
import json
import re
import sys
import tracemalloc
import weakref
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx
import pytest

from tests.support import http_fixture_server as fixture
from tests.support.http import (
    CLIENT_INFO,
    FakeClock,
    SSEReader,
    asgi_client,
    asgi_request,
    error_of,
    initialize,
    post_headers,
    request_body,
    serve_in_process,
)
from wiremcp import MCPServer
from wiremcp.backend import Backend
from wiremcp.errors import INTERNAL_ERROR, INVALID_REQUEST
from wiremcp.event_store import InMemoryEventStore
from wiremcp.session import ServerSession
from wiremcp.session_store import SERVER, Asker, InMemorySessionStore, SessionStore
from wiremcp.state import SessionState
from wiremcp.transports.allocator import FallFromPeak
from wiremcp.transports.sessions import (
    SessionLimitReached,
    SessionManager,
    new_session_id,
)
from wiremcp.transports.streamable_http import StreamableHTTPEndpoint

SESSIONS = "2025-11-25/basic/transports#session-management"
IDLE = 60.0

pytestmark = pytest.mark.timeout(30)


class Served:
    """A manager with a fake clock and the endpoint in front of it."""

    def __init__(self, *, max_sessions: int = 10_000, store: SessionStore | None = None,
                 events: InMemoryEventStore | None = None, clock: FakeClock | None = None) -> None:
        self.clock = clock or FakeClock()
        self.events = events if events is not None else InMemoryEventStore()
        backend = replace(Backend.in_memory(), events=self.events, sessions=store or InMemorySessionStore())
        self.manager = SessionManager(fixture.server, backend, idle_timeout=IDLE, max_sessions=max_sessions,
                                      clock=self.clock)
        self.endpoint = StreamableHTTPEndpoint(self.manager)


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    s = Served()
    yield s
    await s.manager.close()


@pytest.fixture
async def client(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(served.endpoint) as c:
        yield c


INIT = json.dumps(request_body(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                 "clientInfo": CLIENT_INFO})).encode()
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()


async def open_session(endpoint: StreamableHTTPEndpoint) -> str:
    """initialize + initialized as plain ASGI calls (cheap enough for thousands)."""
    answer = await asgi_request(endpoint, "POST", INIT, post_headers(), timeout=None)
    assert answer.status == 200, answer.body
    sid = answer.headers["mcp-session-id"]
    done = await asgi_request(endpoint, "POST", INITIALIZED, post_headers(**{"mcp-session-id": sid}), timeout=None)
    assert done.status == 202
    return sid


# -- ids --------------------------------------------------------------------------------------------------
@pytest.mark.spec(SESSIONS)
def test_session_ids_are_random_visible_ascii() -> None:
    ids = [new_session_id() for _ in range(1_000)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{43}", sid) for sid in ids)  # 256 bits, URL-safe base64
    assert all(re.fullmatch(r"[\x21-\x7e]+", sid) for sid in ids)


# -- idle expiry ------------------------------------------------------------------------------------------
@pytest.mark.spec(SESSIONS)
async def test_an_idle_session_expires_and_then_gets_404(served: Served, client: httpx.AsyncClient) -> None:
    idle = await initialize(client, "/mcp")
    busy = await initialize(client, "/mcp")
    served.clock.advance(IDLE / 2)
    assert await busy.call("ping") == {}  # any request restarts the idle clock
    served.clock.advance(IDLE / 2)
    assert await served.manager.expire_idle() == 0  # exactly IDLE seconds: not yet
    served.clock.advance(1)
    assert await served.manager.expire_idle() == 1
    gone = await idle.request("ping")
    assert gone.status_code == 404
    assert error_of(gone) == (INVALID_REQUEST, None)
    assert (await idle.get()).status_code == 404
    assert (await idle.delete()).status_code == 404
    assert await busy.call("ping") == {}  # the other session is still served
    assert await served.manager.store.count() == 1


@pytest.mark.spec(SESSIONS)
async def test_a_session_is_idle_from_the_end_of_its_last_call_not_from_its_arrival(served: Served) -> None:
    """A call longer than the idle timeout keeps its session, and the session outlives it by the timeout."""
    gate = "sessions-running"
    async with serve_in_process(served.endpoint) as base, httpx.AsyncClient(timeout=10) as http:
        running = await initialize(http, base + "/mcp")
        call = request_body(5, "tools/call", {"name": "stepper", "arguments": {"name": gate, "steps": 1},
                                              "_meta": {"progressToken": "t"}})
        async with running.stream_post(call) as response:
            events = SSEReader(response)
            await events.next()  # priming
            await events.next()  # progress 0: the tool is now waiting
            served.clock.advance(10 * IDLE)
            assert await served.manager.expire_idle() == 0
            assert running.sid in served.manager.live
            other = await initialize(http, base + "/mcp")  # releases the tool without touching `running`
            assert await other.tool("release", name=gate) == f"{gate}: step 1"
            rest = await events.rest()
        assert rest[-1].message["result"]["content"][0]["text"] == f"{gate}: 1 steps done"
        # Its last request came in 10 * IDLE ago, but the idle clock starts when the call ended: not idle yet.
        assert await served.manager.expire_idle() == 0
        served.clock.advance(IDLE)
        assert await served.manager.expire_idle() == 0  # exactly IDLE seconds after the answer: not yet
        served.clock.advance(1)
        assert await served.manager.expire_idle() == 2  # (and `other`, idle as long)
        assert running.sid not in served.manager.live
        assert (await running.request("ping")).status_code == 404


@pytest.mark.spec(SESSIONS)
async def test_thousands_of_idle_sessions_expire_and_their_memory_is_released(served: Served) -> None:
    async def open_many(n: int) -> list[str]:
        async with asyncio.timeout(20):  # one bound for all of them
            return [await open_session(served.endpoint) for _ in range(n)]

    # Warm up first: one-time caches (schemas, interned strings, dict growth) are not what is measured.
    await open_many(100)
    served.clock.advance(IDLE + 1)
    assert await served.manager.expire_idle() == 100
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        ids = await open_many(2_000)
        distinct, ids = len(set(ids)), ids[:5]  # keep the test's own bookkeeping out of the measurement
        gc.collect()
        loaded = tracemalloc.get_traced_memory()[0]
        served.clock.advance(IDLE + 1)
        expired = await served.manager.expire_idle()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert distinct == 2_000
    assert expired == 2_000
    assert await served.manager.store.count() == 0
    assert served.manager.live == {}
    assert served.events.size == (0, 0)
    grown = loaded - baseline
    assert grown > 2_000 * 1_000, grown  # each live session costs at least a kilobyte ...
    # ... and it comes back, but for the high-water marks of the containers (dict and set tables never shrink).
    assert after - baseline < 0.2 * grown, (baseline, loaded, after)
    for sid in ids:
        answer = await asgi_request(served.endpoint, "POST", json.dumps(request_body(2, "ping")).encode(),
                                    post_headers(**{"mcp-session-id": sid}))
        assert answer.status == 404


async def test_expiry_drops_the_sessions_stored_events(served: Served, client: httpx.AsyncClient) -> None:
    s = await initialize(client, "/mcp")
    answer = await s.request("tools/call", {"name": "chatty", "arguments": {"count": 3}})
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert served.events.size[0] == 5  # priming, three messages, the response
    served.clock.advance(IDLE + 1)
    assert await served.manager.expire_idle() == 1
    assert served.events.size == (0, 0)


# -- the session limit ------------------------------------------------------------------------------------
@pytest.mark.spec(SESSIONS)
async def test_the_session_limit_makes_room_from_idle_sessions_before_refusing() -> None:
    served = Served(max_sessions=2)
    async with asgi_client(served.endpoint) as client:
        first = await initialize(client, "/mcp")
        second = await initialize(client, "/mcp")
        refused = await client.post("/mcp", content=INIT, headers=post_headers())
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "30"
        assert error_of(refused) == (INTERNAL_ERROR, 1)
        assert await first.call("ping") == {}
        served.clock.advance(IDLE + 1)
        assert await second.call("ping") == {}  # second is fresh again; first is idle
        third = await initialize(client, "/mcp")  # first was expired to make room
        assert (await first.request("ping")).status_code == 404
        assert await second.call("ping") == {}
        assert await third.call("ping") == {}
    with pytest.raises(SessionLimitReached):
        await served.manager.create()
    await served.manager.close()
    assert served.manager.live == {}


# -- the store ----------------------------------------------------------------------------------------------
class JSONSessionStore(SessionStore):
    """A store that keeps sessions as JSON text, the way a shared store (a database, Redis) would."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    async def create(self, state: SessionState, limit: int | None = None) -> bool:
        if limit is not None and len(self.data) >= limit:
            return False
        await self.save(state)
        return True

    async def get(self, session_id: str, asker: Asker = SERVER) -> SessionState | None:
        raw = self.data.get(session_id)
        return SessionState.from_dict(json.loads(raw)) if raw is not None else None

    async def save(self, state: SessionState) -> None:
        assert state.id is not None
        self.data[state.id] = json.dumps(state.to_dict())

    async def delete(self, session_id: str) -> bool:
        return self.data.pop(session_id, None) is not None

    async def count(self) -> int:
        return len(self.data)


@pytest.mark.spec(SESSIONS)
async def test_any_process_holding_the_store_can_serve_the_session() -> None:
    store = JSONSessionStore()
    one, two = Served(store=store), Served(store=store)
    async with asgi_client(one.endpoint) as first, asgi_client(two.endpoint) as second:
        s = await initialize(first, "/mcp", "2025-06-18")
        await s.call("logging/setLevel", {"level": "warning"})
        elsewhere = type(s)(second, "/mcp", s.sid, s.version)  # the same session, on the other replica
        assert await elsewhere.tool("echo", text="hello") == "hello"
        too_new = await elsewhere.request("ping", **{"mcp-protocol-version": "2025-11-25"})
        assert too_new.status_code == 400  # the negotiated version came from the store
        state = await store.get(s.sid)
        assert state is not None
        assert (state.protocol_version, state.log_level, state.ready) == ("2025-06-18", "warning", True)
        assert (await elsewhere.delete()).status_code == 200
        assert await store.count() == 0
    await one.manager.close()
    await two.manager.close()


@pytest.mark.spec(SESSIONS)
async def test_a_session_deleted_on_one_replica_is_404_on_the_others() -> None:
    store = JSONSessionStore()
    one, two = Served(store=store), Served(store=store)
    async with asgi_client(one.endpoint) as first, asgi_client(two.endpoint) as second:
        s = await initialize(first, "/mcp")
        elsewhere = type(s)(second, "/mcp", s.sid, s.version)
        assert await elsewhere.call("ping") == {}
        assert (await elsewhere.delete()).status_code == 200
        try:
            assert (await s.request("ping")).status_code == 404
        finally:
            await one.manager.close()
            await two.manager.close()


# -- memory after sessions ended: handed back once enough of them have gone (SessionManager._give_back) -----
# Once the live count has fallen far enough below its peak (``FallFromPeak``), in one sweep or in many, the
# sweep leaves nothing of the ended sessions referenced, rebuilds the tables that listed them at the size the
# sessions left need, and only then releases the process's freed memory. What is checked is the mechanism
# (references, table sizes, when the release runs), never resident memory.

PING = json.dumps(request_body(2, "ping")).encode()


class Swept:
    """For the sweep tests: a manager of its own server (whose set of attached sessions no other test
    shares), with a fake clock and the endpoint in front of it, releasing by a ``FallFromPeak`` of
    ``fraction`` and ``floor``. With ``monkeypatch``, ``released`` records each release of freed memory
    instead of doing it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch | None, *, floor: int, fraction: float = 0.25) -> None:
        self.server = MCPServer("session-memory")
        self.clock = FakeClock()
        self.store = InMemorySessionStore()
        self.manager = SessionManager(self.server, replace(Backend.in_memory(), sessions=self.store),
                                      idle_timeout=IDLE, clock=self.clock)
        self.manager.release_rule = FallFromPeak(fraction, floor)
        self.endpoint = StreamableHTTPEndpoint(self.manager)
        self.released: list[int] = []
        """How many sessions were left at each release."""
        if monkeypatch is not None:
            monkeypatch.setattr("wiremcp.transports.sessions.release_freed_memory",
                                lambda: self.released.append(len(self.manager.live)))

    async def open(self, n: int) -> list[str]:
        """``n`` sessions, each initialized, then pinged."""
        ids = []
        for _ in range(n):
            answer = await asgi_request(self.endpoint, "POST", INIT, post_headers(), timeout=None)
            assert answer.status == 200, answer.body
            sid = answer.headers["mcp-session-id"]
            headers = post_headers(**{"mcp-session-id": sid})
            assert (await asgi_request(self.endpoint, "POST", INITIALIZED, headers, timeout=None)).status == 202
            assert (await asgi_request(self.endpoint, "POST", PING, headers, timeout=None)).status == 200
            ids.append(sid)
        # A request's task is done once answered, but leaves its session only when its done-callback has run:
        # callbacks run in the order they were scheduled, so one scheduled now runs after it.
        loop = asyncio.get_running_loop()
        turned = loop.create_future()
        loop.call_soon(turned.set_result, None)
        await turned
        assert not any(live.busy for live in self.manager.live.values())
        return ids

    def sessions(self, ids: list[str]) -> list[weakref.ref[ServerSession]]:
        return [weakref.ref(self.manager.live[sid].session) for sid in ids]

    def table_sizes(self) -> tuple[int, int, int]:
        """Bytes of the manager's table, the store's, and the server's set of attached sessions."""
        return (sys.getsizeof(self.manager.live), sys.getsizeof(self.store._states),
                sys.getsizeof(self._attached()))

    def compact_sizes(self) -> tuple[int, int, int]:
        """What the same tables would take if built now for what they hold."""
        return (sys.getsizeof(dict(self.manager.live)), sys.getsizeof(dict(self.store._states)),
                sys.getsizeof(set(self._attached())))

    def _attached(self) -> set[weakref.ref[ServerSession]]:
        """The set inside the server's ``WeakSet`` of attached sessions."""
        data: set[weakref.ref[ServerSession]] = self.server.runtime._sessions.data  # type: ignore[attr-defined]
        return data


@pytest.fixture
async def swept(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Swept]:
    s = Swept(monkeypatch, floor=40)
    yield s
    await s.manager.close()


async def test_a_sweep_that_ends_many_sessions_leaves_nothing_of_them_and_shrinks_the_tables(swept: Swept) -> None:
    ended = await swept.open(60)
    swept.clock.advance(IDLE / 2)
    kept = await swept.open(3)
    gone, alive = swept.sessions(ended), swept.sessions(kept)
    assert all(ref() is not None for ref in gone)
    table = swept.manager.live
    tables = (swept.store._states, swept.server.runtime._sessions, swept._attached())
    peak = swept.table_sizes()
    swept.clock.advance(IDLE / 2 + 1)

    assert await swept.manager.expire_idle() == 60

    # Freed by reference counting alone, before any collection: no reference to them is left, and no cycle.
    assert [ref for ref in gone if ref() is not None] == []
    assert all(ref() is not None for ref in alive)
    # Rebuilt in place: a table made now would land among the memory just freed, and hold it.
    assert swept.manager.live is table
    assert all(now is before for now, before in
               zip((swept.store._states, swept.server.runtime._sessions, swept._attached()), tables, strict=True))
    assert sorted(swept.manager.live) == sorted(kept)
    assert await swept.store.count() == 3
    assert len(swept.server.runtime._sessions) == 3
    # The tables are the size of what is left, smaller than at their peak.
    sizes = swept.table_sizes()
    assert sizes == swept.compact_sizes()
    assert all(now < before for now, before in zip(sizes, peak, strict=True)), (sizes, peak)
    assert swept.released == [3]  # once, after the tables were rebuilt
    # The sessions left are served as before.
    for sid in kept:
        headers = post_headers(**{"mcp-session-id": sid})
        assert (await asgi_request(swept.endpoint, "POST", PING, headers, timeout=None)).status == 200


async def test_sessions_ending_a_few_per_sweep_are_given_back_once_enough_of_the_peak_has_gone(
        swept: Swept) -> None:
    """100 sessions, opened 10 at a time, end 10 at a time: no sweep ends many, yet each time the live count
    has fallen by the floor (40) and by a quarter of its peak since the last release, the memory goes back."""
    for _ in range(10):
        await swept.open(10)
        swept.clock.advance(1)
    swept.clock.advance(IDLE - 10)
    left = []
    for _ in range(10):
        swept.clock.advance(1)
        assert await swept.manager.expire_idle() == 10
        left.append(len(swept.manager.live))
    assert left == [90, 80, 70, 60, 50, 40, 30, 20, 10, 0]
    # 100 -> 60: 40 gone (the floor; a quarter of 100 is 25); 60 -> 20; then 20 sessions are fewer than the floor.
    assert swept.released == [60, 20]


async def test_a_busy_server_with_steady_churn_does_not_release(swept: Swept) -> None:
    """As many sessions start as end between two sweeps: the live count holds (120 to 140), and what the
    ended ones leave is what the new ones take. When it falls, the release comes each time 40 (the floor)
    more have gone, not at every sweep."""
    for _ in range(6):
        await swept.open(20)
        swept.clock.advance(IDLE / 6)
    for _ in range(30):
        swept.clock.advance(IDLE / 12)
        await swept.open(20)  # the arrivals between two sweeps
        swept.clock.advance(IDLE / 12)
        assert await swept.manager.expire_idle() == 20
    assert len(swept.manager.live) == 120
    assert swept.released == []
    for _ in range(6):  # arrivals stop: 120 -> 0, 20 a sweep
        swept.clock.advance(IDLE / 6)
        assert await swept.manager.expire_idle() == 20
    assert swept.manager.live == {}
    assert swept.released == [100, 60, 20]  # 40 below the peak of 140 (a quarter: 35), then 40 at a time


async def test_sessions_deleted_between_sweeps_are_given_back_at_the_next_sweep(swept: Swept) -> None:
    """The peak is followed as sessions are opened, not only at sweeps: sessions opened and deleted between
    two sweeps count, and the next sweep, which ends none, gives their memory back."""
    ids = await swept.open(60)
    for sid in ids[:50]:
        headers = post_headers(**{"mcp-session-id": sid})
        assert (await asgi_request(swept.endpoint, "DELETE", b"", headers, timeout=None)).status == 200
    assert swept.released == []
    assert await swept.manager.expire_idle() == 0
    assert swept.released == [10]
    assert swept.table_sizes() == swept.compact_sizes()


async def test_the_release_itself_runs_when_a_sweep_ends_the_last_sessions() -> None:
    """The real release (a full collection, then ``malloc_trim`` where there is one), not a stand-in."""
    swept = Swept(None, floor=5)
    try:
        gone = swept.sessions(await swept.open(5))
        swept.clock.advance(IDLE + 1)
        assert await swept.manager.expire_idle() == 5
        assert swept.manager.live == {}
        assert [ref for ref in gone if ref() is not None] == []
        assert swept.table_sizes() == swept.compact_sizes()
    finally:
        await swept.manager.close()
