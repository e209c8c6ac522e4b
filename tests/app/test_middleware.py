"""``wiremcp.middleware``: the chain around every request and notification, in both eras, through the
in-memory client: its order, a middleware that answers, refuses or changes what goes in and out, the
``Middleware`` hooks, what a ``Call`` says of each message (batches, tasks, input rounds, notifications
included), and what a broken middleware costs (only its own message)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.failures import masked_error
from tests.support.tasks import create
from wiremcp import Context, MCPServer, jsonrpc
from wiremcp.errors import DefinitionError, MCPError
from wiremcp.middleware import Call, CallNext, Middleware, chain
from wiremcp.principal import Principal
from wiremcp.protocol import TASKS_EXTENSION
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

STATELESS = "2026-07-28"
BOUND = 10.0
"""Failure bound for anything awaited here; nothing should come close."""
ERAS = pytest.mark.parametrize("version", ["2025-11-25", STATELESS])
ALICE = Principal("https://issuer.example", "alice", client_id="app-1", scopes=frozenset({"mcp:tools"}))


class Person(BaseModel):
    name: str


def _server() -> MCPServer:
    server = MCPServer("chained", "1.0")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Who are you?", Person)
        return f"{answer.action} {answer.data.name if answer.data else ''}"

    @server.tool(task_support="optional")
    async def job(n: int) -> int:
        return n * 2

    @server.resource("test://static")
    def static() -> str:
        return "static"

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello {name}"

    return server


def _recording(seen: list[Call], results: list[Any] | None = None) -> Callable[[Call, CallNext], Any]:
    """A middleware that keeps every call (and what came back, in ``results``) and hands it on."""

    async def middleware(call: Call, call_next: CallNext) -> JSONObject | None:
        seen.append(call)
        result = await call_next()
        if results is not None:
            results.append(result)
        return result

    return middleware


class Frames(Client):
    """The in-memory client, also keeping every frame the server writes (batches included)."""

    def __init__(self, server: MCPServer, **kwargs: Any) -> None:
        super().__init__(server, **kwargs)
        self.frames: list[Any] = []
        self.arrived = asyncio.Event()

    async def _receive(self, message: JSONObject | list[JSONObject]) -> None:
        self.frames.append(jsonrpc.loads(jsonrpc.dumps(message)))
        self.arrived.set()
        await super()._receive(message)

    async def batch_reply(self) -> list[JSONObject]:
        async with asyncio.timeout(BOUND):
            while True:
                for frame in self.frames:
                    if isinstance(frame, list):
                        return frame
                self.arrived.clear()
                await self.arrived.wait()


async def _call(client: Client, name: str, arguments: JSONObject | None = None) -> JSONObject:
    """The whole response to a ``tools/call`` (with the stateless era's ``_meta`` when it speaks it)."""
    params: JSONObject = {"name": name, "arguments": arguments or {}}
    return await client.request_raw("tools/call", client.with_meta(params) if client.stateless else params)


# == the chain ===========================================================================================


@ERAS
async def test_the_first_added_is_outermost_it_sees_the_request_first_and_the_result_last(version: str) -> None:
    server = _server()
    order: list[str] = []

    def named(label: str) -> Callable[[Call, CallNext], Any]:
        async def middleware(call: Call, call_next: CallNext) -> JSONObject | None:
            if call.method != "tools/call":
                return await call_next()
            order.append(f"{label} in")
            result = await call_next()
            order.append(f"{label} out: {result['content'][0]['text'] if result else None}")
            return result

        return middleware

    for label in ("a", "b", "c"):
        server.add_middleware(named(label))
    async with Client(server, protocol_version=version) as client:
        await client.call_tool("echo", {"text": "hi"})
    assert order == ["a in", "b in", "c in", "c out: hi", "b out: hi", "a out: hi"]


@ERAS
async def test_a_middleware_can_answer_without_the_server(version: str) -> None:
    server = _server()
    handled: list[str] = []

    @server.tool()
    def costly() -> str:
        handled.append("costly")
        return "computed"

    @server.add_middleware
    async def cache(call: Call, call_next: CallNext) -> JSONObject | None:
        if call.name == "costly":
            return {"content": [{"type": "text", "text": "cached"}], "isError": False}
        return await call_next()

    async with Client(server, protocol_version=version) as client:
        result = await client.call_tool("costly")
        other = await client.call_tool("echo", {"text": "x"})
    assert result["content"] == [{"type": "text", "text": "cached"}]
    assert handled == []
    assert other["content"] == [{"type": "text", "text": "x"}]


@ERAS
async def test_a_refusal_is_the_json_rpc_error_the_client_gets(version: str) -> None:
    server = _server()
    handled: list[str] = []

    @server.tool()
    def guarded() -> str:
        handled.append("guarded")
        return "no"

    @server.add_middleware
    async def refuse(call: Call, call_next: CallNext) -> JSONObject | None:
        if call.name == "guarded":
            raise MCPError(-32001, "Not on Sundays", {"day": "sunday"})
        return await call_next()

    async with Client(server, protocol_version=version) as client:
        response = await _call(client, "guarded")
        still = await client.call_tool("echo", {"text": "ok"})
    assert response["error"] == {"code": -32001, "message": "Not on Sundays", "data": {"day": "sunday"}}
    assert "result" not in response
    assert handled == []
    assert still["content"][0]["text"] == "ok"


@ERAS
async def test_what_goes_in_and_what_comes_out_can_be_changed(version: str) -> None:
    server = _server()

    @server.add_middleware
    async def shout(call: Call, call_next: CallNext) -> JSONObject | None:
        if call.name != "echo":
            return await call_next()
        call.params = {**call.params, "arguments": {"text": call.arguments["text"].upper()}}
        result = await call_next()
        assert result is not None
        return {**result, "content": [*result["content"], {"type": "text", "text": "(shouted)"}]}

    async with Client(server, protocol_version=version) as client:
        result = await client.call_tool("echo", {"text": "quiet"})
    assert [block["text"] for block in result["content"]] == ["QUIET", "(shouted)"]
    if version == STATELESS:
        assert result["resultType"] == "complete"  # what the server made stays


@ERAS
async def test_with_no_middleware_installed_nothing_of_it_runs(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_chain(*args: Any) -> Any:
        raise AssertionError("the chain ran")

    monkeypatch.setattr("wiremcp.entry.chain", no_chain)
    monkeypatch.setattr("wiremcp.entry.Call", no_chain)
    server = _server()
    async with Client(server, protocol_version=version, roots=_no_roots) as client:
        assert (await client.call_tool("echo", {"text": "a"}))["content"][0]["text"] == "a"
        await client.notify("notifications/roots/list_changed")
        assert (await client.call_tool("echo", {"text": "b"}))["content"][0]["text"] == "b"


async def _no_roots(params: JSONObject) -> JSONObject:
    return {"roots": []}


def test_chain_runs_the_last_step_after_every_middleware() -> None:
    async def run() -> list[str]:
        steps: list[str] = []

        async def first(call: Call, call_next: CallNext) -> JSONObject | None:
            steps.append("first")
            return await call_next()

        async def last() -> JSONObject:
            steps.append("last")
            return {"done": True}

        assert await chain([first, first], Call(MCPServer("bare"), "ping", {}, request_id=1), last) == {"done": True}
        assert await chain([], Call(MCPServer("bare"), "ping", {}, request_id=2), last) == {"done": True}
        return steps

    assert asyncio.run(run()) == ["first", "first", "last", "last"]


# == the Middleware class ====================================================================================


class Hooks(Middleware):
    """Records each hook it goes through."""

    def __init__(self) -> None:
        self.hooks: list[str] = []

    async def on_message(self, call: Call, call_next: CallNext) -> JSONObject | None:
        self.hooks.append(f"message {call.method}")
        return await call_next()

    async def on_request(self, call: Call, call_next: CallNext) -> JSONObject | None:
        self.hooks.append("request")
        return await call_next()

    async def on_notification(self, call: Call, call_next: CallNext) -> JSONObject | None:
        self.hooks.append("notification")
        return await call_next()

    async def on_tools_call(self, call: Call, call_next: CallNext) -> JSONObject | None:
        self.hooks.append(f"tools/call {call.name}")
        return await call_next()

    async def on_resources_read(self, call: Call, call_next: CallNext) -> JSONObject | None:
        self.hooks.append(f"resources/read {call.uri}")
        return await call_next()

    async def on_notifications_initialized(self, call: Call, call_next: CallNext) -> JSONObject | None:
        self.hooks.append("initialized")
        return await call_next()

    async def on_notifications_roots_list_changed(self, call: Call, call_next: CallNext) -> JSONObject | None:
        self.hooks.append("roots changed")
        return await call_next()


async def test_the_middleware_class_calls_a_hook_per_kind_and_per_method() -> None:
    server = _server()
    hooks = server.add_middleware(Hooks())
    async with Client(server, roots=_no_roots) as client:
        await client.call_tool("echo", {"text": "a"})
        await client.read_resource("test://static")
        await client.list_tools()
        await client.notify("notifications/roots/list_changed")
    assert hooks.hooks == [
        "message initialize", "request",
        "message notifications/initialized", "notification", "initialized",
        "message tools/call", "request", "tools/call echo",
        "message resources/read", "request", "resources/read test://static",
        "message tools/list", "request",  # no hook of its own: handed on
        "message notifications/roots/list_changed", "notification", "roots changed",
    ]


async def test_a_method_named_after_a_kind_hook_does_not_run_that_hook_twice() -> None:
    server = _server()
    hooks = server.add_middleware(Hooks())
    async with Client(server) as client:
        hooks.hooks.clear()
        response = await client.request_raw("request")
        await client.notify("message")
    assert response["error"]["code"] == -32601
    assert hooks.hooks == ["message request", "request", "message message", "notification"]


async def test_a_hook_can_refuse_or_answer() -> None:
    class ReadOnly(Middleware):
        async def on_tools_call(self, call: Call, call_next: CallNext) -> JSONObject | None:
            raise MCPError(-32001, "read-only")

        async def on_tools_list(self, call: Call, call_next: CallNext) -> JSONObject | None:
            return {"tools": []}

    server = _server()
    server.add_middleware(ReadOnly())
    async with Client(server) as client:
        refused = await _call(client, "echo", {"text": "a"})
        listed = await client.list_tools()
        resource = await client.read_resource("test://static")
    assert refused["error"]["message"] == "read-only"
    assert listed == []
    assert resource["contents"][0]["text"] == "static"


# == what a Call says ========================================================================================


@ERAS
async def test_the_call_of_a_tools_call(version: str) -> None:
    server = _server()
    seen: list[Call] = []
    server.add_middleware(_recording(seen))
    async with Client(server, protocol_version=version, principal=ALICE) as client:
        await client.call_tool("echo", {"text": "hi"})
    call = seen[-1]
    assert call.method == "tools/call"
    assert call.name == "echo"
    assert call.arguments == {"text": "hi"}
    assert call.params["arguments"] == {"text": "hi"}
    assert call.uri is None
    assert call.component is server.tools["echo"]
    assert call.component_name == "echo"
    assert call.principal == ALICE
    assert call.server is server
    assert call.ctx is not None
    assert call.request_id is not None
    assert call.ctx.request_id == call.request_id
    assert not call.notification
    assert not call.batch
    assert not call.retry
    assert not call.task
    assert call.peer is None  # in memory: no address
    assert call.stateless is (version == STATELESS)
    assert (call.session is None) is (version == STATELESS)  # a stateless request has no session
    assert repr(call) == "<Call tools/call echo>"


async def test_the_component_each_method_names() -> None:
    server = _server()
    seen: list[Call] = []
    server.add_middleware(_recording(seen))
    async with Client(server) as client:
        await client.read_resource("test://static")
        await client.get_prompt("greet", {"name": "Bo"})
        await client.request_raw("tools/call", {"name": "no-such-tool", "arguments": {}})
        await client.request_raw("resources/read", {"uri": "test://nowhere"})
        await client.list_tools()
    read, prompt, missing_tool, missing_resource, listing = seen[-5:]
    assert read.component is server.resources.static["test://static"]
    assert read.uri == "test://static"
    assert read.component_name == "test://static"
    assert prompt.component is server.prompts["greet"]
    assert prompt.arguments == {"name": "Bo"}
    assert missing_tool.name == "no-such-tool"
    assert missing_tool.component is None
    assert missing_resource.component is None
    assert listing.component is None
    assert listing.component_name is None
    assert repr(listing) == "<Call tools/list>"


async def test_each_request_of_a_batch_goes_through_the_chain_on_its_own() -> None:
    server = _server()
    seen: list[Call] = []
    server.add_middleware(_recording(seen))
    async with Frames(server, protocol_version="2025-03-26", roots=_no_roots) as client:
        before = len(seen)
        await client.send_raw([jsonrpc.request("b1", "tools/call", {"name": "echo", "arguments": {"text": "x"}}),
                               jsonrpc.request("b2", "ping", None),
                               jsonrpc.notification("notifications/roots/list_changed", None)])
        replies = await client.batch_reply()
    assert {reply["id"] for reply in replies} == {"b1", "b2"}
    batched = seen[before:]
    assert sorted(call.method for call in batched) == ["notifications/roots/list_changed", "ping", "tools/call"]
    assert all(call.batch for call in batched)
    assert sorted((call.request_id is None, call.notification) for call in batched) == [
        (False, False), (False, False), (True, True)]


async def test_a_task_augmented_call_goes_through_the_chain_and_its_result_is_the_task() -> None:
    server = _server()
    seen: list[Call] = []
    results: list[Any] = []
    server.add_middleware(_recording(seen, results))
    async with Client(server) as client:
        task = await create(client, "job", {"n": 21})
        done = await client.request("tasks/result", {"taskId": task["taskId"]})
    started = next(i for i, call in enumerate(seen) if call.method == "tools/call")
    assert seen[started].task
    assert seen[started].name == "job"
    assert results[started]["task"]["taskId"] == task["taskId"]  # the CreateTaskResult, not the tool's result
    assert "content" not in results[started]
    assert [call.method for call in seen[started + 1:]] == ["tasks/result"]  # tasks/* go through it too
    assert not seen[-1].task
    assert done["structuredContent"] == {"result": 42}


async def test_a_stateless_era_task_is_the_result_the_chain_sees() -> None:
    server = _server()
    seen: list[Call] = []
    results: list[Any] = []
    server.add_middleware(_recording(seen, results))
    caps: JSONObject = {"extensions": {TASKS_EXTENSION: {}}}
    async with Client(server, protocol_version=STATELESS, capabilities=caps) as client:
        created = await client.call_tool("job", {"n": 1})
        state = await client.request("tasks/get", {"taskId": created["taskId"]})
    assert created["resultType"] == "task"
    assert [call.method for call in seen] == ["tools/call", "tasks/get"]
    assert not seen[0].task  # the server decided: the call did not ask
    assert results[0] == created
    assert results[1]["taskId"] == state["taskId"]


async def test_a_stateless_input_round_and_its_retry_each_go_through_the_chain() -> None:
    server = _server()
    seen: list[Call] = []
    results: list[Any] = []
    server.add_middleware(_recording(seen, results))

    async def elicitation(params: JSONObject) -> JSONObject:
        return {"action": "accept", "content": {"name": "Bo"}}

    async with Client(server, protocol_version=STATELESS, elicitation=elicitation) as client:
        result = await client.call_tool("ask")
    assert result["content"][0]["text"] == "accept Bo"
    assert [(call.method, call.retry) for call in seen] == [("tools/call", False), ("tools/call", True)]
    assert [r["resultType"] for r in results] == ["input_required", "complete"]
    assert "inputRequests" in results[0]
    assert "inputResponses" in seen[1].params
    assert seen[1].request_id != seen[0].request_id  # a request of its own


async def test_in_the_handshake_era_a_call_that_asks_is_one_call() -> None:
    server = _server()
    seen: list[Call] = []
    results: list[Any] = []
    server.add_middleware(_recording(seen, results))

    async def elicitation(params: JSONObject) -> JSONObject:
        return {"action": "accept", "content": {"name": "Bo"}}

    async with Client(server, elicitation=elicitation) as client:
        result = await client.call_tool("ask")
    assert result["content"][0]["text"] == "accept Bo"
    calls = [(call.method, call.retry) for call in seen if not call.notification]
    assert calls == [("initialize", False), ("tools/call", False)]
    assert results[-1]["content"] == result["content"]


def test_only_a_stateless_request_that_can_ask_is_a_retry() -> None:
    server = MCPServer("bare")
    responses: JSONObject = {"inputResponses": {"k": {}}}
    assert Call(server, "tools/call", responses, request_id=1, stateless=True).retry
    assert Call(server, "resources/read", {"requestState": "x"}, request_id=1, stateless=True).retry
    assert not Call(server, "tools/call", responses, request_id=1).retry  # the handshake era has no retries
    assert not Call(server, "tasks/update", {"taskId": "t", **responses}, request_id=1, stateless=True).retry
    assert not Call(server, "tools/call", {"name": "x"}, request_id=1, stateless=True).retry


# == notifications ================================================================================================


@ERAS
async def test_notifications_go_through_the_chain(version: str) -> None:
    server = _server()
    seen: list[Call] = []
    results: list[Any] = []
    server.add_middleware(_recording(seen, results))
    async with Client(server, protocol_version=version, roots=_no_roots, principal=ALICE) as client:
        note: JSONObject = {}
        await client.notify("notifications/roots/list_changed", client.with_meta(note) if client.stateless else note)
    notes = [(call, result) for call, result in zip(seen, results, strict=True) if call.notification]
    expected = ["notifications/roots/list_changed"] if version == STATELESS else [
        "notifications/initialized", "notifications/roots/list_changed"]
    assert [call.method for call, _ in notes] == expected
    for call, result in notes:
        assert result is None  # call_next of a notification returns None
        assert call.request_id is None
        assert call.ctx is None
        assert call.principal == ALICE
        assert call.stateless is (version == STATELESS)
        assert not call.retry


async def test_a_middleware_that_fails_on_a_notification_drops_only_that_notification() -> None:
    server = _server()
    changed: list[str] = []

    @server.add_middleware
    async def picky(call: Call, call_next: CallNext) -> JSONObject | None:
        if call.method == "notifications/roots/list_changed":
            raise MCPError(-32001, "not now")
        if call.method == "notifications/message":
            raise RuntimeError("broken middleware")
        if call.method == "notifications/initialized":
            changed.append("initialized")
        return await call_next()

    async with Client(server, roots=_no_roots) as client:
        await client.notify("notifications/roots/list_changed")
        await client.notify("notifications/message", {"level": "info", "data": "x"})
        assert await client.ping() == {}
        assert (await client.call_tool("echo", {"text": "still"}))["content"][0]["text"] == "still"
    assert changed == ["initialized"]
    assert client.session.state.ready  # notifications/initialized went through


async def test_a_middleware_that_does_not_hand_a_cancellation_on_drops_it() -> None:
    server = _server()
    started, release = asyncio.Event(), asyncio.Event()

    @server.tool()
    async def held() -> str:
        started.set()
        await release.wait()
        return "finished"

    @server.add_middleware
    async def keep_going(call: Call, call_next: CallNext) -> JSONObject | None:
        if call.method == "notifications/cancelled":
            return None
        return await call_next()

    async with Client(server) as client:
        running = asyncio.ensure_future(client.request_raw("tools/call", {"name": "held", "arguments": {}}, id="h"))
        await started.wait()
        await client.notify("notifications/cancelled", {"requestId": "h"})
        release.set()
        response = await running
    assert response["result"]["content"][0]["text"] == "finished"


# == a broken middleware =====================================================================================


@ERAS
async def test_a_result_that_is_not_an_object_is_an_internal_error_and_serving_goes_on(version: str) -> None:
    server = _server()

    @server.add_middleware
    async def broken(call: Call, call_next: CallNext) -> Any:
        if call.name == "echo" and call.arguments.get("text") == "break":
            await call_next()
            return ["not", "an", "object"]
        return await call_next()

    async with Client(server, protocol_version=version) as client:
        broke = await _call(client, "echo", {"text": "break"})
        fine = await client.call_tool("echo", {"text": "fine"})
    masked_error(broke["error"], "Internal error handling tools/call")
    assert fine["content"][0]["text"] == "fine"


async def test_an_exception_in_a_middleware_is_an_internal_error() -> None:
    server = _server()

    @server.add_middleware
    async def broken(call: Call, call_next: CallNext) -> JSONObject | None:
        if call.method == "tools/call":
            raise RuntimeError("bug")
        return await call_next()

    async with Client(server) as client:
        response = await _call(client, "echo", {"text": "x"})
        assert await client.ping() == {}
    masked_error(response["error"], "Internal error handling tools/call")


def test_a_hook_under_fastmcps_name_is_refused_naming_the_hook_it_means() -> None:
    with pytest.raises(DefinitionError) as refused:
        class Ported(Middleware):
            async def on_call_tool(self, call: Call, call_next: CallNext) -> JSONObject | None:
                return await call_next()

    line = str(refused.value)
    assert re.fullmatch(r".*test_middleware\.py:\d+: middleware .*Ported: on_call_tool is FastMCP's name, and would "
                        r"never run: the hook of tools/call is on_tools_call\(self, call, call_next\)", line), line
    with pytest.raises(DefinitionError, match="the hook of resources/templates/list is on_resources_templates_list"):
        class Templates(Middleware):
            async def on_list_resource_templates(self, call: Call, call_next: CallNext) -> JSONObject | None:
                return await call_next()
