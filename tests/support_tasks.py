"""Behaviour checks every ``TaskStore`` must pass, written once: each takes two stores over the same
tasks (``a`` and ``b``: two replicas; the in-memory store passes itself twice)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from app.errors import InvalidParams
from app.tasks import TERMINAL, DuplicateTask, TaskRecord, TaskStore

ALICE = "https://issuer.example|alice"
BOB = "https://issuer.example|bob"

Check = Callable[[TaskStore, TaskStore], Awaitable[None]]


async def create_get_and_ownership(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000, poll_interval_ms=500, status_message="started",
                            owner_replica="r1")
    await a.create(record)
    assert await b.get(record.task_id, ALICE) == record  # durable at once, on the other replica too
    assert await b.get(record.task_id, BOB) is None  # someone else's task does not exist
    assert await b.get(record.task_id, None) is None
    assert await b.get("unknown", ALICE) is None
    with pytest.raises(DuplicateTask):
        await b.create(record)
    anonymous = TaskRecord.new(None)
    await b.create(anonymous)
    assert await a.get(anonymous.task_id, None) == anonymous
    assert await a.get(anonymous.task_id, ALICE) is None
    got = await a.get(record.task_id, ALICE)
    assert got is not None
    got.result = {"content": []}  # a copy: changing it changes nothing stored
    assert await a.get(record.task_id, ALICE) == record


async def list_pages_own_tasks_only(a: TaskStore, b: TaskStore) -> None:
    base = time.time()
    mine = [TaskRecord.new(ALICE, ttl_ms=60_000, now=base + i // 2) for i in range(7)]  # ties in time
    for i, record in enumerate(mine):
        await (a if i % 2 else b).create(record)
        await a.create(TaskRecord.new(BOB, ttl_ms=60_000, now=base + i))
    expected = sorted(mine, key=lambda r: (r.created_at, r.task_id))
    seen: list[TaskRecord] = []
    cursor: str | None = None
    pages = 0
    while True:
        page, cursor = await (b if pages % 2 else a).list(ALICE, cursor, limit=3)
        seen.extend(page)
        pages += 1
        if cursor is None:
            break
    assert seen == expected
    assert pages == 3
    everything, last = await a.list(ALICE, None, limit=7)
    assert list(everything) == expected
    assert last is None
    assert await a.list("nobody", None, limit=3) == ([], None)
    with pytest.raises(InvalidParams):
        await a.list(ALICE, "not a cursor!", limit=3)


async def transitions_and_terminal_finality(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000, now=time.time() - 5)
    await a.create(record)
    assert await b.transition(record.task_id, "completed", expect={"input_required"}) is None
    asking = await b.transition(record.task_id, "input_required", expect={"working"},
                                input_requests={"q1": {"method": "elicitation/create"}},
                                status_message="need input")
    assert asking is not None
    assert asking.status == "input_required"
    assert asking.input_requests == {"q1": {"method": "elicitation/create"}}
    assert asking.last_updated_at > record.last_updated_at
    assert asking.created_at == record.created_at
    assert await a.get(record.task_id, ALICE) == asking
    working = await a.transition(record.task_id, "working", expect={"input_required"}, input_requests={})
    assert working is not None
    done = await b.transition(record.task_id, "completed", expect={"working", "input_required"},
                              result={"content": [], "isError": False}, status_message="done")
    assert done is not None
    assert done.result == {"content": [], "isError": False}
    for status in ("working", "input_required", "completed", "failed", "cancelled"):
        assert await a.transition(record.task_id, status, expect=TERMINAL | {"working"}) is None
    assert await b.get(record.task_id, ALICE) == done
    assert await a.transition("unknown", "completed", expect={"working"}) is None
    with pytest.raises(TypeError):
        await a.transition(record.task_id, "completed", expect={"completed"}, principal=BOB)


async def concurrent_transitions_have_one_winner(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000)
    await a.create(record)
    outcomes = await asyncio.gather(*(
        (a if i % 2 else b).transition(
            record.task_id, "completed" if i % 3 else "cancelled", expect={"working"},
            result={"content": [{"type": "text", "text": str(i)}]}, status_message=str(i))
        for i in range(20)))
    winners = [o for o in outcomes if o is not None]
    assert len(winners) == 1
    stored = await b.get(record.task_id, ALICE)
    assert stored == winners[0]
    assert stored is not None
    assert stored.status == ("completed" if int(stored.status_message or "") % 3 else "cancelled")


async def cancel_requests(a: TaskStore, b: TaskStore) -> None:
    record = TaskRecord.new(ALICE, ttl_ms=60_000)
    await a.create(record)
    assert await b.request_cancel(record.task_id, BOB) is None
    assert await b.request_cancel("unknown", ALICE) is None
    flagged = await b.request_cancel(record.task_id, ALICE)
    assert flagged is not None
    assert flagged.cancel_requested
    assert flagged.status == "working"
    assert await b.request_cancel(record.task_id, ALICE) == flagged  # idempotent
    seen = await a.get(record.task_id, ALICE)
    assert seen is not None
    assert seen.cancel_requested  # the runner, on the other replica, sees the request
    cancelled = await a.transition(record.task_id, "cancelled", expect={"working", "input_required"})
    assert cancelled is not None
    assert cancelled.cancel_requested
    finished = TaskRecord.new(ALICE, ttl_ms=60_000)
    await a.create(finished)
    await a.transition(finished.task_id, "failed", expect={"working"}, error={"code": -32603, "message": "x"})
    terminal = await b.request_cancel(finished.task_id, ALICE)
    assert terminal is not None
    assert terminal.status == "failed"
    assert not terminal.cancel_requested  # terminal: nothing to cancel, the caller answers the error


CHECKS: list[Check] = [create_get_and_ownership, list_pages_own_tasks_only, transitions_and_terminal_finality,
                       concurrent_transitions_have_one_winner, cancel_requests]
