"""The outboxes of ``RedisEventStore`` (``wiremcp.transports.redis.outbox``) against a real redis-server: no
silent gap. Events appended while Redis is away are kept and appended in order once it is back, a gap found
(events a dead primary took with it) or an overflow of what is kept ends the stream with the error answering
its request, closing gives up within the timeout, and with WAIT an event stays kept until enough replicas
have it."""

from __future__ import annotations

import asyncio

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


def note(n: int) -> JSONObject:
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": f"{n}"}}


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
