"""``wiremcp.dispatcher``: the protocol as a client sees it, in process, through
``wiremcp.transports.memory.Client`` (real JSON on the way), in both eras.

- The handshake era (``initialize``; 2024-11-05 to 2025-11-25): the lifecycle, capabilities, pagination,
  logging, cancellation, requests to the client, list_changed and subscriptions, JSON-RPC on the wire,
  completion. (Progress is ``test_context.py``'s.)
- The stateless era (2026-07-28): the client speaking 2026-07-28 (per-request ``_meta``, input_required
  retried automatically), plus ``request_raw`` for the wire. Multi round-trip requests (both the
  ``ctx.elicit`` replay and the low-level ``InputRequired``), the capability checks on input requests,
  the shape of every result, and ``subscriptions/listen`` (the tasks extension's ``notifications/tasks`` too).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.failures import masked_error, reference_in
from tests.support.tasks import (
    ALICE,
    BOB,
    EXT,
    MISSING_EXTENSION,
    YES,
    Gate,
    bare,
    connect,
    error,
    get,
    start,
    task_server,
    update,
)
from wiremcp import (
    ClientError,
    Completion,
    Context,
    InputRequired,
    MCPServer,
    MissingClientCapability,
    jsonrpc,
)
from wiremcp.context import ElicitResult
from wiremcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    MCPError,
)
from wiremcp.prompts import Prompt
from wiremcp.protocol import (
    HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    LOG_LEVELS,
    META_SERVER_INFO,
    META_SUBSCRIPTION,
)
from wiremcp.resources import Resource
from wiremcp.session import ServerSession
from wiremcp.state import SessionState
from wiremcp.tools import Tool
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

# == the handshake era (initialize; 2024-11-05 to 2025-11-25) ===========================================


INIT_PARAMS: JSONObject = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                           "clientInfo": {"name": "raw", "version": "1"}}


class WireClient(Client):
    """The in-memory client, also recording every frame the server writes to it."""

    def __init__(self, server: MCPServer, **kwargs: Any) -> None:
        super().__init__(server, **kwargs)
        self.frames: list[Any] = []
        self._frame_added = asyncio.Event()

    async def __aenter__(self) -> WireClient:
        await super().__aenter__()
        return self

    async def _receive(self, message: JSONObject | list[JSONObject]) -> None:
        self.frames.append(jsonrpc.loads(jsonrpc.dumps(message)))
        self._frame_added.set()
        await super()._receive(message)

    async def wait_frame(self, predicate: Callable[[Any], bool]) -> Any:
        """The first frame ``predicate`` holds for, waiting for frames to come (bounded)."""
        async with asyncio.timeout(BOUND):
            while True:
                for frame in self.frames:
                    if predicate(frame):
                        return frame
                self._frame_added.clear()
                await self._frame_added.wait()

    def server_requests(self) -> list[JSONObject]:
        """Requests the server sent to this client."""
        return [f for f in self.frames if isinstance(f, dict) and "method" in f and "id" in f]

    async def drain(self) -> None:
        """Wait until every request the server is running for this client has finished."""
        assert self._connection is not None
        if running := self._connection.running():
            _, pending = await asyncio.wait(running, timeout=BOUND)
            assert not pending, f"{len(pending)} requests still running after {BOUND}s"


def _noop() -> None:
    return None


def _full_server(**kwargs: Any) -> MCPServer:
    server = MCPServer("full", "2.0", title="Full", instructions="Use the tools.", **kwargs)

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.resource("test://static")
    def static() -> str:
        return "static"

    @server.resource("test://item/{id}")
    def item(id: str) -> str:
        return f"item {id}"

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello {name}"

    return server


# -- lifecycle ------------------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/basic/lifecycle#initialization")
async def test_initialize_result() -> None:
    async with Client(_full_server(website_url="https://example.com")) as client:
        result = client.initialize_result
    assert result == {
        "protocolVersion": LATEST_HANDSHAKE_VERSION,
        "capabilities": {"logging": {}, "tools": {"listChanged": True},
                         "resources": {"subscribe": True, "listChanged": True}, "prompts": {"listChanged": True}},
        "serverInfo": {"name": "full", "version": "2.0", "title": "Full", "websiteUrl": "https://example.com"},
        "instructions": "Use the tools.",
    }


@pytest.mark.spec("2025-11-25/basic/lifecycle#initialization")
@pytest.mark.parametrize("method", ["tools/list", "tools/call", "resources/list", "prompts/list",
                                    "logging/setLevel"])
async def test_requests_before_initialize_are_rejected(method: str) -> None:
    async with Client(_full_server(), initialize=False) as client:
        response = await client.request_raw(method, {"name": "echo", "level": "info"})
        assert "result" not in response
        assert response["error"]["code"] == INVALID_REQUEST
        assert "initialize" in response["error"]["message"]
        # and after the handshake the same request works
        await client.request("initialize", INIT_PARAMS)
        await client.notify("notifications/initialized")
        assert "result" in await client.request_raw(method, {"name": "echo", "arguments": {"text": "x"},
                                                             "level": "info"})


@pytest.mark.spec("2025-11-25/basic/utilities/ping#behavior-requirements")
async def test_ping_works_before_initialize() -> None:
    async with Client(_full_server(), initialize=False) as client:
        assert await client.ping() == {}
        assert not client.session.state.initialized


@pytest.mark.spec("2025-11-25/basic/lifecycle#initialization")
async def test_initialized_notification_before_initialize_is_ignored() -> None:
    async with Client(_full_server(), initialize=False) as client:
        await client.notify("notifications/initialized")
        assert not client.session.state.ready
        await client.request("initialize", INIT_PARAMS)
        assert client.session.state.initialized
        assert not client.session.state.ready
        await client.notify("notifications/initialized")
        assert client.session.state.ready


async def test_initialize_twice_is_an_error() -> None:
    async with Client(_full_server()) as client:
        response = await client.request_raw("initialize", INIT_PARAMS)
    assert response["error"]["code"] == INVALID_REQUEST


@pytest.mark.parametrize("params", [{"capabilities": [], "clientInfo": {}}, {"clientInfo": "me"}])
async def test_initialize_with_malformed_params(params: JSONObject) -> None:
    async with Client(_full_server(), initialize=False) as client:
        response = await client.request_raw("initialize", {"protocolVersion": LATEST_HANDSHAKE_VERSION, **params})
        assert response["error"]["code"] == INVALID_PARAMS
        assert not client.session.state.initialized


@pytest.mark.spec("2025-11-25/basic/lifecycle#version-negotiation")
@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
async def test_supported_versions_are_echoed(version: str) -> None:
    async with Client(_full_server(), protocol_version=version) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["protocolVersion"] == version
        assert client.session.state.protocol_version == version


@pytest.mark.spec("2025-11-25/basic/lifecycle#version-negotiation")
@pytest.mark.parametrize("requested", ["2024-01-01", "1.0.0", None, 20241105])
async def test_unsupported_version_is_answered_with_the_latest(requested: Any) -> None:
    async with Client(_full_server(), initialize=False) as client:
        response = await client.request_raw("initialize", {**INIT_PARAMS, "protocolVersion": requested})
    assert "error" not in response
    assert response["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.spec("2025-11-25/basic/index#error-responses")
@pytest.mark.parametrize("initialize", [False, True])
async def test_server_discover_is_answered_with_method_not_found(initialize: bool) -> None:
    async with Client(_full_server(), initialize=initialize) as client:
        response = await client.request_raw("server/discover", {})
    assert response["error"]["code"] == METHOD_NOT_FOUND
    assert response["id"] is not None


async def test_unknown_method_is_method_not_found() -> None:
    async with Client(_full_server()) as client:
        response = await client.request_raw("tools/explode")
    assert response["error"] == {"code": METHOD_NOT_FOUND, "message": "Method not found: tools/explode"}


# -- capabilities ---------------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/basic/lifecycle#capability-negotiation")
async def test_capabilities_only_for_what_is_registered() -> None:
    bare = MCPServer("bare")
    async with Client(bare) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["capabilities"] == {"logging": {}}

    tools_only = MCPServer("tools")
    tools_only.add_tool(Tool(_noop, name="noop"))
    async with Client(tools_only) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["capabilities"] == {"logging": {}, "tools": {"listChanged": True}}

    with_completions = _full_server()
    with_completions.completion(prompt="greet", argument="name")(lambda value, args: [])
    assert with_completions.capabilities()["completions"] == {}


@pytest.mark.spec("2025-11-25/basic/lifecycle#capability-negotiation")
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("prompts/list", {}),
        ("prompts/get", {"name": "x"}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "test://static"}),
        ("resources/subscribe", {"uri": "test://static"}),
        ("resources/unsubscribe", {"uri": "test://static"}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": ""}}),
    ],
)
async def test_method_behind_a_missing_capability_is_method_not_found(method: str, params: JSONObject) -> None:
    server = MCPServer("tools")
    server.add_tool(Tool(_noop, name="noop"))
    async with Client(server) as client:
        response = await client.request_raw(method, params)
    assert response["error"]["code"] == METHOD_NOT_FOUND


async def test_tools_methods_without_tools_are_method_not_found() -> None:
    server = MCPServer("prompts")
    server.add_prompt(Prompt(_noop, name="p"))
    async with Client(server) as client:
        for method in ("tools/list", "tools/call"):
            response = await client.request_raw(method, {"name": "x"})
            assert response["error"]["code"] == METHOD_NOT_FOUND


# -- tools/call and pagination --------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/server/tools#error-handling")
@pytest.mark.parametrize("params", [{"name": "nope"}, {"name": ""}, {}, {"name": 3}])
async def test_unknown_tool_is_invalid_params(params: JSONObject) -> None:
    async with Client(_full_server()) as client:
        response = await client.request_raw("tools/call", params)
    assert response["error"]["code"] == INVALID_PARAMS


@pytest.mark.spec("2025-11-25/server/utilities/pagination#error-handling")
@pytest.mark.parametrize("method", ["tools/list", "resources/list", "resources/templates/list", "prompts/list"])
@pytest.mark.parametrize("cursor", ["not-a-cursor", 12, ""])
async def test_invalid_cursor_is_invalid_params(method: str, cursor: Any) -> None:
    async with Client(_full_server()) as client:
        response = await client.request_raw(method, {"cursor": cursor})
    assert response["error"]["code"] == INVALID_PARAMS


@pytest.mark.spec("2025-11-25/server/utilities/pagination#pagination-flow")
@pytest.mark.parametrize(
    ("method", "key", "expected"),
    [
        ("tools/list", "tools", ["t0", "t1", "t2", "t3", "t4"]),
        ("prompts/list", "prompts", ["p0", "p1", "p2", "p3", "p4"]),
        ("resources/list", "resources", ["r://0", "r://1", "r://2", "r://3", "r://4"]),
        ("resources/templates/list", "resourceTemplates", ["t://0/{v}", "t://1/{v}", "t://2/{v}"]),
    ],
)
async def test_pagination_across_pages(method: str, key: str, expected: list[str]) -> None:
    server = MCPServer("paged", page_size=2)
    for i in range(5):
        server.add_tool(Tool(_noop, name=f"t{i}"))
        server.add_prompt(Prompt(_noop, name=f"p{i}"))
        server.resources.add(Resource(f"r://{i}", _noop, name=f"r{i}"))
    for i in range(3):
        server.resources.add(Resource(f"t://{i}/{{v}}", lambda v: v, name=f"template{i}"))

    pages: list[list[str]] = []
    async with Client(server) as client:
        params: JSONObject = {}
        while True:
            result = await client.request(method, params)
            pages.append([item.get("name") if key in ("tools", "prompts") else
                          item.get("uri", item.get("uriTemplate")) for item in result[key]])
            if "nextCursor" not in result:
                break
            assert isinstance(result["nextCursor"], str)
            params = {"cursor": result["nextCursor"]}
    assert [name for page in pages for name in page] == expected
    assert [len(page) for page in pages] == [2] * (len(expected) // 2) + ([1] if len(expected) % 2 else [])


# -- logging --------------------------------------------------------------------------------------------


def _logging_server() -> MCPServer:
    server = MCPServer("log")

    @server.tool()
    async def chatty(ctx: Context) -> str:
        for level in LOG_LEVELS:
            await ctx.log(level, {"at": level}, logger="chatty")
        return "done"

    @server.tool()
    async def bad_level(ctx: Context) -> str:
        await ctx.log("verbose", "x")
        return "unreachable"

    return server


@pytest.mark.spec("2025-11-25/server/utilities/logging#setting-log-level")
async def test_set_level_filters_log_messages() -> None:
    async with Client(_logging_server()) as client:
        await client.call_tool("chatty")
        unfiltered = [n["params"]["level"] for n in client.notifications if n["method"] == "notifications/message"]
        assert unfiltered == list(LOG_LEVELS)

        client.notifications.clear()
        assert await client.set_logging_level("error") == {}
        await client.call_tool("chatty")
        messages = [n for n in client.notifications if n["method"] == "notifications/message"]
    assert [m["params"]["level"] for m in messages] == ["error", "critical", "alert", "emergency"]
    assert messages[0]["params"] == {"level": "error", "data": {"at": "error"}, "logger": "chatty"}


@pytest.mark.spec("2025-11-25/server/utilities/logging#error-handling")
@pytest.mark.parametrize("level", ["verbose", "WARNING", 3, None])
async def test_invalid_log_level_is_invalid_params(level: Any) -> None:
    async with Client(_logging_server()) as client:
        response = await client.request_raw("logging/setLevel", {"level": level})
        assert response["error"]["code"] == INVALID_PARAMS
        assert client.session.state.log_level is None


async def test_unknown_level_in_a_handler_is_a_tool_error_whose_text_only_error_details_shows() -> None:
    server = _logging_server()
    async with Client(server) as client:
        masked = await client.call_tool("bad_level")
        server.error_details = True
        shown = await client.call_tool("bad_level")
    assert masked["isError"] is shown["isError"] is True
    reference_in(masked["content"][0]["text"], "Error executing tool bad_level")
    reference_in(shown["content"][0]["text"], "Error executing tool bad_level: ValueError: unknown log level 'verbose'")


# -- cancellation ---------------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/basic/utilities/cancellation#behavior-requirements")
async def test_cancelled_request_stops_and_gets_no_response() -> None:
    server = MCPServer("cancel")
    started = asyncio.Event()
    stopped = asyncio.Event()

    @server.tool()
    async def wait_forever() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        return "never"

    async with WireClient(server) as client:
        call = asyncio.ensure_future(client.request_raw("tools/call", {"name": "wait_forever"}, id="c1"))
        await started.wait()
        assert client.session.inflight == 1
        await client.notify("notifications/cancelled", {"requestId": "c1", "reason": "user pressed stop"})
        await stopped.wait()
        await client.drain()
        assert client.session.inflight == 0
        assert not call.done()
        assert [f for f in client.frames if isinstance(f, dict) and f.get("id") == "c1"] == []
        # the session still works, and the id may be used again
        assert await client.request_raw("ping", id="c1") == {"jsonrpc": "2.0", "id": "c1", "result": {}}
        call.cancel()


@pytest.mark.spec("2025-11-25/basic/utilities/cancellation#behavior-requirements")
async def test_cancelling_unknown_or_finished_requests_is_ignored() -> None:
    async with WireClient(_full_server()) as client:
        await client.request_raw("tools/call", {"name": "echo", "arguments": {"text": "a"}}, id=41)
        before = len(client.frames)
        await client.notify("notifications/cancelled", {"requestId": 41})
        await client.notify("notifications/cancelled", {"requestId": "never-sent"})
        await client.notify("notifications/cancelled", {})
        assert len(client.frames) == before
        assert await client.ping() == {}


@pytest.mark.spec("2025-11-25/basic/utilities/cancellation#behavior-requirements")
async def test_initialize_cannot_be_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    server = _full_server()
    dispatcher = server.runtime.dispatcher
    original = dispatcher._handlers["initialize"]
    entered = asyncio.Event()
    release = asyncio.Event()

    async def slow_initialize(params: JSONObject, ctx: Context) -> JSONObject:
        entered.set()
        await release.wait()
        return await original(params, ctx)

    monkeypatch.setitem(dispatcher._handlers, "initialize", slow_initialize)
    async with Client(server, initialize=False) as client:
        init = asyncio.ensure_future(client.request_raw("initialize", INIT_PARAMS, id="init"))
        await entered.wait()
        await client.notify("notifications/cancelled", {"requestId": "init", "reason": "changed my mind"})
        release.set()
        response = await init
    assert response["result"]["protocolVersion"] == LATEST_HANDSHAKE_VERSION


# -- requests to the client -----------------------------------------------------------------------------


class Person(BaseModel):
    name: str
    age: int


def _asking_server() -> MCPServer:
    server = MCPServer("asking")

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Who are you?", Person)
        return f"{answer.action} {answer.data!r}"

    @server.tool()
    async def ask_url(ctx: Context) -> str:
        answer = await ctx.elicit_url("Sign in", "https://example.com/auth", "el-1")
        return answer.action

    @server.tool()
    async def think(ctx: Context) -> str:
        reply = await ctx.sample("Say hi", max_tokens=20, system_prompt="Be brief")
        return str(reply["content"]["text"])

    @server.tool()
    async def think_with_tools(ctx: Context) -> str:
        reply = await ctx.sample("Use a tool", tools=[{"name": "t", "inputSchema": {"type": "object"}}])
        return str(reply["content"]["text"])

    @server.tool()
    async def roots(ctx: Context) -> list[str]:
        try:
            return [r["uri"] for r in await ctx.list_roots()]
        except MissingClientCapability as exc:
            return [f"missing {exc.capability}"]

    @server.tool()
    async def ask_quickly(ctx: Context) -> str:
        answer = await ctx.elicit("Quick!", {"type": "object", "properties": {}}, timeout=0.01)
        return answer.action

    @server.tool()
    async def careful(ctx: Context) -> str:
        try:
            await ctx.sample("hi")
        except ClientError as exc:
            return f"client said {exc.code}: {exc.message}"
        return "sampled"

    return server


@pytest.mark.spec("2025-11-25/client/elicitation#capabilities")
@pytest.mark.parametrize(
    ("tool", "capabilities", "missing"),
    [
        ("ask", {}, "'elicitation'"),
        ("ask", {"elicitation": {"url": {}}}, "'elicitation.form'"),
        ("ask_url", {}, "'elicitation.url'"),
        ("ask_url", {"elicitation": {}}, "'elicitation.url'"),
        ("ask_url", {"elicitation": {"form": {}}}, "'elicitation.url'"),
        ("think", {}, "'sampling'"),
        ("think", {"roots": {}}, "'sampling'"),
        ("think_with_tools", {"sampling": {}}, "'sampling.tools'"),
    ],
)
async def test_missing_client_capability_is_32021_naming_it_and_nothing_is_sent(
        tool: str, capabilities: JSONObject, missing: str) -> None:
    """The handshake era answers as the stateless era must: -32021 with ``data.requiredCapabilities``."""
    async with WireClient(_asking_server(), capabilities=capabilities) as client:
        answer = await client.request_raw("tools/call", {"name": tool, "arguments": {}})
        assert client.server_requests() == []
    error = answer["error"]
    assert error["code"] == MISSING_CLIENT_CAPABILITY
    name, _, sub = missing.strip("'").partition(".")
    assert error["data"] == {"requiredCapabilities": {name: {sub: {}} if sub else {}}}
    assert missing.strip("'") in error["message"]


@pytest.mark.spec("2025-11-25/client/roots#capabilities")
async def test_list_roots_raises_when_the_client_has_no_roots() -> None:
    async with WireClient(_asking_server()) as client:
        result = await client.call_tool("roots")
        assert client.server_requests() == []
    assert result["structuredContent"] == {"result": ["missing roots"]}


@pytest.mark.spec("2025-11-25/client/elicitation#form-mode-elicitation-requests")
async def test_elicitation_round_trip() -> None:
    seen: list[JSONObject] = []

    async def elicitation(params: JSONObject) -> JSONObject:
        seen.append(params)
        return {"action": "accept", "content": {"name": "Ann", "age": 41}}

    async with Client(_asking_server(), elicitation=elicitation) as client:
        result = await client.call_tool("ask")
    assert result["content"][0]["text"] == "accept Person(name='Ann', age=41)"
    assert seen == [{"mode": "form", "message": "Who are you?", "requestedSchema": {
        "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"]}}]


async def test_form_elicitation_to_a_2025_06_18_client_has_no_mode() -> None:
    seen: list[JSONObject] = []

    async def elicitation(params: JSONObject) -> JSONObject:
        seen.append(params)
        return {"action": "decline"}

    async with Client(_asking_server(), elicitation=elicitation, protocol_version="2025-06-18") as client:
        result = await client.call_tool("ask")
    assert result["content"][0]["text"] == "decline None"
    assert "mode" not in seen[0]


@pytest.mark.spec("2025-11-25/client/sampling#creating-messages")
async def test_sampling_and_roots_round_trip() -> None:
    seen: list[JSONObject] = []

    async def sampling(params: JSONObject) -> JSONObject:
        seen.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "hi!"}, "model": "test-model"}

    async def roots(params: JSONObject) -> JSONObject:
        return {"roots": [{"uri": "file:///work", "name": "work"}, "junk"]}

    async with Client(_asking_server(), sampling=sampling, roots=roots) as client:
        sampled = await client.call_tool("think")
        listed = await client.call_tool("roots")
    assert sampled["content"] == [{"type": "text", "text": "hi!"}]
    assert seen == [{"messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
                     "maxTokens": 20, "systemPrompt": "Be brief"}]
    assert listed["structuredContent"] == {"result": ["file:///work"]}


async def test_client_error_reply_reaches_the_handler() -> None:
    async def sampling(params: JSONObject) -> JSONObject:
        raise MCPError(-1, "User rejected sampling request")

    async with Client(_asking_server(), sampling=sampling) as client:
        result = await client.call_tool("careful")
    assert result["content"] == [{"type": "text", "text": "client said -1: User rejected sampling request"}]


async def test_uncaught_client_error_is_a_tool_error_result() -> None:
    async def sampling(params: JSONObject) -> JSONObject:
        raise MCPError(METHOD_NOT_FOUND, "Method not found: sampling/createMessage")

    async with Client(_asking_server(), sampling=sampling) as client:
        response = await client.request_raw("tools/call", {"name": "think"})
    assert response["result"]["isError"] is True


@pytest.mark.spec("2025-11-25/basic/utilities/cancellation#cancellation-flow")
async def test_cancelling_a_call_cancels_its_pending_client_request() -> None:
    asked = asyncio.Event()

    async def elicitation(params: JSONObject) -> JSONObject:
        asked.set()
        await asyncio.Event().wait()
        return {"action": "cancel"}

    async with WireClient(_asking_server(), elicitation=elicitation) as client:
        call = asyncio.ensure_future(client.request_raw("tools/call", {"name": "ask"}, id="outer"))
        await asked.wait()
        (request,) = client.server_requests()
        await client.notify("notifications/cancelled", {"requestId": "outer"})
        await client.drain()
        cancelled = [n["params"]["requestId"] for n in client.notifications if n["method"] == "notifications/cancelled"]
        assert cancelled == [request["id"]]
        assert not call.done()
        assert [f for f in client.frames if isinstance(f, dict) and f.get("id") == "outer"] == []
        call.cancel()


async def test_client_timeout_is_an_error_result_and_the_request_is_cancelled() -> None:
    never = asyncio.Event()

    async def elicitation(params: JSONObject) -> JSONObject:
        await never.wait()
        return {"action": "cancel"}

    async with WireClient(_asking_server(), elicitation=elicitation) as client:
        result = await client.call_tool("ask_quickly")
        (request,) = client.server_requests()
        cancelled = [n for n in client.notifications if n["method"] == "notifications/cancelled"]
        # a late answer to the abandoned request is dropped without a reply
        before = len(client.frames)
        await client.send_raw(jsonrpc.result(request["id"], {"action": "accept", "content": {}}))
        assert len(client.frames) == before
        assert await client.ping() == {}
    assert request["method"] == "elicitation/create"
    assert result["isError"] is True
    assert "did not answer in time" in result["content"][0]["text"]
    assert [c["params"]["requestId"] for c in cancelled] == [request["id"]]


# -- list_changed and subscriptions ---------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/server/tools#list-changed-notification")
async def test_list_changed_is_posted_when_definitions_change_at_runtime() -> None:
    server = _full_server()
    async with Client(server) as client:
        server.add_tool(Tool(_noop, name="added"))
        server.remove_tool("added")
        server.add_prompt(Prompt(_noop, name="added"))
        server.remove_prompt("added")
        server.resources.add(Resource("test://added", _noop))
        server.remove_resource("test://added")
        tools = await client.wait_for_notification("notifications/tools/list_changed", 2)
        prompts = await client.wait_for_notification("notifications/prompts/list_changed", 2)
        resources = await client.wait_for_notification("notifications/resources/list_changed", 2)
    assert tools[0] == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert len(tools) == len(prompts) == len(resources) == 2


@pytest.mark.spec("2025-11-25/server/tools#list-changed-notification")
def test_list_changed_only_to_ready_sessions_that_negotiated_the_capability() -> None:
    server = MCPServer("s")
    server.add_tool(Tool(_noop, name="first"))
    ready: list[JSONObject] = []
    not_ready: list[JSONObject] = []
    no_prompts: list[JSONObject] = []
    sessions = [
        ServerSession(server, SessionState(initialized=True, ready=True, server_capabilities=["prompts", "tools"]),
                      post=ready.append),
        ServerSession(server, SessionState(initialized=True, ready=False, server_capabilities=["tools"]),
                      post=not_ready.append),
        ServerSession(server, SessionState(initialized=True, ready=True, server_capabilities=["tools"]),
                      post=no_prompts.append),
    ]
    server.add_tool(Tool(_noop, name="second"))
    server.add_prompt(Prompt(_noop, name="p"))
    assert [m["method"] for m in ready] == ["notifications/tools/list_changed",
                                            "notifications/prompts/list_changed"]
    assert not_ready == []
    assert [m["method"] for m in no_prompts] == ["notifications/tools/list_changed"]
    for session in sessions:
        session.close()


@pytest.mark.spec("2025-11-25/server/resources#subscriptions")
async def test_resource_updated_only_reaches_subscribed_sessions() -> None:
    server = _full_server()
    updated = "notifications/resources/updated"
    async with Client(server) as a, Client(server) as b:
        assert await a.subscribe("test://static") == {}
        assert await b.subscribe("test://item/1") == {}
        server.resource_updated("test://static")
        server.resource_updated("test://item/1")
        a_got = await a.wait_for_notification(updated)
        b_got = await b.wait_for_notification(updated)
        assert [n["params"] for n in a_got] == [{"uri": "test://static"}]
        # b's only delivery was queued after any for the first URI would have been
        assert [n["params"] for n in b_got] == [{"uri": "test://item/1"}]

        assert await a.unsubscribe("test://static") == {}
        await a.subscribe("test://item/1")
        server.resource_updated("test://static")
        server.resource_updated("test://item/1")
        a_got = await a.wait_for_notification(updated, 2)
        assert [n["params"]["uri"] for n in a_got] == ["test://static", "test://item/1"]


@pytest.mark.parametrize("method", ["resources/subscribe", "resources/unsubscribe"])
async def test_subscribe_needs_a_uri(method: str) -> None:
    async with Client(_full_server()) as client:
        response = await client.request_raw(method, {})
    assert response["error"]["code"] == INVALID_PARAMS


# -- JSON-RPC on the wire -------------------------------------------------------------------------------


def _batch(init: bool = False) -> list[Any]:
    return [
        {"jsonrpc": "2.0", "id": "b1", "method": "ping"},
        {"jsonrpc": "2.0", "id": "b2", "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
        *([{"jsonrpc": "2.0", "id": "b3", "method": "initialize", "params": INIT_PARAMS}] if init else []),
        17,
    ]


@pytest.mark.spec("2025-03-26/basic/index#batching")
async def test_batches_are_accepted_from_2025_03_26_clients() -> None:
    async with WireClient(_full_server(), protocol_version="2025-03-26") as client:
        await client.send_raw(_batch(init=True))
        reply = await client.wait_frame(lambda f: isinstance(f, list))
    by_id = {item["id"]: item for item in reply}
    assert set(by_id) == {"b1", "b2", "b3", None}
    assert by_id["b1"]["result"] == {}
    assert by_id["b2"]["result"]["content"] == [{"type": "text", "text": "x"}]
    assert by_id["b3"]["error"]["code"] == INVALID_REQUEST
    assert by_id[None]["error"]["code"] == INVALID_REQUEST


@pytest.mark.spec("2025-03-26/basic/index#batching")
async def test_batch_of_responses_answers_pending_client_requests() -> None:
    asked = asyncio.Event()

    async def elicitation(params: JSONObject) -> JSONObject:
        asked.set()
        await asyncio.Event().wait()  # never answers itself: the answer comes in a batch below
        return {"action": "cancel"}

    async with WireClient(_asking_server(), elicitation=elicitation, protocol_version="2025-03-26") as client:
        call = asyncio.ensure_future(client.call_tool("ask"))
        await asked.wait()
        (request,) = client.server_requests()
        before = len(client.frames)
        await client.send_raw([jsonrpc.result(request["id"], {"action": "accept", "content": {"name": "Bo", "age": 7}}),
                               {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}])
        result = await call
        assert not [f for f in client.frames[before:] if isinstance(f, list)]
    assert result["content"][0]["text"] == "accept Person(name='Bo', age=7)"


@pytest.mark.spec("2025-03-26/basic/index#batching")
async def test_batch_of_notifications_gets_no_reply() -> None:
    async with WireClient(_full_server(), protocol_version="2025-03-26") as client:
        before = len(client.frames)
        await client.send_raw([{"jsonrpc": "2.0", "method": "notifications/x"},
                               {"jsonrpc": "2.0", "method": "notifications/y"}])
        await client.drain()
        assert len(client.frames) == before


@pytest.mark.spec("2025-11-25/basic/transports#sending-messages-to-the-server")
@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2024-11-05"])
async def test_batches_are_rejected_from_other_versions(version: str) -> None:
    async with WireClient(_full_server(), protocol_version=version) as client:
        before = len(client.frames)
        await client.send_raw(_batch())
        await client.drain()
        new = client.frames[before:]
    assert len(new) == 1
    assert isinstance(new[0], dict)
    assert new[0]["id"] is None
    assert new[0]["error"]["code"] == INVALID_REQUEST


async def test_batch_before_initialize_is_rejected() -> None:
    async with WireClient(_full_server(), initialize=False) as client:
        await client.send_raw([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert client.frames[0]["error"]["code"] == INVALID_REQUEST


@pytest.mark.spec("2025-11-25/basic/index#error-responses")
@pytest.mark.parametrize("frame", [b"{oops", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', b"\x00"])
async def test_parse_error_has_a_null_id(frame: bytes) -> None:
    async with WireClient(_full_server()) as client:
        before = len(client.frames)
        await client.send_raw(frame)
        new = client.frames[before:]
    assert len(new) == 1
    assert new[0]["jsonrpc"] == "2.0"
    assert new[0]["id"] is None
    assert new[0]["error"]["code"] == PARSE_ERROR


@pytest.mark.spec("2025-11-25/basic/index#requests")
@pytest.mark.parametrize(
    ("message", "reply_id"),
    [
        ({"jsonrpc": "2.0", "id": 5}, 5),
        ({"jsonrpc": "1.0", "id": 6, "method": "ping"}, 6),
        ({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": "x"}, 7),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        (b"\"just a string\"", None),
        (42, None),
    ],
)
async def test_invalid_request(message: Any, reply_id: Any) -> None:
    async with WireClient(_full_server()) as client:
        before = len(client.frames)
        await client.send_raw(message)
        new = client.frames[before:]
    assert len(new) == 1
    assert new[0]["id"] == reply_id
    assert new[0]["error"]["code"] == INVALID_REQUEST


@pytest.mark.spec("2025-11-25/basic/index#responses")
async def test_responses_to_unknown_ids_are_ignored() -> None:
    async with WireClient(_full_server()) as client:
        before = len(client.frames)
        await client.send_raw({"jsonrpc": "2.0", "id": 999, "result": {}})
        await client.send_raw({"jsonrpc": "2.0", "id": "x", "error": {"code": -1, "message": "no"}})
        await client.send_raw({"jsonrpc": "2.0", "id": None, "result": {}})
        assert len(client.frames) == before
        assert await client.ping() == {}


@pytest.mark.spec("2025-11-25/basic/index#notifications")
async def test_notifications_are_never_answered() -> None:
    async with WireClient(_full_server()) as client:
        before = len(client.frames)
        for message in [
            {"jsonrpc": "2.0", "method": "tools/list"},
            {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "nope"}},
            {"jsonrpc": "2.0", "method": "notifications/unknown"},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            {"jsonrpc": "2.0", "method": "notifications/x", "params": [1, 2]},
            {"jsonrpc": "2.0", "method": "server/discover"},
        ]:
            await client.send_raw(message)
        await client.drain()
        assert client.frames[before:] == []
        assert await client.ping() == {}


@pytest.mark.spec("2025-11-25/basic/index#error-responses")
async def test_internal_error_leaks_no_details(monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    server = _full_server()

    async def broken(params: JSONObject, ctx: Context) -> JSONObject:
        raise RuntimeError("secret: password=hunter2")

    monkeypatch.setitem(server.runtime.dispatcher._handlers, "tools/list", broken)
    with caplog.at_level("ERROR", logger="wiremcp.failures"):
        async with Client(server) as client:
            response = await client.request_raw("tools/list", id="boom")
    reference = masked_error(response["error"], "Internal error handling tools/list")
    assert "hunter2" not in str(response)
    assert any(record.exc_info and reference in record.getMessage() for record in caplog.records)


async def test_slow_request_does_not_block_others() -> None:
    server = MCPServer("concurrent")
    started = asyncio.Event()
    release = asyncio.Event()

    @server.tool()
    async def slow() -> str:
        started.set()
        await release.wait()
        return "slow done"

    @server.tool()
    def fast() -> str:
        return "fast done"

    async with Client(server) as client:
        slow_call = asyncio.ensure_future(client.call_tool("slow"))
        await started.wait()
        assert (await client.call_tool("fast"))["content"][0]["text"] == "fast done"
        assert not slow_call.done()
        release.set()
        assert (await slow_call)["content"][0]["text"] == "slow done"


# -- completion -----------------------------------------------------------------------------------------


def _completing_server() -> MCPServer:
    server = _full_server()

    @server.completion(prompt="greet", argument="name")
    def names(value: str, arguments: dict[str, str]) -> list[str]:
        return [n for n in ("alice", "albert", "bob") if n.startswith(value)]

    @server.completion(resource_template="test://item/{id}", argument="id")
    async def ids(value: str, arguments: dict[str, str]) -> Completion:
        return Completion([f"{value}{i}" for i in range(150)])

    return server


@pytest.mark.spec("2025-11-25/server/utilities/completion#completion-results")
async def test_completion() -> None:
    async with Client(_completing_server()) as client:
        prompt = await client.complete({"type": "ref/prompt", "name": "greet"}, "name", "al")
        template = await client.complete({"type": "ref/resource", "uri": "test://item/{id}"}, "id", "x")
    assert prompt == {"completion": {"values": ["alice", "albert"]}}
    assert len(template["completion"]["values"]) == 100
    assert template["completion"]["total"] == 150
    assert template["completion"]["hasMore"] is True


@pytest.mark.spec("2025-11-25/server/utilities/completion#error-handling")
@pytest.mark.parametrize(
    ("ref", "argument"),
    [
        ({"type": "ref/prompt", "name": "nope"}, "name"),
        ({"type": "ref/prompt", "name": "greet"}, "nope"),
        ({"type": "ref/resource", "uri": "test://nope/{id}"}, "id"),
        ({"type": "ref/resource", "uri": "test://item/{id}"}, "nope"),
        ({"type": "ref/tool", "name": "echo"}, "text"),
    ],
)
async def test_completion_of_unknown_references_is_invalid_params(ref: JSONObject, argument: str) -> None:
    async with Client(_completing_server()) as client:
        response = await client.request_raw("completion/complete",
                                            {"ref": ref, "argument": {"name": argument, "value": ""}})
    assert response["error"]["code"] == INVALID_PARAMS


async def test_completion_without_a_completer_is_empty_and_a_failing_one_is_internal() -> None:
    server = _completing_server()

    @server.prompt()
    def other(topic: str) -> str:
        return topic

    @server.completion(prompt="other", argument="topic")
    def broken(value: str, arguments: dict[str, str]) -> list[str]:
        raise RuntimeError("secret")

    server.resources.add(Resource("test://plain/{v}", lambda v: v))
    async with Client(server) as client:
        empty = await client.complete({"type": "ref/resource", "uri": "test://plain/{v}"}, "v", "")
        failing = await client.request_raw("completion/complete", {"ref": {"type": "ref/prompt", "name": "other"},
                                                                   "argument": {"name": "topic", "value": ""}})
    assert empty == {"completion": {"values": [], "hasMore": False}}
    masked_error(failing["error"], "Completion of topic for other failed")


@pytest.mark.parametrize(("method", "key"), [("tools/list", "tools"), ("prompts/list", "prompts"),
                                             ("resources/list", "resources"),
                                             ("resources/templates/list", "resourceTemplates")])
async def test_a_list_served_from_its_cached_encoding_follows_every_change(method: str, key: str) -> None:
    """List pages are encoded once and reused; adding or removing an item re-encodes them."""
    server = MCPServer("cached", page_size=2)

    def names(result: JSONObject) -> list[str]:
        return [item.get("name") or item.get("uri") or item.get("uriTemplate") for item in result[key]]

    def add(i: int) -> None:
        if key == "tools":
            server.add_tool(Tool(_noop, name=f"x{i}"))
        elif key == "prompts":
            server.add_prompt(Prompt(_noop, name=f"x{i}"))
        elif key == "resources":
            server.resources.add(Resource(f"x://{i}", _noop, name=f"x{i}"))
        else:
            server.resources.add(Resource(f"x://{i}/{{v}}", lambda v: v, name=f"x{i}"))

    def remove(i: int) -> None:
        if key == "tools":
            server.remove_tool(f"x{i}")
        elif key == "prompts":
            server.remove_prompt(f"x{i}")
        else:
            server.remove_resource(f"x://{i}" if key == "resources" else f"x://{i}/{{v}}")

    add(0)
    async with Client(server) as client:
        first = await client.request(method, {})
        assert first == await client.request(method, {})  # the cached page is the same answer
        add(1)
        add(2)
        page_1 = await client.request(method, {})
        page_2 = await client.request(method, {"cursor": page_1["nextCursor"]})
        assert len(names(first)) == 1
        assert len(names(page_1)) + len(names(page_2)) == 3
        remove(0)
        remaining = await client.request(method, {})
        assert len(names(remaining)) == 2
        assert "nextCursor" not in remaining


# == the stateless era (2026-07-28): per-request _meta, no session ======================================


VERSION = "2026-07-28"
BOUND = 10.0
"""Failure bound for anything awaited here; nothing should come close."""

MRTR = "2026-07-28/basic/patterns/mrtr"
CACHING = "2026-07-28/server/utilities/caching"
SUBSCRIPTIONS = "2026-07-28/basic/patterns/subscriptions"

NAME_SCHEMA: JSONObject = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
SERVER_INFO = {"name": "stateless", "version": "3.1", "title": "Stateless"}

# Low-level input requests, by kind.
INPUTS: dict[str, JSONObject] = {
    "form": {"method": "elicitation/create",
             "params": {"mode": "form", "message": "Name?", "requestedSchema": NAME_SCHEMA}},
    "form-no-mode": {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": NAME_SCHEMA}},
    "url": {"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in",
                                                        "url": "https://example.com/auth", "elicitationId": "e-1"}},
    "sampling": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 10}},
    "sampling-tools": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 10,
        "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}},
    "sampling-tool-choice": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 10,
        "toolChoice": {"mode": "auto"}}},
    "roots": {"method": "roots/list"},
}
ANSWERS: dict[str, JSONObject] = {
    "elicitation/create": {"action": "accept", "content": {"name": "Ada"}},
    "sampling/createMessage": {"role": "assistant", "content": {"type": "text", "text": "Hello!"},
                               "model": "m", "stopReason": "endTurn"},
    "roots/list": {"roots": [{"uri": "file:///work", "name": "work"}]},
}


def _server(**kwargs: Any) -> tuple[MCPServer, list[str]]:
    """A server whose handlers ask the client for input in every way; ``runs`` records handler progress."""
    server = MCPServer("stateless", "3.1", title="Stateless", **kwargs)
    runs: list[str] = []

    @server.tool()
    async def interview(ctx: Context) -> str:
        runs.append("start")
        name = await ctx.elicit("Name?", NAME_SCHEMA)
        runs.append("elicited")
        reply = await ctx.sample(f"Greet {(name.content or {}).get('name')}", max_tokens=10)
        runs.append("sampled")
        roots = await ctx.list_roots()
        runs.append("listed")
        return f"{(name.content or {}).get('name')} | {reply['content']['text']} | {[r['uri'] for r in roots]}"

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer: ElicitResult[Any] = await ctx.elicit("Name?", NAME_SCHEMA)
        return f"{answer.action} {answer.content}"

    @server.tool()
    async def ask_url(ctx: Context) -> str:
        return (await ctx.elicit_url("Sign in", "https://example.com/auth", "e-1")).action

    @server.tool()
    async def think(ctx: Context) -> str:
        return str((await ctx.sample("Hi", max_tokens=10))["content"]["text"])

    @server.tool()
    async def think_with_tools(ctx: Context) -> str:
        reply = await ctx.sample("Hi", tools=[{"name": "t", "inputSchema": {"type": "object"}}])
        return str(reply["content"]["text"])

    @server.tool()
    async def roots(ctx: Context) -> list[str]:
        return [r["uri"] for r in await ctx.list_roots()]

    @server.tool()
    def low(kind: str, ctx: Context) -> str | InputRequired:
        """Low level: ask for one input of ``kind`` under key "k"."""
        if "k" in ctx.input_responses:
            return f"k={json.dumps(ctx.input_responses['k'], sort_keys=True)} state={ctx.request_state}"
        return InputRequired({"k": INPUTS[kind]}, request_state=f"asked-{kind}")

    @server.tool()
    def raised(ctx: Context) -> str:
        if "k" in ctx.input_responses:
            return f"tool got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        raise InputRequired({"k": INPUTS["form"]}, request_state="tool-state")

    @server.tool()
    def returned(ctx: Context) -> str | InputRequired:
        if "k" in ctx.input_responses:
            return f"tool got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        return InputRequired({"k": INPUTS["form"]}, request_state="tool-state")

    @server.tool()
    def two_step(ctx: Context) -> str | InputRequired:
        """Two rounds of low-level input, its progress carried in its own state."""
        if ctx.request_state is None:
            return InputRequired({"first": INPUTS["form"]}, request_state="step-1")
        if ctx.request_state == "step-1":
            return InputRequired({"second": INPUTS["roots"]}, request_state="step-2")
        return f"{ctx.request_state}: {sorted(ctx.input_responses)}"

    @server.prompt()
    def raised_prompt(ctx: Context) -> str:
        if "k" in ctx.input_responses:
            return f"prompt got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        raise InputRequired({"k": INPUTS["form"]}, request_state="prompt-state")

    @server.prompt()
    def returned_prompt(ctx: Context) -> str | InputRequired:
        if "k" in ctx.input_responses:
            return f"prompt got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        return InputRequired({"k": INPUTS["form"]}, request_state="prompt-state")

    @server.prompt()
    def topic(subject: str) -> str:
        return f"Talk about {subject}"

    @server.completion(prompt="topic", argument="subject")
    def complete_subject(value: str, arguments: dict[str, str]) -> list[str]:
        raise InputRequired({"k": INPUTS["form"]})

    @server.resource("test://raised", mime_type="text/plain")
    def raised_resource(ctx: Context) -> str:
        if "k" in ctx.input_responses:
            return f"resource got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        raise InputRequired({"k": INPUTS["form"]}, request_state="resource-state")

    @server.resource("test://returned", mime_type="text/plain")
    def returned_resource(ctx: Context) -> str | InputRequired:
        if "k" in ctx.input_responses:
            return f"resource got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        return InputRequired({"k": INPUTS["form"]}, request_state="resource-state")

    @server.resource("test://item/{x}")
    def item(x: str) -> str:
        return f"item {x}"

    @server.resource("test://cached", ttl_ms=5000, cache_scope="public")
    def cached() -> str:
        return "cached"

    return server, runs


class Recorder:
    """Client-side handlers for every input kind, counting their calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def elicitation(self, params: JSONObject) -> JSONObject:
        self.calls.append("elicitation/create")
        return ANSWERS["elicitation/create"]

    async def sampling(self, params: JSONObject) -> JSONObject:
        self.calls.append("sampling/createMessage")
        return ANSWERS["sampling/createMessage"]

    async def roots(self, params: JSONObject) -> JSONObject:
        self.calls.append("roots/list")
        return ANSWERS["roots/list"]

    def client(self, server: MCPServer, **kwargs: Any) -> Client:
        return Client(server, elicitation=self.elicitation, sampling=self.sampling, roots=self.roots, **kwargs)


class FrameClient(Client):
    """The in-memory client, also recording every message the server writes to it."""

    def __init__(self, server: MCPServer, **kwargs: Any) -> None:
        super().__init__(server, **kwargs)
        self.frames: list[JSONObject] = []

    async def _receive(self, message: JSONObject | list[JSONObject]) -> None:
        items = message if isinstance(message, list) else [message]
        self.frames.extend(jsonrpc.loads(jsonrpc.dumps(item)) for item in items)
        await super()._receive(message)

    def server_requests(self) -> list[JSONObject]:
        return [f for f in self.frames if "method" in f and "id" in f]


def _stateless(server: MCPServer, **kwargs: Any) -> FrameClient:
    return FrameClient(server, protocol_version=VERSION, **kwargs)


def _input_required(response: JSONObject) -> JSONObject:
    """The InputRequiredResult of a response, checked for what every one must (and must not) carry."""
    assert "result" in response, response
    result: JSONObject = response["result"]
    assert result["resultType"] == "input_required", result
    assert not {"ttlMs", "cacheScope"} & result.keys(), "input_required results are not cacheable"
    assert result["_meta"] == {META_SERVER_INFO: SERVER_INFO}
    assert isinstance(result["requestState"], str)
    assert result["requestState"]
    return result


def _error(response: JSONObject) -> JSONObject:
    assert "error" in response, response
    assert "result" not in response, response
    error: JSONObject = response["error"]
    return error


def _text(result: JSONObject) -> str:
    assert result["resultType"] == "complete", result
    if "contents" in result:
        text: str = result["contents"][0]["text"]
    elif "messages" in result:
        text = result["messages"][0]["content"]["text"]
    else:
        text = result["content"][0]["text"]
    return text


# -- ctx.elicit / sample / list_roots: replay across rounds ----------------------------------------------


@pytest.mark.spec(f"{MRTR}#basic-workflow")
@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_high_level_inputs_replay_and_each_is_asked_once() -> None:
    server, runs = _server()
    recorder = Recorder()
    async with recorder.client(server, protocol_version=VERSION) as client:
        result = await client.call_tool("interview")
    assert _text(result) == "Ada | Hello! | ['file:///work']"
    assert result["_meta"] == {META_SERVER_INFO: SERVER_INFO}
    # one question per round; the client is never asked the same thing twice
    assert recorder.calls == ["elicitation/create", "sampling/createMessage", "roots/list"]
    # the body before each input point ran again in every round: four rounds for three inputs
    assert runs == ["start",
                    "start", "elicited",
                    "start", "elicited", "sampled",
                    "start", "elicited", "sampled", "listed"]


@pytest.mark.spec(f"{MRTR}#basic-workflow")
@pytest.mark.spec(f"{MRTR}#inputrequests")
@pytest.mark.spec(f"{MRTR}#client-requirements-basic-workflow")
async def test_high_level_input_keys_are_stable_and_earlier_answers_come_from_the_state() -> None:
    server, runs = _server()
    async with _stateless(server, capabilities={"elicitation": {}, "sampling": {}, "roots": {}}) as client:
        params = client.with_meta({"name": "interview", "arguments": {}})

        async def round_trip(answers: JSONObject | None, state: str | None) -> JSONObject:
            retry = dict(params)
            if answers is not None:
                retry["inputResponses"] = answers
            if state is not None:
                retry["requestState"] = state
            return await client.request_raw("tools/call", retry)

        first = _input_required(await round_trip(None, None))
        assert list(first["inputRequests"]) == ["elicitation-1"]
        assert first["inputRequests"]["elicitation-1"] == {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Name?", "requestedSchema": NAME_SCHEMA}}
        # retried without an answer: the same input point, under the same key
        again = _input_required(await round_trip({}, first["requestState"]))
        assert again["inputRequests"] == first["inputRequests"]

        second = _input_required(await round_trip({"elicitation-1": ANSWERS["elicitation/create"]},
                                                  first["requestState"]))
        assert list(second["inputRequests"]) == ["sampling-2"]
        assert second["inputRequests"]["sampling-2"]["params"]["messages"][0]["content"]["text"] == "Greet Ada"
        # the state is sealed: the answer it carries is not readable in it
        raw = base64.urlsafe_b64decode(second["requestState"] + "=" * (-len(second["requestState"]) % 4))
        assert b"Ada" not in raw

        # each retry brings only the newest answer; the earlier ones come back from the state
        third = _input_required(await round_trip({"sampling-2": ANSWERS["sampling/createMessage"]},
                                                 second["requestState"]))
        assert list(third["inputRequests"]) == ["roots-3"]
        done = await round_trip({"roots-3": ANSWERS["roots/list"]}, third["requestState"])
        assert _text(done["result"]) == "Ada | Hello! | ['file:///work']"
        assert client.server_requests() == []
    assert runs.count("start") == 5


@pytest.mark.spec(f"{MRTR}#error-handling")
async def test_high_level_answers_with_extra_keys_are_ignored() -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities={"elicitation": {}}) as client:
        first = _input_required(await client.request_raw("tools/call", client.with_meta({"name": "ask"})))
        done = await client.request_raw("tools/call", client.with_meta({
            "name": "ask", "requestState": first["requestState"],
            "inputResponses": {"elicitation-1": ANSWERS["elicitation/create"], "unasked": {"action": "decline"}}}))
    assert _text(done["result"]) == "accept {'name': 'Ada'}"


# -- low-level InputRequired ----------------------------------------------------------------------------

LOW_LEVEL = [
    pytest.param("tools/call", {"name": "raised"}, "tool got Ada, state=tool-state", id="tool-raised"),
    pytest.param("tools/call", {"name": "returned"}, "tool got Ada, state=tool-state", id="tool-returned"),
    pytest.param("prompts/get", {"name": "raised_prompt"}, "prompt got Ada, state=prompt-state", id="prompt-raised"),
    pytest.param("prompts/get", {"name": "returned_prompt"}, "prompt got Ada, state=prompt-state",
                 id="prompt-returned"),
    pytest.param("resources/read", {"uri": "test://raised"}, "resource got Ada, state=resource-state",
                 id="resource-raised"),
    pytest.param("resources/read", {"uri": "test://returned"}, "resource got Ada, state=resource-state",
                 id="resource-returned"),
]


@pytest.mark.spec(f"{MRTR}#supported-requests")
@pytest.mark.spec(f"{MRTR}#inputrequiredresult")
@pytest.mark.spec(f"{CACHING}#cacheable-results")
@pytest.mark.parametrize(("method", "params", "expected"), LOW_LEVEL)
async def test_low_level_input_required_round_trip(method: str, params: JSONObject, expected: str) -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities={"elicitation": {}}) as client:
        first = _input_required(await client.request_raw(method, client.with_meta(params)))
        assert first["inputRequests"] == {"k": INPUTS["form"]}
        assert "tool-state" not in first["requestState"]  # the handler's state travels sealed too
        done = await client.request_raw(method, client.with_meta({
            **params, "inputResponses": {"k": ANSWERS["elicitation/create"]}, "requestState": first["requestState"]}))
        assert client.server_requests() == []
    result = done["result"]
    assert _text(result) == expected
    assert result["_meta"] == {META_SERVER_INFO: SERVER_INFO}
    if method == "resources/read":  # a complete read is cacheable again
        assert (result["ttlMs"], result["cacheScope"]) == (0, "private")


@pytest.mark.spec(f"{MRTR}#supported-requests")
@pytest.mark.parametrize(("method", "params", "expected"), LOW_LEVEL)
async def test_low_level_input_required_through_the_retrying_client(method: str, params: JSONObject,
                                                                    expected: str) -> None:
    server, _runs = _server()
    recorder = Recorder()
    async with recorder.client(server, protocol_version=VERSION) as client:
        result = await client.request(method, params)
    assert _text(result) == expected
    assert recorder.calls == ["elicitation/create"]


@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_low_level_state_carries_progress_across_rounds() -> None:
    server, _runs = _server()
    recorder = Recorder()
    async with recorder.client(server, protocol_version=VERSION) as client:
        result = await client.call_tool("two_step")
    assert _text(result) == "step-2: ['second']"
    assert recorder.calls == ["elicitation/create", "roots/list"]


@pytest.mark.spec(f"{MRTR}#error-handling")
async def test_low_level_answers_with_extra_keys_are_ignored() -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities={"elicitation": {}}) as client:
        done = await client.request_raw("tools/call", client.with_meta({"name": "raised", "inputResponses": {
            "k": ANSWERS["elicitation/create"], "extra": {"anything": True}, "elicitation-1": {}}}))
    assert _text(done["result"]) == "tool got Ada, state=None"


# -- where input may not be asked for ---------------------------------------------------------------------


@pytest.mark.spec(f"{MRTR}#supported-requests")
@pytest.mark.parametrize("version", [VERSION, "2025-11-25"])
async def test_completion_raising_input_required_is_an_internal_error(version: str) -> None:
    server, _runs = _server()
    recorder = Recorder()
    async with FrameClient(server, protocol_version=version, elicitation=recorder.elicitation) as client:
        params: JSONObject = {"ref": {"type": "ref/prompt", "name": "topic"},
                              "argument": {"name": "subject", "value": "x"}}
        response = await client.request_raw("completion/complete",
                                            client.with_meta(params) if client.stateless else params)
        assert client.server_requests() == []
    assert _error(response)["code"] == INTERNAL_ERROR
    assert recorder.calls == []


@pytest.mark.spec(f"{MRTR}#supported-requests")
@pytest.mark.parametrize("how", ["ctx.elicit", "ctx.sample", "ctx.list_roots", "raise"])
async def test_input_from_a_method_that_may_not_return_it_is_an_internal_error(
        monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """A completion handler that asks for input: an internal error, never an input_required result."""
    server, _runs = _server()

    async def complete(params: JSONObject, ctx: Context) -> JSONObject:
        if how == "ctx.elicit":
            await ctx.elicit("Which?", NAME_SCHEMA)
        elif how == "ctx.sample":
            await ctx.sample("Which?")
        elif how == "ctx.list_roots":
            await ctx.list_roots()
        else:
            raise InputRequired({"k": INPUTS["form"]}, request_state="s")
        return {"completion": {"values": []}}

    monkeypatch.setitem(server.runtime.dispatcher._stateless_handlers, "completion/complete", complete)
    async with _stateless(server, capabilities={"elicitation": {}, "sampling": {}, "roots": {}}) as client:
        response = await client.request_raw("completion/complete", client.with_meta({
            "ref": {"type": "ref/prompt", "name": "topic"}, "argument": {"name": "subject", "value": "x"}}))
        assert client.server_requests() == []
    assert _error(response)["code"] == INTERNAL_ERROR


# -- input requests need the client's declared capabilities -----------------------------------------------


@pytest.mark.spec("2026-07-28/basic/index#_meta")
@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
@pytest.mark.spec("2026-07-28/client/elicitation#capabilities")
@pytest.mark.spec("2026-07-28/client/sampling#capabilities")
@pytest.mark.spec("2026-07-28/client/roots#capabilities")
@pytest.mark.parametrize(
    ("arguments", "capabilities", "required"),
    [
        pytest.param({"name": "ask"}, {}, {"elicitation": {}}, id="elicit"),
        pytest.param({"name": "ask"}, {"sampling": {}}, {"elicitation": {}}, id="elicit-other-declared"),
        pytest.param({"name": "ask"}, {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}},
                     id="elicit-url-only-client"),
        pytest.param({"name": "ask_url"}, {}, {"elicitation": {"url": {}}}, id="elicit-url"),
        pytest.param({"name": "ask_url"}, {"elicitation": {}}, {"elicitation": {"url": {}}}, id="elicit-url-form-only"),
        pytest.param({"name": "think"}, {"elicitation": {}}, {"sampling": {}}, id="sample"),
        pytest.param({"name": "think_with_tools"}, {"sampling": {}}, {"sampling": {"tools": {}}},
                     id="sample-with-tools"),
        pytest.param({"name": "roots"}, {"sampling": {}}, {"roots": {}}, id="roots"),
        pytest.param({"name": "low", "arguments": {"kind": "form"}}, {}, {"elicitation": {}}, id="low-form"),
        pytest.param({"name": "low", "arguments": {"kind": "form-no-mode"}}, {"elicitation": {"url": {}}},
                     {"elicitation": {"form": {}}}, id="low-form-to-url-only-client"),
        pytest.param({"name": "low", "arguments": {"kind": "url"}}, {"elicitation": {"form": {}}},
                     {"elicitation": {"url": {}}}, id="low-url"),
        pytest.param({"name": "low", "arguments": {"kind": "sampling"}}, {"roots": {}}, {"sampling": {}},
                     id="low-sampling"),
        pytest.param({"name": "low", "arguments": {"kind": "sampling-tools"}}, {"sampling": {}},
                     {"sampling": {"tools": {}}}, id="low-sampling-tools"),
        pytest.param({"name": "low", "arguments": {"kind": "sampling-tool-choice"}}, {"sampling": {}},
                     {"sampling": {"tools": {}}}, id="low-sampling-tool-choice"),
        pytest.param({"name": "low", "arguments": {"kind": "roots"}}, {"elicitation": {}}, {"roots": {}},
                     id="low-roots"),
    ],
)
async def test_input_requests_for_undeclared_capabilities_are_refused(
        arguments: JSONObject, capabilities: JSONObject, required: JSONObject) -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities=capabilities) as client:
        response = await client.request_raw("tools/call", client.with_meta({"arguments": {}, **arguments}))
        assert client.server_requests() == []
    error = _error(response)
    assert error["code"] == MISSING_CLIENT_CAPABILITY, error
    assert error["data"] == {"requiredCapabilities": required}


@pytest.mark.spec("2026-07-28/client/elicitation#capabilities")
@pytest.mark.spec("2026-07-28/client/sampling#capabilities")
@pytest.mark.parametrize(
    ("kind", "capabilities"),
    [
        ("form", {"elicitation": {}}),  # an empty elicitation capability means form
        ("form-no-mode", {"elicitation": {"form": {}, "url": {}}}),
        ("url", {"elicitation": {"url": {}}}),
        ("sampling-tools", {"sampling": {"tools": {}}}),
        ("roots", {"roots": {}}),
    ],
)
async def test_input_requests_for_declared_capabilities_are_sent(kind: str, capabilities: JSONObject) -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities=capabilities) as client:
        result = _input_required(await client.request_raw("tools/call", client.with_meta(
            {"name": "low", "arguments": {"kind": kind}})))
    assert result["inputRequests"] == {"k": INPUTS[kind]}


# -- the handshake era: the same handlers, real requests to the client ----------------------------------


@pytest.mark.spec("2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions")
@pytest.mark.spec("2025-11-25/client/elicitation#form-mode-elicitation-requests")
@pytest.mark.parametrize(("method", "params", "expected"), LOW_LEVEL)
async def test_handshake_session_serves_low_level_input_required_with_requests(
        method: str, params: JSONObject, expected: str) -> None:
    server, _runs = _server()
    recorder = Recorder()
    async with FrameClient(server, elicitation=recorder.elicitation) as client:
        result = await client.request(method, params)
        asked = client.server_requests()
    assert _text({"resultType": "complete", **result}) == expected
    assert not {"resultType", "_meta"} & result.keys(), result
    assert [r["method"] for r in asked] == ["elicitation/create"]
    assert asked[0]["params"] == INPUTS["form"]["params"]
    assert recorder.calls == ["elicitation/create"]


@pytest.mark.spec("2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions")
async def test_handshake_session_serves_several_low_level_rounds() -> None:
    server, _runs = _server()
    recorder = Recorder()
    async with recorder.client(server) as client:
        result = await client.call_tool("two_step")
        low = await client.call_tool("low", {"kind": "sampling"})
    assert result["content"][0]["text"] == "step-2: ['second']"
    assert recorder.calls == ["elicitation/create", "roots/list", "sampling/createMessage"]
    assert low["content"][0]["text"] == (
        f"k={json.dumps(ANSWERS['sampling/createMessage'], sort_keys=True)} state=asked-sampling")


# -- malformed inputResponses -----------------------------------------------------------------------------


@pytest.mark.spec(f"{MRTR}#error-handling")
@pytest.mark.parametrize(("method", "params"), [
    ("tools/call", {"name": "raised"}),
    ("tools/call", {"name": "ask"}),
    ("prompts/get", {"name": "raised_prompt"}),
    ("resources/read", {"uri": "test://raised"}),
])
@pytest.mark.parametrize("responses", [[], "k", 3, True, {"k": "accept"}, {"k": []}, {"k": 1},
                                       {"k": ANSWERS["elicitation/create"], "other": None}])
async def test_malformed_input_responses_are_invalid_params(method: str, params: JSONObject, responses: Any) -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities={"elicitation": {}}) as client:
        response = await client.request_raw(method, client.with_meta({**params, "inputResponses": responses}))
    error = _error(response)
    assert error["code"] == INVALID_PARAMS, error
    assert "inputResponses" in error["message"]


# -- what every result carries ---------------------------------------------------------------------------


CACHEABLE: list[tuple[str, JSONObject]] = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("prompts/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "test://raised", "inputResponses": {"k": ANSWERS["elicitation/create"]}}),
]
NOT_CACHEABLE: list[tuple[str, JSONObject]] = [
    ("tools/call", {"name": "roots", "inputResponses": {"roots-1": ANSWERS["roots/list"]}}),
    ("prompts/get", {"name": "topic", "arguments": {"subject": "x"}}),
    ("completion/complete", {"ref": {"type": "ref/resource", "uri": "test://item/{x}"},
                             "argument": {"name": "x", "value": ""}}),
]


@pytest.mark.spec(f"{CACHING}#cacheable-results")
@pytest.mark.spec(f"{CACHING}#cacheable-model")
@pytest.mark.spec("2026-07-28/basic/index#result-responses")
@pytest.mark.spec("2026-07-28/basic/index#_meta")
@pytest.mark.parametrize(("method", "params"), CACHEABLE + NOT_CACHEABLE)
@pytest.mark.parametrize("hints", [None, (60_000, "public")])
async def test_every_result_has_result_type_server_info_and_hints_where_cacheable(
        method: str, params: JSONObject, hints: tuple[int, str] | None) -> None:
    server, _runs = _server(**({} if hints is None else {"cache_ttl_ms": hints[0], "cache_scope": hints[1]}))
    async with _stateless(server, capabilities={"roots": {}, "elicitation": {}}) as client:
        response = await client.request_raw(method, client.with_meta(params))
    assert "result" in response, response
    result = response["result"]
    assert result["resultType"] == "complete"
    assert result["_meta"] == {META_SERVER_INFO: SERVER_INFO}
    if (method, params) in CACHEABLE:
        ttl, scope = hints or (0, "private")
        assert (result["ttlMs"], result["cacheScope"]) == (ttl, scope)
    else:
        assert not {"ttlMs", "cacheScope"} & result.keys(), result


@pytest.mark.spec(f"{CACHING}#cacheable-model")
async def test_a_resource_sets_its_own_caching_hints() -> None:
    server, _runs = _server(cache_ttl_ms=1, cache_scope="private")
    async with _stateless(server) as client:
        result = await client.read_resource("test://cached")
    assert (result["ttlMs"], result["cacheScope"]) == (5000, "public")


@pytest.mark.spec(f"{CACHING}#interaction-with-pagination")
async def test_every_page_carries_the_same_caching_hints() -> None:
    server, _runs = _server(page_size=2, cache_ttl_ms=1000, cache_scope="public")
    async with _stateless(server) as client:
        pages: list[JSONObject] = []
        cursor: str | None = None
        while True:
            page = await client.request("tools/list", {"cursor": cursor} if cursor else {})
            pages.append(page)
            cursor = page.get("nextCursor")
            if not cursor:
                break
    assert len(pages) > 2
    assert {(p["resultType"], p["ttlMs"], p["cacheScope"]) for p in pages} == {("complete", 1000, "public")}
    assert all(p["_meta"] == {META_SERVER_INFO: SERVER_INFO} for p in pages)


# -- subscriptions/listen ----------------------------------------------------------------------------------


async def _notification(client: Client, method: str, count: int = 1) -> list[JSONObject]:
    return await asyncio.wait_for(client.wait_for_notification(method, count), BOUND)


@pytest.mark.spec(f"{SUBSCRIPTIONS}#acknowledgment")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#notification-filter")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#receiving-notifications")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#graceful-closure")
async def test_listen_acknowledges_filters_and_ends_tagged() -> None:
    server = MCPServer("stateless", "3.1", title="Stateless")
    server.add_tool(Tool(lambda: "x", name="first"))
    server.resource("test://a")(lambda: "a")
    server.resource("test://b")(lambda: "b")  # no prompts: prompt changes cannot be honoured
    async with _stateless(server) as client:
        listen = asyncio.create_task(client.request_raw("subscriptions/listen", client.with_meta({"notifications": {
            "toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": False,
            "resourceSubscriptions": ["test://a"]}}), id="sub"))
        (ack,) = await _notification(client, "notifications/subscriptions/acknowledged")
        assert ack["params"] == {"_meta": {META_SUBSCRIPTION: "sub"},
                                 "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["test://a"]}}
        assert client.notifications == [ack]  # the acknowledgment comes first

        # what was not asked for (or not honoured) is not sent; each stream keeps its order, so anything
        # forwarded from the first three events would arrive before the two that are wanted
        server.resource_updated("test://b")
        server.add_prompt(Prompt(lambda: "p", name="late_prompt"))
        server.resources.add(server.resources.static["test://b"])  # resources/list_changed: declined
        server.resource_updated("test://a")
        server.add_tool(Tool(lambda: "y", name="second"))
        await _notification(client, "notifications/tools/list_changed")
        assert client.notifications[1:] == [
            {"jsonrpc": "2.0", "method": "notifications/resources/updated",
             "params": {"uri": "test://a", "_meta": {META_SUBSCRIPTION: "sub"}}},
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
             "params": {"_meta": {META_SUBSCRIPTION: "sub"}}},
        ]
        assert not listen.done()

        # the server ends every stream (shutting down): the listen request is answered, tagged
        server.runtime.backend.bus.end_all()
        response = await asyncio.wait_for(listen, BOUND)
    assert response == {"jsonrpc": "2.0", "id": "sub", "result": {
        "resultType": "complete", "_meta": {META_SUBSCRIPTION: "sub", META_SERVER_INFO: SERVER_INFO}}}


@pytest.mark.spec(f"{SUBSCRIPTIONS}#multiple-concurrent-subscriptions")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#receiving-notifications")
async def test_concurrent_listens_are_told_apart_by_their_ids() -> None:
    server, _runs = _server()
    async with _stateless(server) as client:
        tools = asyncio.create_task(client.request_raw("subscriptions/listen", client.with_meta(
            {"notifications": {"toolsListChanged": True}}), id=1))
        prompts = asyncio.create_task(client.request_raw("subscriptions/listen", client.with_meta(
            {"notifications": {"promptsListChanged": True}}), id="p"))
        acks = await _notification(client, "notifications/subscriptions/acknowledged", 2)
        assert sorted(str(a["params"]["_meta"][META_SUBSCRIPTION]) for a in acks) == ["1", "p"]
        server.add_prompt(Prompt(lambda: "p", name="another"))
        server.add_tool(Tool(lambda: "t", name="another"))
        (tool_note,) = await _notification(client, "notifications/tools/list_changed")
        (prompt_note,) = await _notification(client, "notifications/prompts/list_changed")
        assert tool_note["params"]["_meta"] == {META_SUBSCRIPTION: 1}
        assert prompt_note["params"]["_meta"] == {META_SUBSCRIPTION: "p"}
        server.runtime.backend.bus.end_all()
        ended = await asyncio.wait_for(asyncio.gather(tools, prompts), BOUND)
    assert [r["result"]["_meta"][META_SUBSCRIPTION] for r in ended] == [1, "p"]
    assert len(client.notifications) == 4


@pytest.mark.spec("2026-07-28/basic/index#_meta")
async def test_listen_needs_the_per_request_meta() -> None:
    server, _runs = _server()
    async with _stateless(server) as client:
        response = await client.request_raw("subscriptions/listen", {
            "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION}, "notifications": {}})
    assert _error(response)["code"] == INVALID_PARAMS
    assert client.notifications == []


# -- notifications/tasks on subscriptions/listen (the tasks extension) ----------------------------------


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


@pytest.mark.spec(f"{EXT}#tasks")
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
        server.runtime.backend.bus.end_all()
        ended = await asyncio.wait_for(listen, BOUND)
    notes = [n for n in alice.notifications if n["method"] == "notifications/tasks"]
    assert {n["params"]["taskId"] for n in notes} == {mine}
    assert all(n["params"]["_meta"] == {META_SUBSCRIPTION: "sub"} for n in notes)
    assert ended["result"]["resultType"] == "complete"


@pytest.mark.spec(f"{EXT}#tasks")
@pytest.mark.spec(f"{EXT}#task-status-notifications")
async def test_listen_for_tasks_without_the_extension_is_missing_client_capability() -> None:
    server = task_server(Gate())
    async with connect(server) as declaring, connect(server, extension=False) as client:
        task_id = (await start(declaring, "batch", {"n": 1}))["taskId"]
        refused = await error(client, "subscriptions/listen", {"notifications": {"taskIds": [task_id]}})
    assert refused["code"] == MISSING_CLIENT_CAPABILITY
    assert refused["data"] == MISSING_EXTENSION
    assert client.notifications == []
