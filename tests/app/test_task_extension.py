"""The 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``) through the in-memory client:
discovery, the server-decided ``CreateTaskResult``, ``tasks/get`` (``DetailedTask``), ``tasks/update``
(input during a task), ``tasks/cancel``, ownership, ``task_start="handler"``, ``notifications/tasks`` on
``subscriptions/listen``; and the handshake era's task surface, unchanged. Nothing sleeps: tests wait on
the server's change bus, bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.support.tasks import Gate
from tests.support.tasks import task_server as shared_task_server
from wiremcp import Context, MCPServer
from wiremcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND, MISSING_CLIENT_CAPABILITY, MCPError
from wiremcp.protocol import META_SERVER_INFO, META_SUBSCRIPTION, TASKS_EXTENSION
from wiremcp.task_runner import RELATED_TASK
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

VERSION = "2026-07-28"
BOUND = 5.0
"""Failure bound for anything awaited here; nothing should come close."""
EXT = "2026-07-28/extensions/tasks"
ALICE = "https://issuer.example|alice"
BOB = "https://issuer.example|bob"
OK_SCHEMA: JSONObject = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
YES: JSONObject = {"action": "accept", "content": {"ok": True}}
NO: JSONObject = {"action": "decline"}
MISSING_EXTENSION: JSONObject = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}

pytestmark = pytest.mark.spec(f"{EXT}#tasks")


def task_server(gate: Gate) -> MCPServer:
    """The shared task tools, and those the extension's input and start rules need."""
    server = shared_task_server(gate)

    @server.tool(task_support="optional")
    async def refused() -> str:
        raise MCPError(-32001, "the backend refused")

    @server.tool(task_support="optional")
    async def confirm(ctx: Context) -> str:
        await gate.release.wait()
        answer = await ctx.elicit("Go ahead?", OK_SCHEMA)
        return f"{answer.action}: {(answer.content or {}).get('ok')}"

    @server.tool(task_support="optional")
    async def pair(ctx: Context) -> str:
        first, second = await asyncio.gather(ctx.elicit("First?", OK_SCHEMA),
                                             ctx.elicit("Second?", OK_SCHEMA))
        return f"{first.action} {second.action}"

    @server.tool(task_support="optional")
    async def twice(ctx: Context) -> str:
        first = await ctx.elicit("First?", OK_SCHEMA)
        second = await ctx.elicit("Second?", OK_SCHEMA)
        return f"{first.action} {second.action}"

    @server.tool(task_support="optional")
    async def impatient(ctx: Context) -> str:
        return (await ctx.elicit("Quick?", OK_SCHEMA, timeout=0.2)).action

    @server.tool(task_support="optional", task_start="handler")
    async def staged(ctx: Context) -> str:
        """Asks before the task (MRTR rounds on the call), starts it, then asks again inside it."""
        before = await ctx.elicit("Before?", OK_SCHEMA)
        await ctx.start_task()
        inside = await ctx.elicit("Inside?", OK_SCHEMA)
        return f"{before.action} then {inside.action}"

    @server.tool(task_support="optional", task_start="handler")
    async def probe(ctx: Context) -> str:
        await ctx.start_task()
        return f"task_id={ctx.task_id}"

    @server.tool(task_support="optional", task_start="handler")
    async def quick(ctx: Context) -> str:
        return f"no task: {ctx.task_id}"

    return server


# -- helpers -----------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def connect(server: MCPServer, *, extension: bool = True, principal: str | None = None,
                  version: str = VERSION) -> AsyncIterator[Client]:
    """A client declaring elicitation (and the extension unless told not to), as ``principal``."""
    caps: JSONObject = {"elicitation": {}}
    if extension:
        caps["extensions"] = {TASKS_EXTENSION: {}}
    async with Client(server, protocol_version=version, capabilities=caps) as client:
        client.session.state.principal = principal
        yield client


async def start(client: Client, name: str, arguments: JSONObject | None = None) -> JSONObject:
    result = await client.request("tools/call", {"name": name, "arguments": arguments or {}})
    assert result["resultType"] == "task", result
    return result


async def get(client: Client, task_id: str) -> JSONObject:
    return await client.request("tasks/get", {"taskId": task_id})


async def update(client: Client, task_id: str, responses: Any) -> JSONObject:
    return await client.request("tasks/update", {"taskId": task_id, "inputResponses": responses})


async def error(client: Client, method: str, params: JSONObject) -> JSONObject:
    response = await client.request_raw(method, client.with_meta(params))
    assert "error" in response, response
    found: JSONObject = response["error"]
    return found


async def until(client: Client, task_id: str, done: Callable[[JSONObject], bool]) -> JSONObject:
    """The task as ``tasks/get`` shows it once ``done`` holds, re-read at each change the server publishes."""
    with client.server.bus.subscribe() as changes:
        events = aiter(changes)
        async with asyncio.timeout(BOUND):
            while not done(state := await get(client, task_id)):
                await anext(events)
    return state


def status(*wanted: str) -> Callable[[JSONObject], bool]:
    return lambda state: state["status"] in wanted


def asking(count: int) -> Callable[[JSONObject], bool]:
    return lambda state: state["status"] == "input_required" and len(state["inputRequests"]) == count


def bare(result: JSONObject) -> JSONObject:
    """A result less what every stateless result carries (to compare it with a notification's params)."""
    return {k: v for k, v in result.items() if k not in ("resultType", "_meta")}


def assert_ack(result: JSONObject) -> None:
    assert result["resultType"] == "complete"
    assert set(result) == {"resultType", "_meta"}, result


# -- discovery and the server-decided CreateTaskResult ---------------------------------------------------


@pytest.mark.spec(f"{EXT}#capability-negotiation")
async def test_discover_advertises_the_extension_and_no_tasks_capability() -> None:
    async with connect(task_server(Gate())) as client:
        discovered = await client.request("server/discover", {})
    assert discovered["capabilities"]["extensions"][TASKS_EXTENSION] == {}
    assert "tasks" not in discovered["capabilities"]


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


# -- without the extension ------------------------------------------------------------------------------


@pytest.mark.spec(f"{EXT}#capability-negotiation")
async def test_without_the_extension_an_optional_tool_answers_synchronously() -> None:
    gate = Gate()
    gate.release.set()
    async with connect(task_server(gate), extension=False) as client:
        result = await client.request("tools/call", {"name": "slow", "arguments": {"text": "hi"}})
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "HI"}]


@pytest.mark.spec(f"{EXT}#capability-negotiation")
async def test_without_the_extension_a_required_tool_is_missing_client_capability() -> None:
    async with connect(task_server(Gate()), extension=False) as client:
        refused = await error(client, "tools/call", {"name": "batch", "arguments": {"n": 1}})
    assert refused["code"] == MISSING_CLIENT_CAPABILITY
    assert refused["data"] == MISSING_EXTENSION


@pytest.mark.spec(f"{EXT}#protocol-errors")
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_without_the_extension_the_task_methods_are_missing_client_capability(method: str) -> None:
    server = task_server(Gate())
    async with connect(server) as declaring, connect(server, extension=False) as client:
        created = await start(declaring, "batch", {"n": 1})
        refused = await error(client, method, {"taskId": created["taskId"], "inputResponses": {}})
    assert refused["code"] == MISSING_CLIENT_CAPABILITY
    assert refused["data"] == MISSING_EXTENSION


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


async def test_with_the_extension_a_legacy_task_param_does_not_set_the_ttl() -> None:
    gate = Gate()
    gate.release.set()
    async with connect(task_server(gate)) as client:
        created = await client.request("tools/call", {"name": "slow", "arguments": {"text": "a"},
                                                      "task": {"ttl": 1}})
        await until(client, created["taskId"], status("completed"))
    assert created["resultType"] == "task"
    assert created["ttlMs"] == client.server.task_runner.default_ttl_ms


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
async def test_the_2025_11_25_only_methods_do_not_exist_in_the_stateless_era(method: str) -> None:
    async with connect(task_server(Gate())) as client:
        created = await start(client, "batch", {"n": 1})
        refused = await error(client, method, {"taskId": created["taskId"]})
    assert refused["code"] == METHOD_NOT_FOUND


# -- tasks/get: the DetailedTask -------------------------------------------------------------------------


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


@pytest.mark.spec(f"{EXT}#task-execution-errors")
async def test_a_tool_error_is_a_completed_task_whose_result_is_an_error() -> None:
    async with connect(task_server(Gate())) as client:
        created = await start(client, "broken")
        done = await until(client, created["taskId"], status("completed", "failed"))
    assert done["status"] == "completed"  # 2025-11-25 makes it failed: see test_task_runner.py
    assert done["result"]["isError"] is True
    assert done["result"]["content"][0]["text"] == "it broke"
    assert "error" not in done


@pytest.mark.spec(f"{EXT}#task-execution-errors")
async def test_a_json_rpc_error_fails_the_task_with_that_error() -> None:
    async with connect(task_server(Gate())) as client:
        created = await start(client, "refused")
        done = await until(client, created["taskId"], status("completed", "failed"))
    assert done["status"] == "failed"
    assert done["error"] == {"code": -32001, "message": "the backend refused"}
    assert done["statusMessage"] == "the backend refused"
    assert "result" not in done


@pytest.mark.spec(f"{EXT}#protocol-errors")
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
@pytest.mark.parametrize("task_id", ["no-such-task", "", None, 7])
async def test_an_unknown_task_id_is_invalid_params(method: str, task_id: Any) -> None:
    async with connect(task_server(Gate())) as client:
        refused = await error(client, method, {"taskId": task_id, "inputResponses": {}})
    assert refused["code"] == INVALID_PARAMS


# -- tasks/cancel -----------------------------------------------------------------------------------------


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


# -- input during a task: inputRequests and tasks/update -------------------------------------------------


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
        with server.bus.subscribe() as changes:
            task_id = (await start(client, "impatient"))["taskId"]
            seen: list[JSONObject] = []
            async with asyncio.timeout(BOUND):
                async for event in changes:
                    if event["method"] == "notifications/tasks" and event["params"]["taskId"] == task_id:
                        seen.append(event["params"])
                        if event["params"]["status"] == "completed":
                            break
        record = await server.task_runner.store.get(task_id, None)
    asked = [s for s in seen if s["status"] == "input_required"]
    assert len(asked) == 1
    assert len(asked[0]["inputRequests"]) == 1
    assert record is not None
    assert record.input_requests == {}  # withdrawn
    assert seen[-1]["result"]["isError"] is True


# -- ownership -------------------------------------------------------------------------------------------


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


# -- tasks the handler starts (task_start="handler") -----------------------------------------------------


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


async def test_start_task_makes_the_task_and_ctx_task_id_names_it() -> None:
    async with connect(task_server(Gate())) as client:
        created = await start(client, "probe")
        done = await until(client, created["taskId"], status("completed"))
    assert done["result"]["content"][0]["text"] == f"task_id={created['taskId']}"


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


# -- notifications/tasks on subscriptions/listen ---------------------------------------------------------


async def pushed(client: Client, wanted: str) -> JSONObject:
    """The params of the first ``notifications/tasks`` with status ``wanted``."""
    count = 1
    async with asyncio.timeout(BOUND):
        while True:
            notes = await client.wait_for_notification("notifications/tasks", count)
            for note in notes:
                if note["params"]["status"] == wanted:
                    params: JSONObject = note["params"]
                    return params
            count = len(notes) + 1


@pytest.mark.spec(f"{EXT}#task-status-notifications")
async def test_listen_follows_the_callers_own_tasks_and_pushes_every_change() -> None:
    gate = Gate()
    server = task_server(gate)
    async with connect(server, principal=ALICE) as alice, connect(server, principal=BOB) as bob:
        mine = (await start(alice, "confirm"))["taskId"]
        theirs = (await start(bob, "batch", {"n": 1}))["taskId"]
        listen = asyncio.create_task(alice.request_raw("subscriptions/listen", alice.with_meta(
            {"notifications": {"taskIds": [mine, "unknown", theirs]}}), id="sub"))
        acknowledged = alice.wait_for_notification("notifications/subscriptions/acknowledged")
        (ack,) = await asyncio.wait_for(acknowledged, BOUND)
        assert ack["params"]["notifications"] == {"taskIds": [mine]}
        first = await pushed(alice, "working")
        assert first == {**bare(await get(alice, mine)), "_meta": {META_SUBSCRIPTION: "sub"}}

        gate.release.set()
        asked = await pushed(alice, "input_required")
        (key,) = asked["inputRequests"]
        await update(alice, mine, {key: YES})
        done = await pushed(alice, "completed")
        assert done["result"] == {"content": [{"type": "text", "text": "accept: True"}]}
        server.bus.end_all()
        ended = await asyncio.wait_for(listen, BOUND)
    notes = [n for n in alice.notifications if n["method"] == "notifications/tasks"]
    assert {n["params"]["taskId"] for n in notes} == {mine}
    assert all(n["params"]["_meta"] == {META_SUBSCRIPTION: "sub"} for n in notes)
    assert ended["result"]["resultType"] == "complete"


@pytest.mark.spec(f"{EXT}#task-status-notifications")
async def test_listen_for_tasks_without_the_extension_is_missing_client_capability() -> None:
    server = task_server(Gate())
    async with connect(server) as declaring, connect(server, extension=False) as client:
        task_id = (await start(declaring, "batch", {"n": 1}))["taskId"]
        refused = await error(client, "subscriptions/listen", {"notifications": {"taskIds": [task_id]}})
    assert refused["code"] == MISSING_CLIENT_CAPABILITY
    assert refused["data"] == MISSING_EXTENSION
    assert client.notifications == []


# -- the handshake era is unchanged ------------------------------------------------------------------------


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

