"""``RedisEventStore`` against a real redis-server: replay order, unknown and evicted positions,
conditional appends (the first writer of a number wins), numbering shared by replicas, the
metadata of each event, dropping a session, and the streams' age bound. What happens to an event Redis
cannot store (yet) is ``test_outbox.py``'s."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.cluster import until
from wiremcp.event_store import StoredEvent
from wiremcp.transports.redis.connection import Redis
from wiremcp.transports.redis.events import RedisEventStore
from wiremcp.transports.redis.keys import Keys
from wiremcp.types import JSONObject

pytestmark = pytest.mark.timeout(30)

SID = "session-1"


def note(n: int, by: str = "") -> JSONObject:
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": f"{by}{n}"}}


async def test_appended_events_replay_in_order_after_any_known_position(client: Redis, redis_keys: Keys) -> None:
    store = RedisEventStore(client, redis_keys, replica="A")
    assert await store.last(SID, "p1") == -1
    assert await store.after(SID, "p1", -1) is None  # no such stream yet
    messages = [note(i) for i in range(5)]
    for seq, message in enumerate(messages):
        await store.append(SID, "p1", seq, message)
    assert await store.last(SID, "p1") == 4

    everything = await store.after(SID, "p1", -1)
    assert everything is not None
    assert [(e.stream, e.seq, e.message) for e in everything] == [("p1", i, m) for i, m in enumerate(messages)]
    assert [e.id for e in everything] == [f"p1_{i}" for i in range(5)]
    tail = await store.after(SID, "p1", 2)
    assert tail is not None
    assert [(e.seq, e.message) for e in tail] == [(3, messages[3]), (4, messages[4])]
    assert await store.after(SID, "p1", 4) == []  # up to date


async def test_an_unknown_position_is_none(client: Redis, redis_keys: Keys) -> None:
    store = RedisEventStore(client, redis_keys, replica="A")
    for seq in range(3):
        await store.append(SID, "p1", seq, note(seq))
    assert await store.after(SID, "p1", 3) is None  # beyond the newest event
    assert await store.after(SID, "p1", 1_000) is None
    assert await store.after(SID, "p2", 0) is None  # another stream
    assert await store.after("session-2", "p1", 0) is None  # another session
    assert await store.last("session-2", "p1") == -1


async def test_a_position_older_than_what_maxlen_kept_is_none(client: Redis, redis_keys: Keys) -> None:
    store = RedisEventStore(client, redis_keys, replica="A", max_events_per_stream=10)
    appended = 1_000
    for seq in range(appended):
        await store.append(SID, "p1", seq, note(seq))
    kept = await client.xlen(redis_keys.events(SID, "p1"))
    assert 10 <= kept < appended  # MAXLEN ~ trims whole macro nodes, never below the bound
    first = appended - kept
    assert await store.last(SID, "p1") == appended - 1

    assert await store.after(SID, "p1", 0) is None
    assert await store.after(SID, "p1", first - 2) is None  # the event after it is gone
    rest = await store.after(SID, "p1", first - 1)  # everything after it is still there
    assert rest is not None
    assert [e.seq for e in rest] == list(range(first, appended))
    assert [e.message for e in rest] == [note(seq) for seq in range(first, appended)]
    assert await store.after(SID, "p1", appended - 1) == []


async def test_the_first_writer_of_a_number_wins(client: Redis, other_client: Redis, redis_keys: Keys) -> None:
    a = RedisEventStore(client, redis_keys, replica="A")
    b = RedisEventStore(other_client, redis_keys, replica="B")
    await a.append(SID, "p1", 0, note(0, "A"))
    await b.append(SID, "p1", 0, note(0, "B"))
    await b.append(SID, "p1", 1, note(1, "B"))
    await a.append(SID, "p1", 1, note(1, "A"))
    await a.append(SID, "p1", 0, note(0, "late"))  # older than the newest: ignored too
    # Both at once: exactly one of them is stored.
    await asyncio.gather(a.append(SID, "p1", 2, note(2, "A")), b.append(SID, "p1", 2, note(2, "B")))

    events = await b.after(SID, "p1", -1)
    assert events is not None
    assert [(e.seq, e.message, e.owner) for e in events[:2]] == [(0, note(0, "A"), "A"), (1, note(1, "B"), "B")]
    assert len(events) == 3
    assert events[2].seq == 2
    assert events[2].owner in {"A", "B"}
    assert events[2].message == note(2, events[2].owner or "?")  # the winner's event, whole
    assert await a.last(SID, "p1") == 2


async def test_append_next_from_two_replicas_numbers_consecutively(
        client: Redis, other_client: Redis, redis_keys: Keys) -> None:
    a = RedisEventStore(client, redis_keys, replica="A")
    b = RedisEventStore(other_client, redis_keys, replica="B")
    each = 30
    calls = [(store, n) for n in range(each) for store in (a, b)]
    seqs = await asyncio.gather(*(store.append_next(SID, "get", note(n, store.replica)) for store, n in calls))
    assert sorted(seqs) == list(range(2 * each))  # distinct and without gaps

    events = await a.after(SID, "get", -1)
    assert events is not None
    assert [e.seq for e in events] == list(range(2 * each))
    by_seq = {e.seq: e for e in events}
    for (store, n), seq in zip(calls, seqs, strict=True):
        assert by_seq[seq].message == note(n, store.replica)  # each caller learned its own event's number
        assert by_seq[seq].owner == store.replica
    assert await b.append_next(SID, "get", None) == 2 * each


async def test_owner_request_id_and_the_priming_event_round_trip(
        client: Redis, other_client: Redis, redis_keys: Keys) -> None:
    a = RedisEventStore(client, redis_keys, replica="A")
    b = RedisEventStore(other_client, redis_keys, replica="B")
    answer: JSONObject = {"jsonrpc": "2.0", "id": "req-1", "result": {"content": [], "ok": "ünïcode"}}
    await a.append(SID, "p1", 0, None, request_id="req-1")  # priming event of a request stream
    await a.append(SID, "p1", 1, note(1), request_id="req-1")
    await b.append(SID, "p1", 2, answer, request_id="req-1")
    await a.append(SID, "p2", 0, None, request_id=7)
    await a.append(SID, "p2", 1, note(1), request_id=0)
    await b.append_next(SID, "get", None)
    await b.append_next(SID, "get", note(9))

    assert await b.after(SID, "p1", -1) == [
        StoredEvent("p1", 0, None, "A", "req-1"),
        StoredEvent("p1", 1, note(1), "A", "req-1"),
        StoredEvent("p1", 2, answer, "B", "req-1"),
    ]
    assert await b.after(SID, "p2", -1) == [StoredEvent("p2", 0, None, "A", 7), StoredEvent("p2", 1, note(1), "A", 0)]
    assert await a.after(SID, "get", -1) == [StoredEvent("get", 0, None, "B", None),
                                              StoredEvent("get", 1, note(9), "B", None)]


async def test_drop_session_removes_every_stream_of_that_session_only(client: Redis, redis_keys: Keys) -> None:
    store = RedisEventStore(client, redis_keys, replica="A")
    for sid in (SID, "session-2"):
        for stream in ("p1", "p2", "get"):
            await store.append(sid, stream, 0, note(0))
    await store.drop_session(SID)

    for stream in ("p1", "p2", "get"):
        assert await store.after(SID, stream, -1) is None
        assert await store.last(SID, stream) == -1
        assert await store.after("session-2", stream, -1) == [StoredEvent(stream, 0, note(0), "A", None)]
    assert await client.exists(redis_keys.streams(SID), *(redis_keys.events(SID, s) for s in ("p1", "p2", "get"))) == 0
    assert await client.smembers(redis_keys.streams("session-2")) == {b"p1", b"p2", b"get"}
    await store.drop_session("never-existed")
    # A dropped session's streams start afresh if written again.
    await store.append(SID, "p1", 0, note(5))
    assert await store.after(SID, "p1", -1) == [StoredEvent("p1", 0, note(5), "A", None)]


async def test_streams_expire_max_age_after_their_last_event(client: Redis, redis_keys: Keys) -> None:
    long_lived = RedisEventStore(client, redis_keys, replica="A", max_age=30)
    await long_lived.append("other", "p1", 0, note(0))
    for key in (redis_keys.events("other", "p1"), redis_keys.streams("other")):
        assert 25_000 < await client.pttl(key) <= 30_000

    age_ms = 300
    store = RedisEventStore(client, redis_keys, replica="A", max_age=age_ms / 1000)
    events_key, streams_key = redis_keys.events(SID, "p1"), redis_keys.streams(SID)
    await store.append(SID, "p1", 0, note(0))
    assert 0 < await client.pttl(events_key) <= age_ms
    assert 0 < await client.pttl(streams_key) <= age_ms

    async def aged() -> bool:
        return 0 < await client.pttl(events_key) < age_ms - 150

    await until(aged, what="the stream's ageing")
    await store.append(SID, "p1", 1, note(1))  # a new event restarts the clock of the stream and the index
    assert await client.pttl(events_key) > age_ms - 100
    assert await client.pttl(streams_key) > age_ms - 100

    async def expired() -> bool:
        return await client.exists(events_key, streams_key) == 0

    await until(expired, what="the stream's expiry")
    assert await store.after(SID, "p1", -1) is None
    assert await store.last(SID, "p1") == -1


async def test_numbering_continues_after_a_quiet_stream_expires(client: Redis, redis_keys: Keys) -> None:
    """``EventStore.append``: "seq increases by one per stream", also after a quiet stream's events
    expired (``max_age``): the numbers outlive the events (``counter_ttl``, the session's lifetime), so
    event ids are never reused within a session, and a follower that remembers the old newest number
    picks up what comes after it."""
    age_ms = 200
    store = RedisEventStore(client, redis_keys, replica="A", max_age=age_ms / 1000, counter_ttl=60)
    for n in range(3):
        assert await store.append_next(SID, "get", note(n)) == n

    async def expired() -> bool:
        return await client.exists(redis_keys.events(SID, "get")) == 0

    await until(expired, what="the quiet stream's expiry")
    assert await store.append_next(SID, "get", note(3)) == 3
    # What a follower that last sent event 2 reads: one back is gone with the old events, so it falls
    # back to what came after 2 (shared_streams.follow).
    assert await store.after(SID, "get", 1) is None
    after = await store.after(SID, "get", 2)
    assert after is not None
    assert [(e.seq, e.message) for e in after] == [(3, note(3))]


async def test_an_append_tried_again_with_its_id_is_stored_once(client: Redis, other_client: Redis,
                                                                 redis_keys: Keys) -> None:
    """A change written to a session's GET stream, tried again because Redis's answer was lost (the append may
    have happened): with the same id it is not stored twice, even with other events appended in between."""
    a = RedisEventStore(client, redis_keys, replica="A")
    b = RedisEventStore(other_client, redis_keys, replica="B")
    first = await a.append_next(SID, "get", note(1, "A"), once="change-1")
    await b.append_next(SID, "get", note(2, "B"))
    again = await a.append_next(SID, "get", note(1, "A"), once="change-1")
    other = await a.append_next(SID, "get", note(3, "A"), once="change-2")
    stored = await a.after(SID, "get", -1)
    assert stored is not None
    assert [event.message for event in stored] == [note(1, "A"), note(2, "B"), note(3, "A")]
    assert (first, again, other) == (0, 1, 2)  # the second try answers with the stream's newest number
