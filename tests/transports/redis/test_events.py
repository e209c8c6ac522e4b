"""``RedisEventStore`` against a real redis-server: replay order, unknown and evicted positions,
conditional appends (the first writer of a number wins), numbering shared by replicas, the
metadata of each event, dropping a session, and the streams' age bound; and no silent gap: events
appended while Redis is away are kept and appended in order once it is back, a gap found (events a
dead primary took with it) or an overflow of what is kept ends the stream with the error answering its
request, closing gives up within the timeout, and with WAIT an event stays kept until enough replicas
have it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.support.cluster import TIMEOUT, ready, until
from tests.support.redis import RedisServer
from wiremcp.event_store import StoredEvent
from wiremcp.transports.redis.connection import Redis, connect
from wiremcp.transports.redis.events import RedisEventStore
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.outbox import lost_answer
from wiremcp.transports.redis.target import parse_target
from wiremcp.types import JSONObject
from wiremcp.unavailable import StoreUnavailable

pytestmark = pytest.mark.timeout(30)

SID = "session-1"


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[Redis]:
    client = await ready(connect(redis_url, timeout=TIMEOUT))
    yield client
    await client.aclose()


@pytest.fixture
async def other_client(redis_url: str) -> AsyncIterator[Redis]:
    """A second replica's client."""
    client = await ready(connect(redis_url, timeout=TIMEOUT))
    yield client
    await client.aclose()


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


# -- no silent gap: what cannot be stored yet is kept, a gap found ends the stream ---------------------------
def answer(rid: int) -> JSONObject:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": []}}


async def test_events_appended_while_redis_is_away_are_kept_and_appended_in_order_once_it_is_back(
        redis_server: RedisServer, redis_keys: Keys) -> None:
    client = await ready(connect(redis_server.url, timeout=TIMEOUT))
    store = RedisEventStore(client, redis_keys, replica="A")
    try:
        await store.append(SID, "p1", 0, None, request_id=5)
        redis_server.stop()
        try:
            for seq in range(1, 5):  # none of them raises: each is kept, behind the first
                await store.append(SID, "p1", seq, note(seq), request_id=5)
            await store.append(SID, "p1", 5, answer(5), request_id=5)
            assert store.kept == 5
            with pytest.raises(StoreUnavailable):
                await store.after(SID, "p1", 0)
        finally:
            redis_server.start()
        # On this replica, a resume sees them at once, appended yet or not.
        seen = await store.after(SID, "p1", 0)
        assert seen is not None
        assert [(e.seq, e.message) for e in seen] == [*((n, note(n)) for n in range(1, 5)), (5, answer(5))]
        await until(lambda: store.kept == 0, what="the kept events appended")
        other = RedisEventStore(client, redis_keys, replica="B")  # what the other replicas read
        stored = await other.after(SID, "p1", -1)
        assert stored is not None
        assert [(e.seq, e.message, e.owner, e.request_id) for e in stored] == [
            (0, None, "A", 5), *((n, note(n), "A", 5) for n in range(1, 5)), (5, answer(5), "A", 5)]
    finally:
        await store.close()
        await client.aclose()


async def test_events_made_at_once_while_redis_is_away_keep_their_order(
        redis_server: RedisServer, redis_keys: Keys) -> None:
    """The first of them fails on its way; those that queued behind it meanwhile stay behind it."""
    client = await ready(connect(redis_server.url, timeout=TIMEOUT))
    store = RedisEventStore(client, redis_keys, replica="A")
    try:
        redis_server.stop()
        try:
            await asyncio.gather(*(store.append(SID, "p1", seq, note(seq), request_id=1) for seq in range(6)))
            assert store.kept == 6
        finally:
            redis_server.start()
        await until(lambda: store.kept == 0, what="the kept events appended")
        events = await RedisEventStore(client, redis_keys, replica="B").after(SID, "p1", -1)
        assert [(e.seq, e.message) for e in events or []] == [(seq, note(seq)) for seq in range(6)]
    finally:
        await store.close()
        await client.aclose()


async def test_an_append_cancelled_on_its_way_is_sent_again_and_what_queued_behind_it_follows(
        client: Redis, redis_keys: Keys) -> None:
    """A handler cancelled while its event is on its way to Redis (which may have it or not): the event goes to
    the retries, and the one waiting behind it returns instead of waiting for ever."""
    store = RedisEventStore(client, redis_keys, replica="A")
    try:
        first = asyncio.create_task(store.append(SID, "p1", 0, note(0), request_id=1))
        await asyncio.sleep(0)  # on its way
        second = asyncio.create_task(store.append(SID, "p1", 1, note(1), request_id=1))
        await asyncio.sleep(0)  # queued behind it
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        await asyncio.wait_for(second, TIMEOUT)
        await until(lambda: store.kept == 0, what="the cancelled event sent again")
        await store.append(SID, "p1", 2, note(2), request_id=1)
        events = await RedisEventStore(client, redis_keys, replica="B").after(SID, "p1", -1)
        assert [(e.seq, e.message) for e in events or []] == [(seq, note(seq)) for seq in range(3)]
    finally:
        await store.close()


async def test_a_gap_in_a_request_stream_ends_it_with_an_error_answering_the_request(
        client: Redis, redis_keys: Keys) -> None:
    """A primary took events 4 and 5 (the writer let them go), then died before passing them on: the
    promoted replica holds events 0 to 3, and the stream's newest number says 3. Event 6 finds the gap; the
    stream ends with the error at 4, and nothing after it is stored."""
    store = RedisEventStore(client, redis_keys, replica="A")
    for seq in range(4):
        await store.append(SID, "p1", seq, note(seq), request_id="r-1")

    await store.append(SID, "p1", 6, note(6), request_id="r-1")
    await store.append(SID, "p1", 7, answer(7), request_id="r-1")
    assert store.kept == 0
    events = await RedisEventStore(client, redis_keys, replica="B").after(SID, "p1", 3)
    assert events == [StoredEvent("p1", 4, lost_answer("r-1"), "A", "r-1")]
    assert lost_answer("r-1")["error"]["code"] == -32603
    assert lost_answer("r-1")["error"]["data"] == {"retryable": True, "eventsLost": True}


async def test_appends_to_one_stream_made_at_once_are_stored_in_the_order_they_were_made(
        client: Redis, redis_keys: Keys) -> None:
    """A handler's messages sent without waiting for one another (``emit_later``): each append waits behind the
    one on its way, so that none finds a gap it would take for lost events."""
    store = RedisEventStore(client, redis_keys, replica="A")
    await asyncio.gather(*(store.append(SID, "p1", seq, note(seq), request_id=1) for seq in range(40)))
    await asyncio.gather(*(store.append(SID, "p1", seq, note(seq), request_id=1) for seq in range(40, 45)))
    assert store.kept == 0
    events = await store.after(SID, "p1", -1)
    assert [(e.seq, e.message) for e in events or []] == [(seq, note(seq)) for seq in range(45)]


async def test_a_number_taken_is_still_ignored_and_a_new_stream_may_start_anywhere(
        client: Redis, redis_keys: Keys) -> None:
    """The gap check needs the stream's newest number: a stream Redis knows nothing of takes any number (its
    numbers expired with a quiet session, or it is new), and a number already taken is ignored, as before."""
    store = RedisEventStore(client, redis_keys, replica="A")
    await store.append(SID, "p1", 7, note(7), request_id=1)
    await store.append(SID, "p1", 7, note(70), request_id=1)
    await store.append(SID, "p1", 8, note(8), request_id=1)
    assert [(e.seq, e.message) for e in await store.after(SID, "p1", 6) or []] == [(7, note(7)), (8, note(8))]


async def test_events_that_overflow_what_is_kept_end_their_stream_with_the_error(
        redis_server: RedisServer, redis_keys: Keys) -> None:
    client = await ready(connect(redis_server.url, timeout=TIMEOUT))
    big = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * 400}}
    store = RedisEventStore(client, redis_keys, replica="A", max_kept_bytes=1_000)
    try:
        await store.append(SID, "p1", 0, big, request_id=3)
        redis_server.stop()
        try:
            for seq in range(1, 6):  # the third of them does not fit
                await store.append(SID, "p1", seq, big, request_id=3)
            await store.append(SID, "p1", 6, answer(3), request_id=3)
            assert store.kept == 1  # the error, in place of what was kept
        finally:
            redis_server.start()
        await until(lambda: store.kept == 0, what="the error appended")
        await store.append(SID, "p1", 7, answer(3), request_id=3)  # after the error: never stored
        events = await RedisEventStore(client, redis_keys, replica="B").after(SID, "p1", -1)
        assert events == [StoredEvent("p1", 0, big, "A", 3), StoredEvent("p1", 1, lost_answer(3), "A", 3)]
    finally:
        await store.close()
        await client.aclose()


async def test_closing_with_redis_away_gives_up_within_the_timeout(
        redis_server: RedisServer, redis_keys: Keys, caplog: pytest.LogCaptureFixture) -> None:
    client = await ready(connect(redis_server.url, timeout=TIMEOUT))
    store = RedisEventStore(client, redis_keys, replica="A")
    redis_server.stop()
    try:
        await store.append(SID, "p1", 0, note(0), request_id=1)
        await store.append(SID, "p1", 1, note(1), request_id=1)
        async with asyncio.timeout(3 * TIMEOUT):  # one last attempt, bounded by the Redis timeout
            await store.close()
        assert "2 events were never stored" in caplog.text
    finally:
        redis_server.start()
        await client.aclose()


async def test_with_wait_an_event_stays_kept_until_enough_replicas_have_it(
        redis_url: str, client: Redis, redis_keys: Keys) -> None:
    """WAIT on the appending connection: one server has no replica, Sentinel's primary and each cluster primary
    have one. An event fewer replicas have than asked for is in Redis (the others read it) and stays kept, to
    be appended again after a failover."""
    replicas = 0 if parse_target(redis_url).topology == "standalone" else 1
    reader = RedisEventStore(client, redis_keys, replica="C")

    async def in_redis(stream: str) -> bool:
        return [e.seq for e in await reader.after(SID, stream, -1) or []] == [0, 1]

    short = RedisEventStore(client, redis_keys, replica="B", wait_replicas=replicas + 1, wait_timeout_ms=50)
    confirmed = RedisEventStore(client, redis_keys, replica="A", wait_replicas=replicas, wait_timeout_ms=50)
    try:
        await short.append(SID, "p1", 0, note(0), request_id=2)
        await short.append(SID, "p1", 1, note(1), request_id=2)  # behind the first, for the next round
        assert short.kept == 2
        await until(lambda: in_redis("p1"), what="both events in Redis")
        assert short.kept == 2  # and kept all the same
        assert await short.append_next(SID, "get", note(9)) == 0  # the GET stream: waited for, never kept
        if replicas:
            await confirmed.append(SID, "p2", 0, note(0), request_id=1)
            await confirmed.append(SID, "p2", 1, note(1), request_id=1)
            assert confirmed.kept == 0
            assert await in_redis("p2")
    finally:
        await confirmed.close()
        await short.close()
