"""``wiremcp.task_methods``: the ``tasks/*`` methods of both eras, through the in-memory client.

- The handshake era (2025-11-25): ``tasks/cancel`` reaches the handler and refuses a terminal task,
  ``tasks/result`` carries what a task sent just before it ended, an unknown task is -32602.
- The stateless era (2026-07-28, the tasks extension): each method needs the extension declared,
  ``tasks/get`` answers the ``DetailedTask``, ``tasks/cancel`` and ``tasks/update`` are acknowledged
  (malformed answers are -32602), and another principal's task is unknown. Nothing sleeps: tests wait
  on the server's change bus, bounded.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.tasks import (
    ALICE,
    BOB,
    BOUND,
    EXT,
    MISSING_EXTENSION,
    NO,
    YES,
    Gate,
    asking,
    assert_ack,
    connect,
    create,
    error,
    get,
    start,
    status,
    task_server,
    until,
    update,
)
from wiremcp import Context, MCPServer
from wiremcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND, MISSING_CLIENT_CAPABILITY, MCPError
from wiremcp.task_runner import RELATED_TASK
from wiremcp.transports.memory import Client

# == the handshake era (2025-11-25) =====================================================================


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_cancelling_reaches_the_handler_and_a_terminal_task_cannot_be_cancelled() -> None:
    gate = Gate()
    async with Client(task_server(gate)) as client:
        task = await create(client, "slow", {"text": "x"})
        await asyncio.wait_for(gate.started.wait(), BOUND)
        cancelled = await client.request("tasks/cancel", {"taskId": task["taskId"]})
        assert cancelled["status"] == "cancelled"
        with pytest.raises(MCPError) as again:
            await client.request("tasks/cancel", {"taskId": task["taskId"]})
        with pytest.raises(MCPError) as outcome:
            await client.request("tasks/result", {"taskId": task["taskId"]})
        assert (await client.request("tasks/get", {"taskId": task["taskId"]}))["status"] == "cancelled"
        await asyncio.wait_for(gate.cancelled.wait(), BOUND)  # cooperative: at the handler's next step
    assert gate.ended == ["cancelled"]
    assert again.value.code == INVALID_PARAMS
    assert outcome.value.code != 0


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
@pytest.mark.parametrize("method", ["tasks/get", "tasks/result", "tasks/cancel"])
async def test_an_unknown_task_id_is_invalid_params_in_the_handshake_era(method: str) -> None:
    async with Client(task_server(Gate())) as client:
        with pytest.raises(MCPError) as err:
            await client.request(method, {"taskId": "no-such-task"})
    assert err.value.code == INVALID_PARAMS


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_what_a_task_sent_just_before_it_ended_reaches_the_next_tasks_result() -> None:
    server = MCPServer("last-words")

    @server.tool(task_support="optional")
    async def brief(ctx: Context) -> str:
        await ctx.info("almost there")
        return "done"

    async with Client(server) as client:
        task = await create(client, "brief", {})
        await until(client, task["taskId"], status("completed"))  # the record is written as the handler returns
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
        again = await client.request("tasks/result", {"taskId": task["taskId"]})
    logs = [n["params"] for n in client.notifications if n["method"] == "notifications/message"]
    assert [log["data"] for log in logs] == ["almost there"]  # once: the first tasks/result took it
    assert logs[0]["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
    assert result["content"] == again["content"]


# == the stateless era (2026-07-28): the tasks extension ================================================


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#protocol-errors")
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_without_the_extension_the_task_methods_are_missing_client_capability(method: str) -> None:
    server = task_server(Gate())
    async with connect(server) as declaring, connect(server, extension=False) as client:
        created = await start(declaring, "batch", {"n": 1})
        refused = await error(client, method, {"taskId": created["taskId"], "inputResponses": {}})
    assert refused["code"] == MISSING_CLIENT_CAPABILITY
    assert refused["data"] == MISSING_EXTENSION


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
async def test_the_2025_11_25_only_methods_do_not_exist_in_the_stateless_era(method: str) -> None:
    async with connect(task_server(Gate())) as client:
        created = await start(client, "batch", {"n": 1})
        refused = await error(client, method, {"taskId": created["taskId"]})
    assert refused["code"] == METHOD_NOT_FOUND


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#detailedtask")
@pytest.mark.spec(f"{EXT}#task-polling")
async def test_a_completed_task_inlines_the_call_tool_result() -> None:
    async with connect(task_server(Gate())) as client:
        created = await start(client, "batch", {"n": 21})
        done = await until(client, created["taskId"], status("completed"))
    assert done["resultType"] == "complete"
    assert done["result"]["structuredContent"] == {"result": 42}
    assert RELATED_TASK not in done["result"].get("_meta", {})
    assert not {"error", "inputRequests", "statusMessage"} & done.keys()  # no "in progress" any more


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#protocol-errors")
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
@pytest.mark.parametrize("task_id", ["no-such-task", "", None, 7])
async def test_an_unknown_task_id_is_invalid_params(method: str, task_id: Any) -> None:
    async with connect(task_server(Gate())) as client:
        refused = await error(client, method, {"taskId": task_id, "inputResponses": {}})
    assert refused["code"] == INVALID_PARAMS


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#task-cancellation")
async def test_cancel_acknowledges_stops_the_handler_and_is_idempotent() -> None:
    gate = Gate()
    async with connect(task_server(gate)) as client:
        created = await start(client, "slow", {"text": "x"})
        await asyncio.wait_for(gate.started.wait(), BOUND)
        ack = await client.request("tasks/cancel", {"taskId": created["taskId"]})
        await asyncio.wait_for(gate.cancelled.wait(), BOUND)  # the handler saw CancelledError
        state = await until(client, created["taskId"], status("cancelled", "completed", "failed"))
        again = await client.request("tasks/cancel", {"taskId": created["taskId"]})
        finished = await start(client, "batch", {"n": 1})
        await until(client, finished["taskId"], status("completed"))
        late = await client.request("tasks/cancel", {"taskId": finished["taskId"]})
        still = await get(client, finished["taskId"])
    assert_ack(ack)
    assert_ack(again)
    assert_ack(late)
    assert state["status"] == "cancelled"
    assert still["status"] == "completed"


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.parametrize("responses", [None, [], "yes", 3, {"k": "accept"}, {"k": []}])
async def test_malformed_input_responses_are_invalid_params(responses: Any) -> None:
    async with connect(task_server(Gate())) as client:
        task_id = (await start(client, "pair"))["taskId"]
        await until(client, task_id, asking(2))
        refused = await error(client, "tasks/update", {"taskId": task_id, "inputResponses": responses})
        state = await get(client, task_id)
        for key in state["inputRequests"]:
            await update(client, task_id, {key: NO})
    assert refused["code"] == INVALID_PARAMS
    assert len(state["inputRequests"]) == 2


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#security-considerations")
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_another_principals_task_is_unknown(method: str) -> None:
    gate = Gate()
    gate.release.set()
    server = task_server(gate)
    async with (connect(server, principal=ALICE) as alice, connect(server, principal=BOB) as bob,
                connect(server) as anonymous):
        task_id = (await start(alice, "confirm"))["taskId"]
        waiting = await until(alice, task_id, asking(1))
        (key,) = waiting["inputRequests"]
        params = {"taskId": task_id, "inputResponses": {key: YES}}
        refused = [await error(other, method, params) for other in (bob, anonymous)]
        unchanged = await get(alice, task_id)
        await update(alice, task_id, {key: NO})
        done = await until(alice, task_id, status("completed"))
    assert [r["code"] for r in refused] == [INVALID_PARAMS, INVALID_PARAMS]
    assert unchanged == waiting  # neither answered nor cancelled by them
    assert done["result"]["content"][0]["text"] == "decline: None"
