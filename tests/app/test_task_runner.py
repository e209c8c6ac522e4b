"""``wiremcp.task_runner``: tool calls that run as tasks, in both eras, through the in-memory client (the
``tasks/*`` methods themselves are ``test_task_methods.py``'s, input during a task ``test_task_inputs.py``'s).

- The handshake era (2025-11-25 experimental tasks): capability and per-tool negotiation, CreateTaskResult,
  tasks/get, tasks/result, tasks/list, tasks/cancel; shutdown, the per-owner limit, TTLs, a store away.
- The stateless era (2026-07-28, the tasks extension): discovery, the server-decided flat
  ``CreateTaskResult``, what a tool error and a JSON-RPC error make of the task, the legacy ``task`` param,
  ``task_start="handler"``; and the handshake era's task surface, unchanged. Nothing sleeps: tests wait on
  the server's change bus, bounded.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.tasks import (
    BOUND,
    EXT,
    MISSING_EXTENSION,
    NO,
    YES,
    Gate,
    asking,
    assert_ack,
    bare,
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
from wiremcp.errors import METHOD_NOT_FOUND, MISSING_CLIENT_CAPABILITY, MCPError
from wiremcp.principal import Principal
from wiremcp.protocol import META_SERVER_INFO, TASKS_EXTENSION
from wiremcp.state import SessionState
from wiremcp.task_runner import RELATED_TASK, owner
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

# == the handshake era (2025-11-25) =====================================================================


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_the_capability_and_each_tools_task_support_are_declared() -> None:
    async with Client(task_server(Gate())) as client:
        assert client.initialize_result is not None
        caps = client.initialize_result["capabilities"]
        assert caps["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        tools = {t["name"]: t for t in await client.list_tools()}
    assert tools["slow"]["execution"] == {"taskSupport": "optional"}
    assert tools["batch"]["execution"] == {"taskSupport": "required"}
    assert "execution" not in tools["plain"]


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_a_server_without_task_tools_has_no_tasks_and_ignores_a_task_param() -> None:
    server = MCPServer("plain")

    @server.tool()
    def add(n: int) -> int:
        return n + 1

    async with Client(server) as client:
        assert client.initialize_result is not None
        assert "tasks" not in client.initialize_result["capabilities"]
        result = await client.request("tools/call", {"name": "add", "arguments": {"n": 1}, "task": {}})
        assert result["structuredContent"] == {"result": 2}  # processed normally
        with pytest.raises(MCPError) as err:
            await client.request("tasks/get", {"taskId": "x"})
    assert err.value.code == METHOD_NOT_FOUND


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_a_task_is_created_at_once_and_its_result_is_the_calls_result() -> None:
    gate = Gate()
    async with Client(task_server(gate)) as client:
        task = await create(client, "slow", {"text": "hi"}, ttl=60_000)
        assert task["status"] == "working"
        assert task["ttl"] == 60_000
        assert len(task["taskId"]) >= 40
        assert task["createdAt"].endswith("Z")
        assert (await client.request("tasks/get", {"taskId": task["taskId"]}))["status"] == "working"
        await asyncio.wait_for(gate.started.wait(), BOUND)
        waiting = asyncio.ensure_future(client.request("tasks/result", {"taskId": task["taskId"]}))
        await asyncio.sleep(0)
        assert not waiting.done()  # tasks/result blocks until the task is terminal
        gate.release.set()
        result = await waiting
        assert result["content"][0]["text"] == "HI"
        assert result["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
        done = await client.request("tasks/get", {"taskId": task["taskId"]})
        assert done["status"] == "completed"
        listed = await client.request("tasks/list", {})
    assert [t["taskId"] for t in listed["tasks"]] == [task["taskId"]]


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_required_and_forbidden_tools_refuse_the_wrong_kind_of_call() -> None:
    async with Client(task_server(Gate())) as client:
        with pytest.raises(MCPError) as required:
            await client.request("tools/call", {"name": "batch", "arguments": {"n": 2}})
        with pytest.raises(MCPError) as forbidden:
            await client.request("tools/call", {"name": "plain", "arguments": {"n": 2}, "task": {}})
        task = await create(client, "batch", {"n": 21})
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
    assert required.value.code == METHOD_NOT_FOUND
    assert forbidden.value.code == METHOD_NOT_FOUND
    assert result["structuredContent"] == {"result": 42}


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_a_tool_error_fails_the_task_and_tasks_result_returns_that_result() -> None:
    async with Client(task_server(Gate())) as client:
        task = await create(client, "broken", {})
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
        state = await client.request("tasks/get", {"taskId": task["taskId"]})
    assert result["isError"] is True
    assert state["status"] == "failed"


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
def test_a_task_belongs_to_the_principal_or_else_to_the_session() -> None:
    server = MCPServer("owners")
    ctx = Context(server, SessionState(id="sid-1"), 1, "tools/call", {}, _nothing,
                  principal=Principal("https://as.example", "alice"))
    assert owner(ctx) == "https://as.example|alice"
    anonymous = Context(server, SessionState(id="sid-1"), 1, "tools/call", {}, _nothing)
    assert owner(anonymous) == "session:sid-1"


async def _nothing(message: JSONObject) -> None:
    return None


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_the_stateless_era_sees_neither_the_capability_nor_task_support() -> None:
    async with Client(task_server(Gate()), protocol_version="2026-07-28") as client:
        discovered = await client.request("server/discover", {})
        tools = await client.request("tools/list", {})
        with pytest.raises(MCPError) as err:
            await client.request("tasks/list", {})
    assert "tasks" not in discovered["capabilities"]
    assert all("execution" not in t for t in tools["tools"])
    assert err.value.code == METHOD_NOT_FOUND


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_a_task_asking_for_input_is_input_required_and_tasks_result_carries_the_request() -> None:
    """The handler's ``ctx.elicit`` moves the task to input_required; the elicitation goes out on the
    ``tasks/result`` stream tagged with the task; once answered the task completes."""
    server = MCPServer("asking")

    @server.tool(task_support="optional")
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Go ahead?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return f"{answer.action}: {(answer.content or {}).get('ok')}"

    seen: list[JSONObject] = []

    async def elicitation(params: JSONObject) -> JSONObject:
        seen.append(params)
        return {"action": "accept", "content": {"ok": True}}

    async with Client(server, elicitation=elicitation) as client:
        task = await create(client, "confirm", {})
        await until(client, task["taskId"], status("input_required"))  # written as the handler asks
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
        final = await client.request("tasks/get", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "accept: True"
    assert final["status"] == "completed"
    assert seen[0]["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
    assert seen[0]["message"] == "Go ahead?"


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_the_wire_shapes_parse_as_the_official_sdks_2025_11_25_types() -> None:
    """The official SDK's generated protocol types (mcp-types, 2025-11-25) accept every task answer."""
    from mcp_types import _v2025_11_25 as spec

    gate = Gate()
    async with Client(task_server(gate)) as client:
        assert client.initialize_result is not None
        spec.ServerCapabilities.model_validate(client.initialize_result["capabilities"])
        spec.ListToolsResult.model_validate({"tools": await client.list_tools()})
        created = await client.request("tools/call", {"name": "slow", "arguments": {"text": "a"}, "task": {}})
        spec.CreateTaskResult.model_validate(created)
        task_id = created["task"]["taskId"]
        spec.GetTaskResult.model_validate(await client.request("tasks/get", {"taskId": task_id}))
        spec.ListTasksResult.model_validate(await client.request("tasks/list", {}))
        await asyncio.wait_for(gate.started.wait(), BOUND)
        spec.CancelTaskResult.model_validate(await client.request("tasks/cancel", {"taskId": task_id}))
        done = await create(client, "batch", {"n": 1})
        spec.CallToolResult.model_validate(await client.request("tasks/result", {"taskId": done["taskId"]}))


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_at_shutdown_a_task_still_running_is_failed_saying_why_and_its_handler_is_stopped() -> None:
    """After the drain window, the server fails the tasks it still runs (pollers see why) and stops them."""
    gate = Gate()
    server = task_server(gate)
    async with Client(server) as client:
        task = await create(client, "slow", {"text": "a"})
        await asyncio.wait_for(gate.started.wait(), BOUND)
        await server.runtime.task_runner.shutdown()
        state = await client.request("tasks/get", {"taskId": task["taskId"]})
        assert server.runtime.task_runner.running == []
    assert gate.ended == ["cancelled"]
    assert state["status"] == "failed"
    assert "shut down before the task finished" in state["statusMessage"]


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_an_owner_over_its_running_task_limit_is_refused_until_one_finishes() -> None:
    gate = Gate()
    server = task_server(gate)
    server.runtime.task_runner.max_running_per_owner = 1
    async with Client(server) as client:
        first = await create(client, "slow", {"text": "a"})
        with pytest.raises(MCPError) as refused:
            await client.request("tools/call", {"name": "slow", "arguments": {"text": "b"}, "task": {}})
        assert refused.value.code == -32603
        assert refused.value.data == {"retryable": True}
        gate.release.set()
        await client.request("tasks/result", {"taskId": first["taskId"]})
        second = await create(client, "batch", {"n": 1})
        assert second["status"] in ("working", "completed")


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_a_task_nobody_reads_keeps_its_requests_for_input_but_drops_logs_beyond_the_limit() -> None:
    from wiremcp.task_runner import OUTLET_LIMIT

    server = MCPServer("chatty")

    @server.tool(task_support="optional")
    async def chatty(ctx: Context) -> str:
        for i in range(OUTLET_LIMIT + 50):
            await ctx.info(f"line {i}")
        answer = await ctx.elicit("Go ahead?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return answer.action

    async def elicitation(params: JSONObject) -> JSONObject:
        return {"action": "accept", "content": {"ok": True}}

    async with Client(server, elicitation=elicitation) as client:
        task = await create(client, "chatty", {})
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "accept"
    logs = [n for n in client.notifications if n["method"] == "notifications/message"]
    assert OUTLET_LIMIT <= len(logs) < OUTLET_LIMIT + 50  # some dropped: nobody read them in time


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_a_store_away_for_a_moment_when_the_task_ends_still_gets_its_outcome() -> None:
    """The outcome is written again (backing off) until the store takes it: the task does not stay working."""
    from wiremcp.tasks import InMemoryTaskStore

    class Flaky(InMemoryTaskStore):
        failures = 2

        async def transition(self, task_id: str, to_status: str, **kwargs: Any) -> Any:
            if to_status == "completed" and self.failures:
                self.failures -= 1
                raise ConnectionError("the store is away")
            return await super().transition(task_id, to_status, **kwargs)

    gate = Gate()
    gate.release.set()
    server = task_server(gate)
    server.runtime.task_runner.store = store = Flaky()
    async with Client(server) as client:
        task = await create(client, "slow", {"text": "a"})
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "A"
    assert store.failures == 0


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_a_requested_ttl_is_kept_within_a_second_and_the_maximum() -> None:
    gate = Gate()
    server = task_server(gate)
    async with Client(server) as client:
        tiny = await create(client, "batch", {"n": 1}, ttl=0)
        huge = await create(client, "batch", {"n": 1}, ttl=10**12)
        asked = await create(client, "batch", {"n": 1}, ttl=5_000)
    assert (tiny["ttl"], huge["ttl"], asked["ttl"]) == (1_000, server.runtime.task_runner.max_ttl_ms, 5_000)


# == the stateless era (2026-07-28): the tasks extension ================================================


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#capability-negotiation")
async def test_discover_advertises_the_extension_and_no_tasks_capability() -> None:
    async with connect(task_server(Gate())) as client:
        discovered = await client.request("server/discover", {})
    assert discovered["capabilities"]["extensions"][TASKS_EXTENSION] == {}
    assert "tasks" not in discovered["capabilities"]


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#capability-negotiation")
async def test_a_server_without_task_tools_advertises_neither() -> None:
    server = MCPServer("plain")

    @server.tool()
    def echo(n: int) -> int:
        return n

    async with connect(server) as client:
        capabilities = (await client.request("server/discover", {}))["capabilities"]
    assert "tasks" not in capabilities
    assert TASKS_EXTENSION not in capabilities.get("extensions", {})


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#task-creation")
@pytest.mark.spec(f"{EXT}#polymorphic-results")
async def test_an_optional_tool_answers_a_flat_create_task_result_that_tasks_get_resolves_at_once() -> None:
    gate = Gate()
    async with connect(task_server(gate)) as client:
        created = await start(client, "slow", {"text": "hi"})
        polled = await get(client, created["taskId"])
        gate.release.set()
        await until(client, created["taskId"], status("completed"))
    assert bare(polled) == bare(created)  # durable before the answer: the same task, still working
    assert created["status"] == "working"
    assert created["createdAt"].endswith("Z")
    for key in ("ttlMs", "pollIntervalMs"):
        assert type(created[key]) is int, created
    unwanted = {"task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"}
    assert not unwanted & created.keys(), created
    assert created["_meta"].keys() == {META_SERVER_INFO}


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#capability-negotiation")
async def test_without_the_extension_an_optional_tool_answers_synchronously() -> None:
    gate = Gate()
    gate.release.set()
    async with connect(task_server(gate), extension=False) as client:
        result = await client.request("tools/call", {"name": "slow", "arguments": {"text": "hi"}})
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "HI"}]


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#capability-negotiation")
async def test_without_the_extension_a_required_tool_is_missing_client_capability() -> None:
    async with connect(task_server(Gate()), extension=False) as client:
        refused = await error(client, "tools/call", {"name": "batch", "arguments": {"n": 1}})
    assert refused["code"] == MISSING_CLIENT_CAPABILITY
    assert refused["data"] == MISSING_EXTENSION


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.parametrize(("name", "extension", "text"), [
    ("plain", False, '{"result":2}'),
    ("plain", True, '{"result":2}'),  # a forbidden tool never runs as a task
    ("slow", False, "A"),  # the client did not declare the extension
])
async def test_a_legacy_task_param_is_ignored(name: str, extension: bool, text: str) -> None:
    gate = Gate()
    gate.release.set()
    arguments = {"n": 1} if name == "plain" else {"text": "a"}
    async with connect(task_server(gate), extension=extension) as client:
        result = await client.request("tools/call", {"name": name, "arguments": arguments,
                                                     "task": {"ttl": 1}})
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": text}]


@pytest.mark.spec(f"{EXT}#tasks")
async def test_with_the_extension_a_legacy_task_param_does_not_set_the_ttl() -> None:
    gate = Gate()
    gate.release.set()
    async with connect(task_server(gate)) as client:
        created = await client.request("tools/call", {"name": "slow", "arguments": {"text": "a"},
                                                      "task": {"ttl": 1}})
        await until(client, created["taskId"], status("completed"))
    assert created["resultType"] == "task"
    assert created["ttlMs"] == client.server.runtime.task_runner.default_ttl_ms


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#task-execution-errors")
async def test_a_tool_error_is_a_completed_task_whose_result_is_an_error() -> None:
    async with connect(task_server(Gate())) as client:
        created = await start(client, "broken")
        done = await until(client, created["taskId"], status("completed", "failed"))
    assert done["status"] == "completed"  # 2025-11-25 makes it failed: see test_task_runner.py
    assert done["result"]["isError"] is True
    assert done["result"]["content"][0]["text"] == "it broke"
    assert "error" not in done


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#task-execution-errors")
async def test_a_json_rpc_error_fails_the_task_with_that_error() -> None:
    async with connect(task_server(Gate())) as client:
        created = await start(client, "refused")
        done = await until(client, created["taskId"], status("completed", "failed"))
    assert done["status"] == "failed"
    assert done["error"] == {"code": -32001, "message": "the backend refused"}
    assert done["statusMessage"] == "the backend refused"
    assert "result" not in done


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#task-creation")
async def test_a_handler_gathers_input_by_mrtr_then_starts_the_task() -> None:
    async with connect(task_server(Gate())) as client:
        params = client.with_meta({"name": "staged", "arguments": {}})
        first = (await client.request_raw("tools/call", params))["result"]
        assert first["resultType"] == "input_required"
        assert "taskId" not in first
        (before,) = first["inputRequests"]
        created = (await client.request_raw("tools/call", {
            **params, "inputResponses": {before: YES}, "requestState": first["requestState"]}))["result"]
        assert created["resultType"] == "task"
        assert not {"inputRequests", "requestState"} & created.keys()
        task_id = created["taskId"]
        (inside,) = (await until(client, task_id, asking(1)))["inputRequests"]
        assert inside != before  # the task's keys continue the call's
        assert_ack(await update(client, task_id, {before: NO}))  # the call's key: ignored
        await update(client, task_id, {inside: NO})
        done = await until(client, task_id, status("completed"))
    assert done["result"]["content"][0]["text"] == "accept then decline"


@pytest.mark.spec(f"{EXT}#tasks")
async def test_start_task_makes_the_task_and_ctx_task_id_names_it() -> None:
    async with connect(task_server(Gate())) as client:
        created = await start(client, "probe")
        done = await until(client, created["taskId"], status("completed"))
    assert done["result"]["content"][0]["text"] == f"task_id={created['taskId']}"


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.parametrize(("name", "extension", "text"), [
    ("quick", True, "no task: None"),  # returned without starting the task
    ("probe", False, "task_id=None"),  # an ordinary call: start_task does nothing
    ("quick", False, "no task: None"),
])
async def test_a_call_that_never_becomes_a_task_answers_synchronously(name: str, extension: bool,
                                                                     text: str) -> None:
    async with connect(task_server(Gate()), extension=extension) as client:
        result = await client.request("tools/call", {"name": name, "arguments": {}})
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": text}]


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec("2025-11-25/basic/utilities/tasks#capabilities")
async def test_handshake_era_task_support_is_shown_to_2025_11_25_sessions_only() -> None:
    server = task_server(Gate())
    async with (connect(server, version="2025-11-25") as current,
                connect(server, version="2025-06-18") as older):
        assert current.initialize_result is not None
        assert older.initialize_result is not None
        assert "tasks" in current.initialize_result["capabilities"]
        assert "tasks" not in older.initialize_result["capabilities"]
        current_tools = {t["name"]: t for t in await current.list_tools()}
        older_tools = {t["name"]: t for t in await older.list_tools()}
    assert current_tools["slow"]["execution"] == {"taskSupport": "optional"}
    assert all("execution" not in t for t in older_tools.values())


@pytest.mark.spec(f"{EXT}#tasks")
async def test_to_a_2025_06_18_session_task_tools_are_ordinary_tools_and_tasks_do_not_exist() -> None:
    """Tasks came with 2025-11-25: an older session's ``task`` param means nothing, a ``required`` task
    tool runs as an ordinary call, and the ``tasks/*`` methods do not exist for it."""
    gate = Gate()
    gate.release.set()
    async with connect(task_server(gate), version="2025-06-18") as older:
        plain = await older.request("tools/call", {"name": "slow", "arguments": {"text": "a"}, "task": {}})
        required = await older.request("tools/call", {"name": "batch", "arguments": {"n": 2}})
        with pytest.raises(MCPError) as missing:
            await older.request("tasks/list", {})
    assert plain["content"][0]["text"] == "A"
    assert "task" not in plain
    assert required["structuredContent"] == {"result": 4}
    assert missing.value.code == METHOD_NOT_FOUND
