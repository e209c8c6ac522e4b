"""2025-11-25 experimental tasks for tools/call, through the in-memory client (handshake era):
capability and per-tool negotiation, CreateTaskResult, tasks/get, tasks/result, tasks/list, tasks/cancel."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.tasks import Gate, task_server
from wiremcp import Context, MCPServer
from wiremcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND, MCPError
from wiremcp.state import SessionState
from wiremcp.task_runner import RELATED_TASK, owner
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

pytestmark = pytest.mark.spec("2025-11-25/basic/utilities/tasks")


async def create(client: Client, name: str, arguments: JSONObject, **task: Any) -> JSONObject:
    result = await client.request("tools/call", {"name": name, "arguments": arguments, "task": task})
    created: JSONObject = result["task"]
    return created


async def test_the_capability_and_each_tools_task_support_are_declared() -> None:
    async with Client(task_server(Gate())) as client:
        assert client.initialize_result is not None
        caps = client.initialize_result["capabilities"]
        assert caps["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        tools = {t["name"]: t for t in await client.list_tools()}
    assert tools["slow"]["execution"] == {"taskSupport": "optional"}
    assert tools["batch"]["execution"] == {"taskSupport": "required"}
    assert "execution" not in tools["plain"]


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


async def test_a_task_is_created_at_once_and_its_result_is_the_calls_result() -> None:
    gate = Gate()
    async with Client(task_server(gate)) as client:
        task = await create(client, "slow", {"text": "hi"}, ttl=60_000)
        assert task["status"] == "working"
        assert task["ttl"] == 60_000
        assert len(task["taskId"]) >= 40
        assert task["createdAt"].endswith("Z")
        assert (await client.request("tasks/get", {"taskId": task["taskId"]}))["status"] == "working"
        await gate.started.wait()
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


async def test_a_tool_error_fails_the_task_and_tasks_result_returns_that_result() -> None:
    async with Client(task_server(Gate())) as client:
        task = await create(client, "broken", {})
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
        state = await client.request("tasks/get", {"taskId": task["taskId"]})
    assert result["isError"] is True
    assert state["status"] == "failed"


async def test_cancelling_reaches_the_handler_and_a_terminal_task_cannot_be_cancelled() -> None:
    gate = Gate()
    async with Client(task_server(gate)) as client:
        task = await create(client, "slow", {"text": "x"})
        await gate.started.wait()
        cancelled = await client.request("tasks/cancel", {"taskId": task["taskId"]})
        assert cancelled["status"] == "cancelled"
        with pytest.raises(MCPError) as again:
            await client.request("tasks/cancel", {"taskId": task["taskId"]})
        with pytest.raises(MCPError) as outcome:
            await client.request("tasks/result", {"taskId": task["taskId"]})
        assert (await client.request("tasks/get", {"taskId": task["taskId"]}))["status"] == "cancelled"
    assert gate.ended == ["cancelled"]
    assert again.value.code == INVALID_PARAMS
    assert outcome.value.code != 0


@pytest.mark.parametrize("method", ["tasks/get", "tasks/result", "tasks/cancel"])
async def test_an_unknown_task_id_is_invalid_params(method: str) -> None:
    async with Client(task_server(Gate())) as client:
        with pytest.raises(MCPError) as err:
            await client.request(method, {"taskId": "no-such-task"})
    assert err.value.code == INVALID_PARAMS


def test_a_task_belongs_to_the_principal_or_else_to_the_session() -> None:
    class Who:
        key = "https://as.example|alice"

    server = MCPServer("owners")
    ctx = Context(server, SessionState(id="sid-1"), 1, "tools/call", {}, _nothing, principal=Who())
    assert owner(ctx) == "https://as.example|alice"
    anonymous = Context(server, SessionState(id="sid-1"), 1, "tools/call", {}, _nothing)
    assert owner(anonymous) == "session:sid-1"


async def _nothing(message: JSONObject) -> None:
    return None


async def test_the_stateless_era_sees_neither_the_capability_nor_task_support() -> None:
    async with Client(task_server(Gate()), protocol_version="2026-07-28") as client:
        discovered = await client.request("server/discover", {})
        tools = await client.request("tools/list", {})
        with pytest.raises(MCPError) as err:
            await client.request("tasks/list", {})
    assert "tasks" not in discovered["capabilities"]
    assert all("execution" not in t for t in tools["tools"])
    assert err.value.code == METHOD_NOT_FOUND


async def test_a_task_asking_for_input_is_input_required_and_tasks_result_carries_the_request() -> None:
    """The handler's ``ctx.elicit`` moves the task to input_required; the elicitation goes out on the
    ``tasks/result`` stream tagged with the task; once answered the task completes."""
    server = MCPServer("asking")
    asked = asyncio.Event()

    @server.tool(task_support="optional")
    async def confirm(ctx: Context) -> str:
        asked.set()
        answer = await ctx.elicit("Go ahead?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return f"{answer.action}: {(answer.content or {}).get('ok')}"

    seen: list[JSONObject] = []

    async def elicitation(params: JSONObject) -> JSONObject:
        seen.append(params)
        return {"action": "accept", "content": {"ok": True}}

    async with Client(server, elicitation=elicitation) as client:
        task = await create(client, "confirm", {})
        await asked.wait()
        state = await client.request("tasks/get", {"taskId": task["taskId"]})
        for _ in range(10):  # the transition is written as the handler asks; a few turns at most
            if state["status"] == "input_required":
                break
            await asyncio.sleep(0)
            state = await client.request("tasks/get", {"taskId": task["taskId"]})
        assert state["status"] == "input_required", state
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
        final = await client.request("tasks/get", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "accept: True"
    assert final["status"] == "completed"
    assert seen[0]["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
    assert seen[0]["message"] == "Go ahead?"


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
        await gate.started.wait()
        spec.CancelTaskResult.model_validate(await client.request("tasks/cancel", {"taskId": task_id}))
        done = await create(client, "batch", {"n": 1})
        spec.CallToolResult.model_validate(await client.request("tasks/result", {"taskId": done["taskId"]}))


async def test_at_shutdown_a_task_still_running_is_failed_saying_why_and_its_handler_is_stopped() -> None:
    """After the drain window, the server fails the tasks it still runs (pollers see why) and stops them."""
    gate = Gate()
    server = task_server(gate)
    async with Client(server) as client:
        task = await create(client, "slow", {"text": "a"})
        await gate.started.wait()
        await server.task_runner.shutdown()
        state = await client.request("tasks/get", {"taskId": task["taskId"]})
        assert server.task_runner.running == []
    assert gate.ended == ["cancelled"]
    assert state["status"] == "failed"
    assert "shut down before the task finished" in state["statusMessage"]


async def test_an_owner_over_its_running_task_limit_is_refused_until_one_finishes() -> None:
    gate = Gate()
    server = task_server(gate)
    server.task_runner.max_running_per_owner = 1
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


def test_the_task_settings_reach_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    from wiremcp.transports.serving.deployment import configure
    from wiremcp.transports.serving.settings import Settings

    monkeypatch.setenv("WIREMCP_TASK_TTL_SECONDS", "120")
    monkeypatch.setenv("WIREMCP_TASK_POLL_INTERVAL_MS", "250")
    monkeypatch.setenv("WIREMCP_MAX_TASKS_PER_OWNER", "3")
    runner = configure(task_server(Gate()), Settings.from_env()).task_runner
    assert (runner.default_ttl_ms, runner.poll_interval_ms, runner.max_running_per_owner) == (120_000, 250, 3)


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


async def test_what_a_task_sent_just_before_it_ended_reaches_the_next_tasks_result() -> None:
    server = MCPServer("last-words")
    done = asyncio.Event()

    @server.tool(task_support="optional")
    async def brief(ctx: Context) -> str:
        await ctx.info("almost there")
        done.set()
        return "done"

    async with Client(server) as client:
        task = await create(client, "brief", {})
        await done.wait()
        state = await client.request("tasks/get", {"taskId": task["taskId"]})
        while state["status"] != "completed":  # the record is written as the handler returns
            await asyncio.sleep(0)
            state = await client.request("tasks/get", {"taskId": task["taskId"]})
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
        again = await client.request("tasks/result", {"taskId": task["taskId"]})
    logs = [n["params"] for n in client.notifications if n["method"] == "notifications/message"]
    assert [log["data"] for log in logs] == ["almost there"]  # once: the first tasks/result took it
    assert logs[0]["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
    assert result["content"] == again["content"]


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
    server.task_runner.store = store = Flaky()
    async with Client(server) as client:
        task = await create(client, "slow", {"text": "a"})
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "A"
    assert store.failures == 0


async def test_a_requested_ttl_is_kept_within_a_second_and_the_maximum() -> None:
    gate = Gate()
    server = task_server(gate)
    async with Client(server) as client:
        tiny = await create(client, "batch", {"n": 1}, ttl=0)
        huge = await create(client, "batch", {"n": 1}, ttl=10**12)
        asked = await create(client, "batch", {"n": 1}, ttl=5_000)
    assert (tiny["ttl"], huge["ttl"], asked["ttl"]) == (1_000, server.task_runner.max_ttl_ms, 5_000)
