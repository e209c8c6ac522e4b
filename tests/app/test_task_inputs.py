"""``wiremcp.task_inputs``: input during a 2026-07-28 task, through the in-memory client. A handler's
``ctx.elicit`` makes the task ``input_required`` with the request under a key of its own; ``tasks/update``
answers it (one key at a time, keys never reused, others ignored); an unanswered request times out and
is withdrawn. Nothing sleeps: tests wait on the server's change bus, bounded.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.support.tasks import (
    BOUND,
    EXT,
    NO,
    OK_SCHEMA,
    YES,
    Gate,
    asking,
    assert_ack,
    connect,
    get,
    start,
    status,
    task_server,
    until,
    update,
)
from wiremcp.types import JSONObject

pytestmark = pytest.mark.spec(f"{EXT}#tasks")


@pytest.mark.spec(f"{EXT}#task-update-requests")
async def test_an_elicitation_makes_the_task_input_required_and_an_update_answers_it() -> None:
    gate = Gate()
    gate.release.set()
    async with connect(task_server(gate)) as client:
        created = await start(client, "confirm")
        waiting = await until(client, created["taskId"], asking(1))
        ((key, request),) = waiting["inputRequests"].items()
        ack = await update(client, created["taskId"], {key: YES})
        done = await until(client, created["taskId"], status("completed"))
    assert request == {"method": "elicitation/create",
                       "params": {"mode": "form", "message": "Go ahead?", "requestedSchema": OK_SCHEMA}}
    assert_ack(ack)
    assert done["result"]["content"][0]["text"] == "accept: True"


@pytest.mark.spec(f"{EXT}#task-update-requests")
async def test_parallel_elicitations_are_answered_one_update_at_a_time() -> None:
    async with connect(task_server(Gate())) as client:
        task_id = (await start(client, "pair"))["taskId"]
        both = await until(client, task_id, asking(2))
        first, second = both["inputRequests"]
        assert_ack(await update(client, task_id, {first: YES}))
        partial = await get(client, task_id)
        assert partial["status"] == "input_required"
        assert list(partial["inputRequests"]) == [second]
        assert_ack(await update(client, task_id, {first: NO, second: NO}))  # first: already answered
        done = await until(client, task_id, status("completed"))
    assert first != second
    assert done["result"]["content"][0]["text"] == "accept decline"


@pytest.mark.spec(f"{EXT}#task-update-requests")
async def test_responses_to_keys_not_outstanding_are_ignored() -> None:
    async with connect(task_server(Gate())) as client:
        task_id = (await start(client, "pair"))["taskId"]
        before = await until(client, task_id, asking(2))
        ack = await update(client, task_id, {"never-asked": YES})
        after = await get(client, task_id)
        for key in before["inputRequests"]:
            await update(client, task_id, {key: YES})
        await until(client, task_id, status("completed"))
    assert_ack(ack)
    assert after == before


@pytest.mark.spec(f"{EXT}#task-update-requests")
async def test_keys_are_never_reused_within_a_task() -> None:
    async with connect(task_server(Gate())) as client:
        task_id = (await start(client, "twice"))["taskId"]
        (first,) = (await until(client, task_id, asking(1)))["inputRequests"]
        await update(client, task_id, {first: YES})
        later = await until(client, task_id, lambda s: asking(1)(s) and first not in s["inputRequests"])
        (second,) = later["inputRequests"]
        assert_ack(await update(client, task_id, {first: NO}))  # the old key: ignored
        assert await get(client, task_id) == later
        await update(client, task_id, {second: NO})
        done = await until(client, task_id, status("completed"))
    assert done["result"]["content"][0]["text"] == "accept decline"


async def test_an_unanswered_elicitation_times_out_and_is_withdrawn() -> None:
    server = task_server(Gate())
    async with connect(server) as client:
        with server.runtime.backend.bus.subscribe() as changes:
            task_id = (await start(client, "impatient"))["taskId"]
            seen: list[JSONObject] = []
            async with asyncio.timeout(BOUND):
                async for event in changes:
                    if event["method"] == "notifications/tasks" and event["params"]["taskId"] == task_id:
                        seen.append(event["params"])
                        if event["params"]["status"] == "completed":
                            break
        record = await server.runtime.task_runner.store.get(task_id, None)
    asked = [s for s in seen if s["status"] == "input_required"]
    assert len(asked) == 1
    assert len(asked[0]["inputRequests"]) == 1
    assert record is not None
    assert record.input_requests == {}  # withdrawn
    assert seen[-1]["result"]["isError"] is True
