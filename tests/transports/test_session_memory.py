"""Memory after idle expiry: a sweep that ends many sessions leaves nothing of them referenced, rebuilds the
tables that listed them at the size the sessions left need, and only then releases the process's freed memory
(``SessionManager._give_back``, ``transports.allocator``).

All in process, with an injected clock; sessions are opened with plain ASGI calls. What is checked is the
mechanism (references, table sizes, when the release runs), never resident memory.
"""

from __future__ import annotations

import asyncio
import json
import sys
import weakref
from collections.abc import AsyncIterator

import pytest

from tests.support.http import CLIENT_INFO, FakeClock, asgi_request, post_headers, request_body
from wiremcp import MCPServer
from wiremcp.session import ServerSession
from wiremcp.transports import allocator
from wiremcp.transports.events import InMemoryEventStore
from wiremcp.transports.sessions import InMemorySessionStore, SessionManager
from wiremcp.transports.streamable_http import StreamableHTTPEndpoint

IDLE = 60.0

pytestmark = pytest.mark.timeout(30)

INIT = json.dumps(request_body(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                 "clientInfo": CLIENT_INFO})).encode()
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
PING = json.dumps(request_body(2, "ping")).encode()


class Served:
    """A manager of its own server (whose set of attached sessions no other test shares), with a fake clock
    and the endpoint in front of it. With ``monkeypatch``, ``released`` records each release of freed memory
    instead of doing it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch | None, *, give_back_after: int) -> None:
        self.server = MCPServer("session-memory")
        self.clock = FakeClock()
        self.store = InMemorySessionStore()
        self.manager = SessionManager(self.server, self.store, InMemoryEventStore(), idle_timeout=IDLE,
                                      clock=self.clock)
        self.manager.give_back_after = give_back_after
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
        data: set[weakref.ref[ServerSession]] = self.server._sessions.data  # type: ignore[attr-defined]
        return data


@pytest.fixture
async def served(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Served]:
    s = Served(monkeypatch, give_back_after=40)
    yield s
    await s.manager.close()


async def test_a_sweep_that_ends_many_sessions_leaves_nothing_of_them_and_shrinks_the_tables(served: Served) -> None:
    ended = await served.open(60)
    served.clock.advance(IDLE / 2)
    kept = await served.open(3)
    gone, alive = served.sessions(ended), served.sessions(kept)
    assert all(ref() is not None for ref in gone)
    table = served.manager.live
    tables = (served.store._states, served.server._sessions, served._attached())
    peak = served.table_sizes()
    served.clock.advance(IDLE / 2 + 1)

    assert await served.manager.expire_idle() == 60

    # Freed by reference counting alone, before any collection: no reference to them is left, and no cycle.
    assert [ref for ref in gone if ref() is not None] == []
    assert all(ref() is not None for ref in alive)
    # Rebuilt in place: a table made now would land among the memory just freed, and hold it.
    assert served.manager.live is table
    assert all(now is before for now, before in
               zip((served.store._states, served.server._sessions, served._attached()), tables, strict=True))
    assert sorted(served.manager.live) == sorted(kept)
    assert await served.store.count() == 3
    assert len(served.server._sessions) == 3
    # The tables are the size of what is left, smaller than at their peak.
    sizes = served.table_sizes()
    assert sizes == served.compact_sizes()
    assert all(now < before for now, before in zip(sizes, peak, strict=True)), (sizes, peak)
    assert served.released == [3]  # once, after the tables were rebuilt
    # The sessions left are served as before.
    for sid in kept:
        headers = post_headers(**{"mcp-session-id": sid})
        assert (await asgi_request(served.endpoint, "POST", PING, headers, timeout=None)).status == 200


async def test_a_sweep_that_ends_few_sessions_or_fewer_than_are_left_keeps_their_room(served: Served) -> None:
    await served.open(30)
    served.clock.advance(IDLE / 2)
    await served.open(45)
    served.clock.advance(IDLE / 2 + 1)
    assert await served.manager.expire_idle() == 30  # fewer than give_back_after (40)
    assert served.released == []
    await served.open(50)
    served.clock.advance(IDLE / 2)
    assert await served.manager.expire_idle() == 45  # enough, but fewer than the 50 left
    assert served.released == []
    served.clock.advance(IDLE / 2 + 1)
    assert await served.manager.expire_idle() == 50  # enough, and none left
    assert served.released == [0]
    assert served.table_sizes() == served.compact_sizes()


async def test_the_release_itself_runs_when_a_sweep_ends_the_last_sessions() -> None:
    """The real release (a full collection, then ``malloc_trim`` where there is one), not a stand-in."""
    served = Served(None, give_back_after=5)
    try:
        gone = served.sessions(await served.open(5))
        served.clock.advance(IDLE + 1)
        assert await served.manager.expire_idle() == 5
        assert served.manager.live == {}
        assert [ref for ref in gone if ref() is not None] == []
        assert served.table_sizes() == served.compact_sizes()
    finally:
        await served.manager.close()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_release_freed_memory_collects_then_trims(monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[int] = []

    def trim() -> bool:
        trims.append(1)
        return True

    monkeypatch.setattr(allocator, "trim_heap", trim)
    cycle = _Cycle()
    ref = weakref.ref(cycle)
    del cycle
    assert ref() is not None  # held by its own cycle until a collection
    allocator.release_freed_memory()
    assert ref() is None
    assert trims == [1]


def test_trim_heap_does_nothing_where_the_c_library_has_no_malloc_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "_TRIM", None)
    assert allocator.trim_heap() is False


def test_trim_heap_calls_malloc_trim_where_there_is_one() -> None:
    if allocator._TRIM is None:
        pytest.skip("this C library has no malloc_trim")
    assert isinstance(allocator.trim_heap(), bool)


class _Looked:
    attribute_named_at_run_time = 1


def test_release_freed_memory_drops_the_names_the_type_cache_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name made at run time (``datetime.timetuple()``'s ``"struct_time"``) stays referenced by the type
    attribute cache after the lookup, and holds the arena it was made in, until the release empties the cache."""
    monkeypatch.setattr(allocator, "trim_heap", lambda: False)
    name = "".join(["attribute_named_", "at_run_time"])  # a new string, not interned
    alone = sys.getrefcount(name)
    assert getattr(_Looked(), name) == 1
    if sys.getrefcount(name) == alone:
        pytest.skip("this interpreter's type cache keeps no reference to names that are not interned")
    allocator.release_freed_memory()
    assert sys.getrefcount(name) == alone
