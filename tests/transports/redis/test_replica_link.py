"""``RedisReplicaLink``: two replicas ("A" and "B") linked through a real redis-server: leases, routed responses,
broadcast cancellations and deletions, the bus, wake-ups, and the listener's recovery after Redis restarts.

A message that must NOT arrive is checked with a barrier: one replica publishes it, then a message that
must arrive; pub/sub delivers in publish order, so once the second is in, the first would have been.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.support.cluster import make_cluster, next_item, started, until
from tests.support.redis import RedisServer
from tests.support.redis_topologies import standalone_only
from wiremcp.replica_link import ClusterEvents
from wiremcp.transports.redis.connection import publish
from wiremcp.transports.redis.events import RedisEventStore
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.replica_link import RedisReplicaLink
from wiremcp.types import JSONObject

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def replicas(redis_url: str, redis_keys: Keys) -> AsyncIterator[tuple[RedisReplicaLink, RedisReplicaLink]]:
    a = make_cluster(redis_url, redis_keys, "A")
    b = make_cluster(redis_url, redis_keys, "B")
    async with started(a, b):
        yield a, b


class Inbox(ClusterEvents):
    """What one replica's listener received, in order."""

    def __init__(self, cluster: RedisReplicaLink) -> None:
        self.responses: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
        self.cancels: asyncio.Queue[tuple[str, JSONObject]] = asyncio.Queue()
        self.deletes: asyncio.Queue[str] = asyncio.Queue()
        self.changes: asyncio.Queue[str] = asyncio.Queue()
        self.reconnects: asyncio.Queue[None] = asyncio.Queue()
        self.task_cancels: asyncio.Queue[str] = asyncio.Queue()
        self.task_inputs: asyncio.Queue[str] = asyncio.Queue()
        self.bus: asyncio.Queue[JSONObject] = asyncio.Queue()
        cluster.listen(self)

    def response_arrived(self, session_id: str, raw: bytes) -> None:
        self.responses.put_nowait((session_id, raw))

    def request_cancelled(self, session_id: str, params: JSONObject) -> None:
        self.cancels.put_nowait((session_id, params))

    def session_deleted(self, session_id: str) -> None:
        self.deletes.put_nowait(session_id)

    def session_changed(self, session_id: str) -> None:
        self.changes.put_nowait(session_id)

    def reconnected(self) -> None:
        self.reconnects.put_nowait(None)

    def task_cancelled(self, task_id: str) -> None:
        self.task_cancels.put_nowait(task_id)

    def task_input_arrived(self, task_id: str) -> None:
        self.task_inputs.put_nowait(task_id)

    def bus_event(self, event: JSONObject) -> None:
        self.bus.put_nowait(event)


async def test_leases_tell_which_replicas_are_alive(replicas: tuple[RedisReplicaLink, RedisReplicaLink]) -> None:
    a, b = replicas
    # The first lease write runs beside the subscription that start() waits for.
    await until(lambda: a.alive("B"), what="B's lease")
    await until(lambda: b.alive("A"), what="A's lease")
    assert await a.alive("A")
    assert not await a.alive("C")
    assert not await b.alive("")
    await b.close()  # deletes its lease at once, without waiting for it to lapse
    assert not await a.alive("B")
    assert not await b.alive("B")
    assert await a.alive("A")


async def test_a_response_reaches_the_replica_that_sent_the_request(replicas: tuple[RedisReplicaLink, RedisReplicaLink]) -> None:
    a, b = replicas
    at_a, at_b = Inbox(a), Inbox(b)
    raw = '{"jsonrpc":"2.0","id":"B:1","result":{"action":"accept","content":{"answer":"ja, gerne ✓"}}}'.encode()
    assert b.owner_of("B:1") == "B"
    await a.forward_response("B", "sid-1", raw)
    assert await next_item(at_b.responses) == ("sid-1", raw)
    # Routed to B's inbox alone: A, subscribed to its own inbox and the broadcast channel, never saw it.
    await b.broadcast_cancel("barrier", {})
    assert await next_item(at_a.cancels) == ("barrier", {})
    assert at_a.responses.empty()


async def test_cancellations_and_deletions_reach_the_other_replica(replicas: tuple[RedisReplicaLink, RedisReplicaLink]) -> None:
    a, b = replicas
    at_a, at_b = Inbox(a), Inbox(b)
    params: JSONObject = {"requestId": 5, "reason": "the user pressed stop"}
    await a.broadcast_cancel("sid-1", params)
    assert await next_item(at_b.cancels) == ("sid-1", params)
    await a.broadcast_delete("sid-2")
    assert await next_item(at_b.deletes) == "sid-2"
    # A sent the deletion: it is not handed back to A (A has already dropped the session itself).
    await a.broadcast_cancel("barrier", {})
    assert await next_item(at_a.cancels) == ("sid-1", params)
    assert await next_item(at_a.cancels) == ("barrier", {})
    assert at_a.deletes.empty()
    await b.broadcast_delete("sid-3")
    assert await next_item(at_a.deletes) == "sid-3"


async def test_changed_sessions_reach_the_other_replica_and_task_events_every_replica(
        replicas: tuple[RedisReplicaLink, RedisReplicaLink]) -> None:
    a, b = replicas
    at_a, at_b = Inbox(a), Inbox(b)
    await publish(a.client, a.keys.broadcast("sid-1"), a.changed_message("sid-1"))  # as the session store does
    assert await next_item(at_b.changes) == "sid-1"
    await a.broadcast_task_cancel("task-1")
    await a.broadcast_task_input("task-2")
    for inbox in (at_a, at_b):  # the replica running the task may be the one that took the request
        assert await next_item(inbox.task_cancels) == "task-1"
        assert await next_item(inbox.task_inputs) == "task-2"
    assert at_a.changes.empty()  # A changed it, A's copy is current: published before the task events


class Failing(ClusterEvents):
    def request_cancelled(self, session_id: str, params: JSONObject) -> None:
        raise RuntimeError("a listener that fails")


async def test_every_listener_hears_each_event_once_and_a_failing_one_silences_no_other(
        replicas: tuple[RedisReplicaLink, RedisReplicaLink]) -> None:
    a, b = replicas
    b.listen(Failing())
    first, second = Inbox(b), Inbox(b)
    b.listen(ClusterEvents())  # hears everything, does nothing
    params: JSONObject = {"requestId": 1}
    await a.broadcast_cancel("sid-1", params)
    await a.broadcast_delete("sid-2")
    for inbox in (first, second):
        assert await next_item(inbox.cancels) == ("sid-1", params)
        assert await next_item(inbox.deletes) == "sid-2"
        assert inbox.cancels.empty()
    with pytest.raises(ValueError, match="already listens"):
        b.listen(first)  # once per listener


async def test_bus_events_reach_every_replica_from_the_loop_or_a_worker_thread(
        replicas: tuple[RedisReplicaLink, RedisReplicaLink]) -> None:
    a, b = replicas
    at_a, at_b = Inbox(a), Inbox(b)
    changed: JSONObject = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    a.publish_bus(changed)
    assert await next_item(at_a.bus) == changed
    assert await next_item(at_b.bus) == changed
    updated: JSONObject = {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                           "params": {"uri": "fixture://watched"}}
    await asyncio.to_thread(b.publish_bus, updated)  # a sync tool running on a worker thread
    assert await next_item(at_a.bus) == updated
    assert await next_item(at_b.bus) == updated


async def test_an_append_on_one_replica_wakes_the_watchers_on_the_other(replicas: tuple[RedisReplicaLink, RedisReplicaLink]) -> None:
    a, b = replicas
    events_b = RedisEventStore(b.client, b.keys, replica="B")
    with a.watch("sid-w") as woken, a.watch("sid-other") as other:
        async with asyncio.timeout(10):  # a watch wakes once its session's wake-ups start to arrive here
            await woken.wait()
            await other.wait()
        woken.clear()
        other.clear()
        await events_b.append_next("sid-w", "get", {"jsonrpc": "2.0", "method": "notifications/message"})
        async with asyncio.timeout(10):
            await woken.wait()
        assert not other.is_set()  # the same wake-up message would have set it
    # Two watchers of one session, one of them passed in (a follower's own event).
    mine = asyncio.Event()
    with a.watch("sid-w", mine) as same, a.watch("sid-w") as second:
        assert same is mine
        await events_b.append("sid-w", "p1", 0, None)
        async with asyncio.timeout(10):
            await mine.wait()
            await second.wait()


@standalone_only
async def test_the_listener_reconnects_after_redis_restarts(
        redis_server: RedisServer, replicas: tuple[RedisReplicaLink, RedisReplicaLink]) -> None:
    a, b = replicas
    at_a = Inbox(a)
    with a.watch("sid-r") as woken:
        redis_server.stop()
        try:
            await until(lambda: not a.connected, what="A noticing that Redis is gone")
            await until(lambda: not b.connected, what="B noticing that Redis is gone")
        finally:
            redis_server.start()
        await until(lambda: a.connected and b.connected, what="both listeners resubscribing")
        await next_item(at_a.reconnects)  # announcements may have been missed: the listeners are told
        # Whatever was published meanwhile was lost: readers are woken to look at the store again.
        async with asyncio.timeout(10):
            await woken.wait()
    params: JSONObject = {"requestId": "after-restart"}
    await b.broadcast_cancel("sid-r", params)
    assert await next_item(at_a.cancels) == ("sid-r", params)
    await until(lambda: b.alive("A"), what="A's lease renewed on the restarted Redis")


@standalone_only
async def test_closing_gives_the_lease_up_even_when_a_task_of_the_link_does_not_take_its_cancellation(
        redis_url: str, redis_keys: Keys, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A task of the link that holds on after its cancellation (as a read that swallowed it would) is left
    behind after ``STEP_BOUND`` (shortened here), saying where it waits; the lease is given up all the same."""
    monkeypatch.setattr("wiremcp.shutdown.STEP_BOUND", 0.2)
    link = make_cluster(redis_url, redis_keys, "S")
    other = make_cluster(redis_url, redis_keys, "T")
    released = asyncio.Event()

    async def stubborn() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await released.wait()  # holds on until the test lets it go

    async with started(other):
        await link.start()
        link._tasks.append(asyncio.get_running_loop().create_task(stubborn()))
        await asyncio.sleep(0)  # the stubborn task is running
        assert await other.alive(link.replica)
        async with asyncio.timeout(10):
            await link.close()
        assert not await other.alive(link.replica)
    released.set()
    warnings = [r.getMessage() for r in caplog.records if "left behind" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("the replica link's task "), warnings
    assert "stubborn did not end within 0.2s" in warnings[0], warnings
    assert "in stubborn" in warnings[0], warnings  # where it waits
