"""``RedisTaskStore`` against a real redis-server, as two replicas (two clients, two stores on one Redis):
the shared store behaviours, expiry by key TTL, and a Redis that goes away and comes back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from tests.support.cluster import fail_while_away, until
from tests.support.redis import RedisServer
from tests.support.redis_topologies import standalone_only
from tests.support.tasks import ALICE, CHECKS, INPUT_CHECKS, Check
from wiremcp.tasks import TaskRecord
from wiremcp.transports.redis.connection import Redis
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.tasks import RedisTaskStore

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
async def test_store_behaviour_across_replicas(check: Check, redis_clients: tuple[Redis, Redis],
                                               redis_keys: Keys) -> None:
    await check(RedisTaskStore(redis_clients[0], redis_keys), RedisTaskStore(redis_clients[1], redis_keys))


@pytest.mark.spec("2026-07-28/extensions/tasks#task-update-requests")
@pytest.mark.parametrize("check", INPUT_CHECKS, ids=lambda c: c.__name__)
async def test_input_requests_and_answers_across_replicas(check: Check, redis_clients: tuple[Redis, Redis],
                                                          redis_keys: Keys) -> None:
    await check(RedisTaskStore(redis_clients[0], redis_keys), RedisTaskStore(redis_clients[1], redis_keys))


async def test_tasks_expire_with_their_ttl_and_leave_the_listing(redis_clients: tuple[Redis, Redis],
                                                                 redis_keys: Keys) -> None:
    store = RedisTaskStore(redis_clients[0], redis_keys)
    other = RedisTaskStore(redis_clients[1], redis_keys)
    short = TaskRecord.new(ALICE, ttl_ms=200)
    kept = TaskRecord.new(ALICE, ttl_ms=None)
    await store.create(short)
    await store.create(kept)
    assert 0 < await redis_clients[0].pttl(redis_keys.task(short.task_id)) <= 200
    assert await redis_clients[0].pttl(redis_keys.task(kept.task_id)) > 23 * 3600 * 1000  # the default: a day
    done = await other.transition(short.task_id, "completed", expect={"working"}, result={"content": []})
    assert done is not None
    assert 0 < await redis_clients[0].pttl(redis_keys.task(short.task_id)) <= 200  # counted from creation

    async def gone() -> bool:
        return await other.get(short.task_id, ALICE) is None

    await until(gone, what="the short task's expiry")
    page, cursor = await other.list(ALICE, None, limit=1)
    assert [r.task_id for r in page] == [kept.task_id]
    assert cursor is None
    assert await redis_clients[0].zrange(redis_keys.tasks_of(ALICE), 0, -1) == [kept.task_id.encode()]  # pruned
    assert await store.transition(short.task_id, "failed", expect={"completed"}) is None
    assert await store.request_cancel(short.task_id, ALICE) is None
    await store.create(short)  # the id is free again
    assert await store.delete_expired() == 0  # Redis expires tasks by itself


async def test_a_principals_index_forgets_entries_older_than_any_task_lives(redis_clients: tuple[Redis, Redis],
                                                                           redis_keys: Keys) -> None:
    """Without listing, the per-principal index would keep every task ever created: each create drops
    the entries older than the longest TTL (here the default, a day)."""
    store = RedisTaskStore(redis_clients[0], redis_keys)
    ancient = TaskRecord.new(ALICE, ttl_ms=1_000, now=1_000.0)  # created long ago, long expired
    await store.create(ancient)
    fresh = TaskRecord.new(ALICE, ttl_ms=1_000)
    await store.create(fresh)
    assert await redis_clients[0].zrange(redis_keys.tasks_of(ALICE), 0, -1) == [fresh.task_id.encode()]


@standalone_only
async def test_an_unreachable_redis_raises_store_unavailable_then_recovers(
        redis_clients: tuple[Redis, Redis], redis_keys: Keys, redis_server: RedisServer) -> None:
    store = RedisTaskStore(redis_clients[0], redis_keys)
    record = TaskRecord.new(ALICE, ttl_ms=60_000)
    await store.create(record)
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "create": lambda: store.create(TaskRecord.new(ALICE, ttl_ms=60_000)),
        "get": lambda: store.get(record.task_id, ALICE),
        "list": lambda: store.list(ALICE, None, limit=5),
        "transition": lambda: store.transition(record.task_id, "completed", expect={"working"}),
        "request_cancel": lambda: store.request_cancel(record.task_id, ALICE),
    }
    await fail_while_away(redis_server, calls)
    assert await store.get(record.task_id, ALICE) == record  # the data survived (append-only file)
    flagged = await store.request_cancel(record.task_id, ALICE)
    assert flagged is not None
    assert flagged.cancel_requested
    assert await store.transition(record.task_id, "cancelled", expect={"working"}) is not None
    fresh = TaskRecord.new(ALICE, ttl_ms=60_000)
    await store.create(fresh)
    page, _ = await store.list(ALICE, None, limit=5)
    assert {r.task_id for r in page} == {record.task_id, fresh.task_id}
