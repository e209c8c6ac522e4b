"""``wiremcp.tasks``: the task record, its wire shapes in both protocol eras, and ``InMemoryTaskStore`` (the
behaviours every store shares are in ``tests/support/tasks.py``)."""

from __future__ import annotations

import re

import pytest

from tests.support.tasks import ALICE, CHECKS, INPUT_CHECKS, Check
from wiremcp.tasks import InMemoryTaskStore, TaskRecord, iso_timestamp, new_task_id


class FakeClock:
    def __init__(self, now: float = 1_764_066_600.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
async def test_store_behaviour(check: Check) -> None:
    store = InMemoryTaskStore()
    await check(store, store)


@pytest.mark.spec("2026-07-28/extensions/tasks#task-update-requests")
@pytest.mark.parametrize("check", INPUT_CHECKS, ids=lambda c: c.__name__)
async def test_input_requests_and_answers(check: Check) -> None:
    store = InMemoryTaskStore()
    await check(store, store)


def test_task_ids_are_256_bit_url_safe_and_new() -> None:
    ids = {new_task_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{43}", i) for i in ids)


def test_record_round_trips_through_a_dict() -> None:
    record = TaskRecord(task_id="t", principal=ALICE, status="input_required", status_message="m",
                        created_at=1.5, last_updated_at=2.25, ttl_ms=1000, poll_interval_ms=10,
                        result={"content": []}, error={"code": 1, "message": "e"},
                        input_requests={"k": {"method": "sampling/createMessage"}}, cancel_requested=True,
                        owner_replica="r2")
    assert TaskRecord.from_dict(record.to_dict()) == record
    assert TaskRecord.from_dict({**record.to_dict(), "future_field": 1}) == record


@pytest.mark.spec("2025-11-25/basic/utilities/tasks#task")
def test_the_2025_11_25_task_shape() -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000, poll_interval_ms=5000, status_message="working on it",
                            now=1_764_066_600.0)
    record.last_updated_at = 1_764_067_200.125
    assert record.to_2025_11_25() == {
        "taskId": record.task_id, "status": "working", "statusMessage": "working on it",
        "createdAt": "2025-11-25T10:30:00.000Z", "lastUpdatedAt": "2025-11-25T10:40:00.125Z",
        "ttl": 60000, "pollInterval": 5000}
    bare = TaskRecord.new(None, now=0.0)
    assert bare.to_2025_11_25() == {"taskId": bare.task_id, "status": "working",
                                    "createdAt": "1970-01-01T00:00:00.000Z",
                                    "lastUpdatedAt": "1970-01-01T00:00:00.000Z", "ttl": None}


@pytest.mark.spec("2026-07-28/extensions/tasks#detailedtask")
def test_the_2026_07_28_detailed_task_shapes() -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000, poll_interval_ms=5000, now=1_764_066_600.0)
    base = {"taskId": record.task_id, "createdAt": "2025-11-25T10:30:00.000Z",
            "lastUpdatedAt": "2025-11-25T10:30:00.000Z", "ttlMs": 60000, "pollIntervalMs": 5000}
    record.result = {"content": [], "isError": True}
    record.error = {"code": -32603, "message": "boom"}
    record.input_requests = {"a1": {"method": "elicitation/create", "params": {}}}
    record.status = "working"
    assert record.to_2026_07_28() == {**base, "status": "working"}
    record.status = "input_required"
    assert record.to_2026_07_28() == {**base, "status": "input_required", "inputRequests": record.input_requests}
    record.status = "completed"
    assert record.to_2026_07_28() == {**base, "status": "completed", "result": record.result}
    record.status = "failed"
    assert record.to_2026_07_28() == {**base, "status": "failed", "error": record.error}
    record.status = "cancelled"
    record.status_message = "stopped"
    assert record.to_2026_07_28() == {**base, "status": "cancelled", "statusMessage": "stopped"}
    assert "ttl" not in record.to_2026_07_28()
    assert "ttlMs" not in record.to_2025_11_25()


def test_iso_timestamps_are_utc() -> None:
    assert iso_timestamp(1_764_066_600.5) == "2025-11-25T10:30:00.500Z"


async def test_expired_tasks_are_gone() -> None:
    clock = FakeClock()
    store = InMemoryTaskStore(clock=clock)
    short = TaskRecord.new(ALICE, ttl_ms=1000, now=clock())
    unlimited = TaskRecord.new(ALICE, ttl_ms=None, now=clock())
    await store.create(short)
    await store.create(unlimited)
    clock.now += 0.999
    assert await store.get(short.task_id, ALICE) == short
    assert await store.transition(short.task_id, "completed", expect={"working"}) is not None
    clock.now += 0.001  # the TTL counts from creation, not from the last update
    assert await store.get(short.task_id, ALICE) is None
    assert await store.transition(short.task_id, "failed", expect={"completed"}) is None
    assert await store.request_cancel(short.task_id, ALICE) is None
    page, _ = await store.list(ALICE)
    assert [r.task_id for r in page] == [unlimited.task_id]
    clock.now += 10 * 365 * 86400
    assert await store.get(unlimited.task_id, ALICE) == unlimited
    await store.create(short)  # its id is free again once expired
    clock.now += 1
    assert await store.delete_expired() == 1
    assert await store.delete_expired() == 0


async def test_update_times_come_from_the_store_clock() -> None:
    clock = FakeClock()
    store = InMemoryTaskStore(clock=clock)
    record = TaskRecord.new(ALICE, ttl_ms=60_000, now=clock())
    await store.create(record)
    clock.now += 2.5
    moved = await store.transition(record.task_id, "working", expect={"working"}, status_message="50%")
    assert moved is not None
    assert (moved.created_at, moved.last_updated_at, moved.status_message) == (clock.now - 2.5, clock.now, "50%")
    with pytest.raises(ValueError, match="unknown task status"):
        await store.transition(record.task_id, "done", expect={"working"})
