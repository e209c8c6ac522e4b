"""``InMemoryEventStore``: replay after an id, bounds by count, bytes and age, and dropping sessions.

Time is injected by replacing the module's ``time`` with a fake clock (only that module's view:
the event loop keeps the real one).
"""

from __future__ import annotations

import types

import orjson
import pytest

from tests.support.http import FakeClock
from wiremcp import event_store
from wiremcp.event_store import InMemoryEventStore, StoredEvent, format_event_id, parse_event_id
from wiremcp.types import JSONObject

RESUMABILITY = "2025-11-25/basic/transports#resumability-and-redelivery"
OVERHEAD = 64  # what the store counts per event besides the message's JSON


def note(n: int, pad: str = "") -> JSONObject:
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": f"{n}{pad}"}}


def size_of(message: JSONObject | None) -> int:
    return OVERHEAD + (len(orjson.dumps(message)) if message is not None else 0)


def seqs(stored: list[StoredEvent] | None) -> list[int]:
    assert stored is not None
    return [event.seq for event in stored]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(event_store, "time", types.SimpleNamespace(monotonic=fake))
    return fake


async def fill(store: InMemoryEventStore, session: str, stream: str, count: int, start: int = 0) -> None:
    for seq in range(start, start + count):
        await store.append(session, stream, seq, note(seq))


# -- ids ------------------------------------------------------------------------------------------------------
@pytest.mark.spec(RESUMABILITY)
def test_an_event_id_names_its_stream_and_its_place_in_it() -> None:
    assert format_event_id("p0a1b2c3d4e5f", 7) == "p0a1b2c3d4e5f_7"
    assert parse_event_id("p0a1b2c3d4e5f_7") == ("p0a1b2c3d4e5f", 7)
    assert parse_event_id("get_0") == ("get", 0)
    assert parse_event_id("a_b_12") == ("a_b", 12)  # the last underscore separates
    assert parse_event_id(f"get_{(1 << 63) - 2}") == ("get", (1 << 63) - 2)  # the largest number any store holds
    assert StoredEvent("get", 3, None).id == "get_3"


@pytest.mark.parametrize("bad", ["", "nounderscore", "_1", "stream_", "stream_-1", "stream_1a", "stream_ 1",
                                 "s" * 200 + "_1", "stream_\u00b2", "stream_\u0663",
                                 "get_18446744073709551616", f"get_{(1 << 63) - 1}", "str eam_1"])
def test_malformed_event_ids_are_not_parsed(bad: str) -> None:
    assert parse_event_id(bad) is None


# -- replay -----------------------------------------------------------------------------------------------------
@pytest.mark.spec(RESUMABILITY)
async def test_replay_returns_the_events_after_an_id_of_that_stream_only() -> None:
    store = InMemoryEventStore()
    await store.append("s1", "pA", 0, None)  # a priming event
    await fill(store, "s1", "pA", 4, start=1)
    await fill(store, "s1", "pB", 3)
    await fill(store, "s2", "pA", 2)
    assert seqs(await store.after("s1", "pA", 0)) == [1, 2, 3, 4]
    assert seqs(await store.after("s1", "pA", 2)) == [3, 4]
    assert seqs(await store.after("s1", "pA", 4)) == []  # nothing new, and that is not an error
    assert seqs(await store.after("s1", "pB", 0)) == [1, 2]
    assert seqs(await store.after("s2", "pA", 0)) == [1]
    replay = await store.after("s1", "pA", 2)
    assert replay is not None
    assert [(e.stream, e.id, e.message) for e in replay] == [("pA", "pA_3", note(3)), ("pA", "pA_4", note(4))]
    assert store.size == (10, size_of(None) + sum(size_of(note(n)) for n in (1, 2, 3, 4, 0, 1, 2, 0, 1)))


@pytest.mark.spec(RESUMABILITY)
async def test_unknown_ids_get_none() -> None:
    store = InMemoryEventStore()
    await fill(store, "s1", "pA", 3)
    assert await store.after("s1", "pA", 3) is None  # never sent
    assert await store.after("s1", "pZ", 0) is None  # no such stream
    assert await store.after("s2", "pA", 0) is None  # another session's stream
    assert await store.after("nobody", "get", 0) is None


# -- bounds ---------------------------------------------------------------------------------------------------
@pytest.mark.spec(RESUMABILITY)
async def test_the_count_bound_evicts_the_oldest_events_first() -> None:
    store = InMemoryEventStore(max_events=3)
    await fill(store, "s1", "pA", 5)
    assert store.size[0] == 3
    assert await store.after("s1", "pA", 0) is None  # event 1, which follows it, is gone
    assert seqs(await store.after("s1", "pA", 1)) == [2, 3, 4]  # 1 was evicted, but everything after it is here
    assert seqs(await store.after("s1", "pA", 3)) == [4]


async def test_eviction_is_oldest_first_across_sessions_and_streams() -> None:
    store = InMemoryEventStore(max_events=4)
    await fill(store, "s1", "pA", 2)  # oldest
    await fill(store, "s2", "get", 2)
    await fill(store, "s1", "pB", 2)  # newest: pushes out s1/pA
    assert await store.after("s1", "pA", 0) is None
    assert seqs(await store.after("s2", "get", 0)) == [1]
    assert seqs(await store.after("s1", "pB", 0)) == [1]
    assert store.size[0] == 4


@pytest.mark.spec(RESUMABILITY)
async def test_the_byte_bound_keeps_the_total_under_the_limit() -> None:
    big = [note(n, pad="x" * 1000) for n in range(10)]
    limit = 3 * size_of(big[0]) + 10
    store = InMemoryEventStore(max_bytes=limit)
    for seq, message in enumerate(big):
        await store.append("s1", "pA", seq, message)
        assert store.size[1] <= limit
    assert store.size == (3, 3 * size_of(big[0]))
    assert await store.after("s1", "pA", 5) is None
    assert seqs(await store.after("s1", "pA", 6)) == [7, 8, 9]


async def test_an_event_larger_than_the_byte_bound_is_not_kept() -> None:
    store = InMemoryEventStore(max_bytes=500)
    await store.append("s1", "pA", 0, None)
    await store.append("s1", "pA", 1, note(1, pad="y" * 1000))
    assert store.size == (0, 0)
    assert await store.after("s1", "pA", 0) is None  # what followed the priming event is lost: resume fails


@pytest.mark.spec(RESUMABILITY)
async def test_the_age_bound_evicts_old_events(clock: FakeClock) -> None:
    store = InMemoryEventStore(max_age=10.0)
    await fill(store, "s1", "pA", 2)  # t = 0
    clock.advance(6)
    await fill(store, "s1", "pA", 2, start=2)  # t = 6
    assert seqs(await store.after("s1", "pA", 0)) == [1, 2, 3]
    clock.advance(5)  # t = 11: the first two are older than 10 s
    assert await store.after("s1", "pA", 0) is None
    assert seqs(await store.after("s1", "pA", 1)) == [2, 3]
    assert store.size[0] == 2
    clock.advance(10)  # t = 21: all of them
    assert seqs(await store.after("s1", "pA", 3)) == []
    assert store.size == (0, 0)
    await store.append("s1", "pA", 4, note(4))  # the stream goes on
    assert seqs(await store.after("s1", "pA", 3)) == [4]


# -- dropping sessions -------------------------------------------------------------------------------------
async def test_drop_session_forgets_its_streams_and_only_them() -> None:
    store = InMemoryEventStore()
    await fill(store, "s1", "pA", 3)
    await fill(store, "s1", "get", 2)
    await fill(store, "s2", "pA", 2)
    await store.drop_session("s1")
    assert await store.after("s1", "pA", 0) is None
    assert await store.after("s1", "get", 0) is None
    assert seqs(await store.after("s2", "pA", 0)) == [1]
    assert store.size == (2, size_of(note(0)) + size_of(note(1)))
    await store.drop_session("s1")  # again: nothing happens
    await store.drop_session("never-seen")
    assert store.size[0] == 2


async def test_dropped_sessions_do_not_disturb_later_eviction() -> None:
    store = InMemoryEventStore(max_events=100)
    for n in range(2_000):  # many short sessions, dropped: their bookkeeping is compacted away
        await fill(store, f"s{n}", "pA", 2)
        await store.drop_session(f"s{n}")
    assert store.size == (0, 0)
    await fill(store, "live", "pA", 150)
    assert store.size[0] == 100
    assert seqs(await store.after("live", "pA", 49)) == list(range(50, 150))
    assert await store.after("live", "pA", 48) is None
    await store.drop_session("live")
    assert store.size == (0, 0)
