"""``examples/report_jobs.py`` through the in-memory client, as a user would drive it: the same tools
in both eras' tasks, and as ordinary calls for a client without task support."""

from __future__ import annotations

import asyncio

import pytest

from examples.report_jobs import server
from wiremcp.protocol import TASKS_EXTENSION
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

pytestmark = pytest.mark.timeout(30)

STATELESS = "2026-07-28"
WAIT = 20.0  # an upper bound for each awaited task change, never a sleep; generous, for loaded machines


async def confirm(params: JSONObject) -> JSONObject:
    return {"action": "accept", "content": {"publish": True}}


async def finished(client: Client, task_id: str) -> JSONObject:
    """``tasks/get`` again each time the server changes the task, until it has ended."""
    with server.runtime.backend.bus.subscribe() as changes:
        state = await client.request("tasks/get", {"taskId": task_id})
        while state["status"] in ("working", "input_required"):
            async with asyncio.timeout(WAIT):
                async for event in changes:
                    if event["params"]["taskId"] == task_id:
                        break
            state = await client.request("tasks/get", {"taskId": task_id})
    return state


async def test_a_client_without_task_support_just_waits_for_the_report() -> None:
    async with Client(server, protocol_version=STATELESS, capabilities={}) as client:
        result = await client.request("tools/call", {"name": "build_report",
                                                     "arguments": {"topic": "tides", "pages": 2}})
    assert result["resultType"] == "complete"
    assert result["structuredContent"] == {"topic": "tides", "pages": 2, "summary": "2 pages on tides"}


async def test_with_the_tasks_extension_the_report_is_a_task_that_completes() -> None:
    async with Client(server, protocol_version=STATELESS,
                      capabilities={"extensions": {TASKS_EXTENSION: {}}}) as client:
        created = await client.request("tools/call", {"name": "build_report",
                                                      "arguments": {"topic": "tides", "pages": 2}})
        assert created["resultType"] == "task"
        done = await finished(client, created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"]["summary"] == "2 pages on tides"


async def test_publishing_asks_first_then_becomes_a_task() -> None:
    """The client answers the confirmation round (the in-memory client retries with the answer by
    itself), and the retry is answered with the task."""
    async with Client(server, protocol_version=STATELESS, elicitation=confirm,
                      capabilities={"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}) as client:
        created = await client.request("tools/call", {"name": "publish_report", "arguments": {"topic": "tides"}})
        assert created["resultType"] == "task"
        done = await finished(client, created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"].startswith("Published the report on tides")


async def test_a_2025_11_25_client_asks_for_the_task_and_reads_the_result_with_progress() -> None:
    async with Client(server, elicitation=confirm) as client:
        created = await client.request("tools/call", {"name": "build_report", "task": {},
                                                      "arguments": {"topic": "tides", "pages": 3},
                                                      "_meta": {"progressToken": "p"}})
        result = await client.request("tasks/result", {"taskId": created["task"]["taskId"]})
        published = await client.request("tools/call", {"name": "publish_report", "task": {},
                                                        "arguments": {"topic": "tides"}})
        text = (await client.request("tasks/result", {"taskId": published["task"]["taskId"]}))["content"][0]["text"]
    assert result["structuredContent"]["pages"] == 3
    progress = [n["params"]["progress"] for n in client.notifications if n["method"] == "notifications/progress"]
    assert progress == [1, 2, 3]
    assert text.startswith("Published the report on tides")
