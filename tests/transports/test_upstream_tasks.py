"""A remote child's tools that the upstream runs as tasks: the caller's call becomes a task of the gateway's, which
follows the upstream's to its end in either era on either side (2025-11-25's ``params.task`` and ``tasks/result``,
the 2026-07-28 extension's ``tasks/get`` and ``tasks/update``). What the upstream's task asks comes to the caller
as its own task's input requests; a caller's cancel cancels the upstream's task; a caller who cannot take a task
gets the outcome on its call. The upstream is ``tests/support/http_fixture_server.py`` over HTTP or launched on
stdio (``ERAS``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.gateways import ERAS, gateway, upstream
from tests.support.http import UvicornProcess
from tests.support.tasks import EXT, MISSING_EXTENSION, connect, create, error, start, status, update
from tests.support.tasks import until as until_task
from wiremcp import MCPError
from wiremcp.transports import Client
from wiremcp.transports.upstream_tasks import created_task
from wiremcp.types import JSONObject

pytestmark = [pytest.mark.timeout(60), pytest.mark.spec(EXT, "2025-11-25/basic/utilities/tasks")]


async def until(client: Client, task_id: str, *wanted: str) -> JSONObject:
    """The gateway's task once its status is one of ``wanted`` (read again at each change of the gateway's tasks,
    which follow the upstream's)."""
    return await until_task(client, task_id, status(*wanted))


@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_a_stateless_callers_task_asks_what_the_upstreams_task_asks_and_ends_with_its_result(
        over: str, protocol: str, http_server: UvicornProcess) -> None:
    async with connect(gateway(upstream(over, http_server, protocol))) as client:
        task = await start(client, "wc_task_ask", {"questions": ["Colour?", "Size?"]})
        asking = await until(client, task["taskId"], "input_required")
        asks = asking["inputRequests"]
        assert sorted(ask["params"]["message"] for ask in asks.values()) == ["Colour?", "Size?"]  # both at once
        answers = {key: {"action": "accept", "content": {"answer": ask["params"]["message"].lower()}}
                   for key, ask in asks.items()}
        first = next(iter(answers))
        await update(client, task["taskId"], {first: answers[first]})  # one now, the other later
        await update(client, task["taskId"], {k: v for k, v in answers.items() if k != first})
        done = await until(client, task["taskId"], "completed", "failed")
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "accept: colour?; accept: size?"


@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_a_handshake_callers_task_is_answered_through_tasks_result_with_the_upstreams_questions(
        over: str, protocol: str, http_server: UvicornProcess) -> None:
    asked: list[str] = []

    async def answer(params: JSONObject) -> JSONObject:
        asked.append(str(params["message"]))
        return {"action": "accept", "content": {"answer": "blue"}}

    async with Client(gateway(upstream(over, http_server, protocol)), protocol_version="2025-11-25",
                      capabilities={"elicitation": {"form": {}}}, elicitation=answer) as client:
        listed = {tool["name"]: tool.get("execution") for tool in (await client.request("tools/list"))["tools"]}
        task = await create(client, "wc_task_ask", {"questions": ["Colour?"]})
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
        ended = await client.request("tasks/get", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "accept: blue"
    assert asked == ["Colour?"]
    assert ended["status"] == "completed"
    assert listed["wc_task_ask"] == {"taskSupport": "optional"}
    # the upstream's own word in the handshake era; in the stateless era it decides per call, so any tool may
    assert listed["wc_task_only"] == {"taskSupport": "required" if protocol == "2025-11-25" else "optional"}
    assert listed["wc_echo"] == (None if protocol == "2025-11-25" else {"taskSupport": "optional"})


@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_tasks_waited_on_together_each_get_their_own_questions(over: str, protocol: str,
                                                                     http_server: UvicornProcess) -> None:
    async def answer(params: JSONObject) -> JSONObject:
        return {"action": "accept", "content": {"answer": str(params["message"]).upper()}}

    async with Client(gateway(upstream(over, http_server, protocol)), protocol_version="2025-11-25",
                      capabilities={"elicitation": {"form": {}}}, elicitation=answer) as client:
        tasks = [await create(client, "wc_task_ask", {"questions": [question]}) for question in ("one", "two")]
        results = await asyncio.gather(*(client.request("tasks/result", {"taskId": task["taskId"]})
                                         for task in tasks))
    assert [result["content"][0]["text"] for result in results] == ["accept: ONE", "accept: TWO"]


@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_a_tool_that_must_be_a_task_upstream_answers_a_plain_handshake_call_or_is_refused_as_upstream(
        over: str, protocol: str, http_server: UvicornProcess) -> None:
    async with Client(gateway(upstream(over, http_server, protocol)), protocol_version="2025-11-25") as client:
        if protocol == "2025-11-25":  # the tool's taskSupport is the upstream's: a plain call is refused here
            with pytest.raises(MCPError) as refused:
                await client.call_tool("wc_task_only")
            assert refused.value.code == -32601
        else:  # a stateless upstream makes it a task, which the gateway follows for the caller
            result = await client.call_tool("wc_task_only")
            assert result["content"][0]["text"] == "done as a task"


@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_a_caller_without_the_extension_is_told_to_declare_it_for_a_tool_that_must_be_a_task(
        over: str, protocol: str, http_server: UvicornProcess) -> None:
    async with connect(gateway(upstream(over, http_server, protocol)), extension=False) as client:
        refused = await error(client, "tools/call", {"name": "wc_task_only", "arguments": {}})
        plain = await client.call_tool("wc_task_ask", {"questions": []})
    assert refused["code"] == -32021
    assert refused["data"] == MISSING_EXTENSION
    assert plain["content"][0]["text"] == ""  # an optional one is an ordinary call


@pytest.mark.parametrize(("over", "protocol"), ERAS)
async def test_a_tool_error_of_the_upstreams_task_is_the_callers_in_its_eras_shape(
        over: str, protocol: str, http_server: UvicornProcess) -> None:
    child = gateway(upstream(over, http_server, protocol))
    async with connect(child) as client:
        task = await start(client, "wc_task_only", {"fail": True})
        stateless = await until(client, task["taskId"], "completed", "failed")
    async with Client(child, protocol_version="2025-11-25") as client:
        created = await create(client, "wc_task_only", {"fail": True})
        result = await client.request("tasks/result", {"taskId": created["taskId"]})
        handshake = await client.request("tasks/get", {"taskId": created["taskId"]})
    assert stateless["status"] == "completed"  # the extension: a completed task with isError
    assert stateless["result"]["isError"] is True
    assert stateless["result"]["content"][0]["text"] == "the job failed"
    assert handshake["status"] == "failed"  # 2025-11-25: a failed task, its result the tool's
    assert result["isError"] is True


@pytest.mark.parametrize(("over", "protocol"), ERAS)
@pytest.mark.parametrize("caller", ["2025-11-25", "2026-07-28"])
async def test_a_caller_cancelling_its_task_cancels_the_upstreams(over: str, protocol: str, caller: str,
                                                                  http_server: UvicornProcess) -> None:
    name = f"cancel-{over}-{protocol}-{caller}"
    child = gateway(upstream(over, http_server, protocol))
    opened: Any = connect(child) if caller == "2026-07-28" else Client(child, protocol_version=caller)
    async with opened as client:
        if caller == "2026-07-28":
            task_id = (await start(client, "wc_task_until_cancelled", {"name": name}))["taskId"]
        else:
            task_id = (await create(client, "wc_task_until_cancelled", {"name": name}))["taskId"]
        started = await client.call_tool("wc_until_cancelled_started", {"name": name})
        await client.request("tasks/cancel", {"taskId": task_id})
        outcome = await client.call_tool("wc_cancel_outcome", {"name": name})
        ended = await until(client, task_id, "cancelled")
    assert started["content"][0]["text"] == f"{name}: started"
    assert outcome["content"][0]["text"] == f"{name}: CancelledError"
    assert ended["status"] == "cancelled"


def test_a_created_task_is_told_from_a_result_in_either_eras_shape() -> None:
    assert created_task({"resultType": "task", "taskId": "t1", "status": "working"}) == {
        "resultType": "task", "taskId": "t1", "status": "working"}
    assert created_task({"task": {"taskId": "t2", "status": "working"}}) == {"taskId": "t2", "status": "working"}
    assert created_task({"content": [], "task": {"taskId": "t3"}}) is None  # a result that has a "task" field
    assert created_task({"resultType": "complete", "content": []}) is None
    assert created_task({"resultType": "task"}) is None  # no id: not a task to follow
