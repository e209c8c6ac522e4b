"""The official MCP Python SDK client (``mcp``) against a real ``uvicorn app:asgi`` over Streamable HTTP, in both eras.

One uvicorn process serves ``examples.everything:server`` for the module (another one serves
``examples.word_count:server``), and both eras talk to the same process:

- ``mode="auto"`` (the default) probes ``server/discover``; the server answers it, so the client
  speaks the stateless era (2026-07-28): one POST per request, headers mirroring the body, no session
  (no ``Mcp-Session-Id``, no GET stream, no DELETE), and input asked for with ``InputRequiredResult``
  and answered by a retry instead of with a server-to-client request.
- ``mode="legacy"`` goes straight to ``initialize`` (2025-11-25): a session the client ends with DELETE.

Every HTTP exchange is recorded by the client's transport, bodies included (a tee, so streams stay
streams), and each test checks what its era looks like on the wire.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any, cast

import anyio
import pytest
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp.types import (
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    LoggingMessageNotificationParams,
    PromptReference,
    RequestParamsMeta,
    TextContent,
    TextResourceContents,
)

from tests.support.http import UvicornProcess, run_uvicorn
from tests.support.official_client import WAIT, Answers, Wire, connect, only_text

EVERYTHING = "examples.everything:server"
WORD_COUNT = "examples.word_count:server"
STATELESS = "2026-07-28"
LEGACY = "2025-11-25"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
METHOD_NOT_FOUND = -32601
MISSING_CAPABILITY = -32021
UNKNOWN = "test://nonexistent-resource-for-conformance-testing"

pytestmark = [
    # logging/setLevel and resources/(un)subscribe are deprecated in 2026-07-28; legacy mode still uses them
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
    pytest.mark.timeout(30),
]


def eras(stateless: str | tuple[str, ...], legacy: str | tuple[str, ...]) -> list[Any]:
    """Both connect modes, each tagged with the spec sections (``page#section``) it checks in its era."""

    def marks(revision: str, sections: str | tuple[str, ...]) -> list[pytest.MarkDecorator]:
        return [pytest.mark.spec(f"{revision}/{section}")
                for section in ((sections,) if isinstance(sections, str) else sections)]

    return [pytest.param("auto", marks=marks(STATELESS, stateless), id="auto-2026-07-28"),
            pytest.param("legacy", marks=marks(LEGACY, legacy), id="legacy-2025-11-25")]


def serve(target: str) -> Iterator[UvicornProcess]:
    with run_uvicorn(target) as server:
        yield server
        output = server.output()
    assert "Traceback" not in output, output


@pytest.fixture(scope="module")
def everything() -> Iterator[UvicornProcess]:
    yield from serve(EVERYTHING)


@pytest.fixture(scope="module")
def word_count() -> Iterator[UvicornProcess]:
    yield from serve(WORD_COUNT)


# -- negotiation, tools ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", eras(
    ("basic/versioning#protocol-version-negotiation", "server/discover#when-to-call",
     "basic/transports/streamable-http#backward-compatibility"),
    ("basic/lifecycle#initialization", "basic/transports#session-management")))
async def test_negotiates_the_era_on_the_same_endpoint(mode: str, everything: UvicornProcess) -> None:
    wire = Wire()
    async with connect(everything, mode, wire) as client:
        assert client.server_info is not None
        assert client.server_info.name == "wiremcp-everything"
        assert client.server_capabilities.tools is not None
        if mode == "auto":
            assert client.session.discover_result is not None
            assert {STATELESS, LEGACY} <= set(client.session.discover_result.supported_versions)
            assert client.session.initialize_result is None
        else:
            assert client.session.initialize_result is not None
            assert client.session.discover_result is None
        tools = {tool.name for tool in (await client.list_tools()).tools}
        simple = await client.call_tool("test_simple_text")
        image = await client.call_tool("test_image_content")
        failed = await client.call_tool("test_error_handling")
    assert {"test_simple_text", "test_sampling", "test_elicitation", "test_input_required_result_multi_round"} <= tools
    assert only_text(simple.content) == "This is a simple text response for testing."
    (png,) = image.content
    assert isinstance(png, ImageContent)
    assert base64.b64decode(png.data).startswith(b"\x89PNG\r\n\x1a\n")
    assert failed.is_error
    if mode == "auto":
        discover = wire.posts[0]
        assert discover.body["method"] == "server/discover"
        assert discover.status == 200
        assert wire.exchanges[-1].body["method"] == "tools/call"  # and nothing after: no DELETE
    else:
        sid = wire.session_id
        initialize, initialized = wire.posts[:2]
        assert (initialize.session_id, initialize.status, initialize.response_headers["mcp-session-id"]) == (
            None, 200, sid)
        assert (initialized.body["method"], initialized.session_id, initialized.status) == (
            "notifications/initialized", sid, 202)
        assert wire.exchanges[-1].method == "DELETE"


@pytest.mark.parametrize("mode", eras("server/tools#structured-content", "server/tools#structured-content"))
async def test_word_count_returns_structured_content(mode: str, word_count: UvicornProcess) -> None:
    async with connect(word_count, mode) as client:
        (tool,) = (await client.list_tools()).tools
        result = await client.call_tool("word_count", {"text": "read the wire"})
    assert tool.name == "word_count"
    assert tool.output_schema is not None
    assert tool.output_schema["properties"].keys() == {"words", "chars"}
    assert not result.is_error
    assert result.structured_content == {"words": 3, "chars": 13}
    assert only_text(result.content) == '{"words":3,"chars":13}'


@pytest.mark.spec(f"{STATELESS}/server/tools#x-mcp-header")
@pytest.mark.spec(f"{STATELESS}/basic/transports/streamable-http#custom-headers-from-tool-parameters")
@pytest.mark.spec(f"{STATELESS}/basic/transports/streamable-http#server-behavior-for-custom-headers")
async def test_a_header_parameter_travels_as_a_header_too(everything: UvicornProcess) -> None:
    wire = Wire()
    async with connect(everything, wire=wire) as client:
        # not listed yet: the client cannot know the header, the server refuses, the client lists and resends
        unlisted = await client.call_tool("test_x_mcp_header", {"region": "eu-west-1"})
        listed = await client.call_tool("test_x_mcp_header", {"region": "ap-south-1"})
    assert only_text(unlisted.content) == "region=eu-west-1"
    assert only_text(listed.content) == "region=ap-south-1"
    refused, resent, direct = wire.calls("test_x_mcp_header")
    assert "mcp-param-region" not in refused.headers
    assert refused.status == 400
    assert refused.messages[0]["error"]["code"] == -32020
    assert [e.body["method"] for e in wire.posts[1:4]] == ["tools/call", "tools/list", "tools/call"]
    for call, region in ((resent, "eu-west-1"), (direct, "ap-south-1")):
        assert call.headers["mcp-name"] == "test_x_mcp_header"
        assert call.headers["mcp-param-region"] == region
        assert call.status == 200


@pytest.mark.spec(f"{STATELESS}/basic/index#_meta")
@pytest.mark.spec(f"{STATELESS}/basic/index#error-codes")
async def test_a_missing_client_capability_is_400_and_error_32021(everything: UvicornProcess) -> None:
    wire = Wire()
    async with connect(everything, wire=wire) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("test_missing_capability")
    async with connect(everything, sampling_callback=Answers().sample) as client:
        declared = await client.call_tool("test_missing_capability")
    assert caught.value.code == MISSING_CAPABILITY
    assert caught.value.data == {"requiredCapabilities": {"sampling": {}}}
    (call,) = wire.calls("test_missing_capability")
    assert call.status == 400
    assert only_text(declared.content) == "The client declared sampling."


# -- resources, prompts, completion -----------------------------------------------------------------------
@pytest.mark.parametrize("mode", eras(
    ("server/resources#reading-resources", "server/resources#error-handling", "server/prompts#getting-a-prompt",
     "server/utilities/completion#completion-results"),
    ("server/resources#reading-resources", "server/resources#error-handling", "server/resources#subscriptions",
     "server/prompts#getting-a-prompt", "server/utilities/completion#completion-results")))
async def test_reads_resources_gets_prompts_and_completes(mode: str, everything: UvicornProcess) -> None:
    wire = Wire()
    async with connect(everything, mode, wire) as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        (text,) = (await client.read_resource("test://static-text")).contents
        (blob,) = (await client.read_resource("test://static-binary")).contents
        (data,) = (await client.read_resource("test://template/42/data")).contents
        with pytest.raises(MCPError) as missing:
            await client.read_resource(UNKNOWN)
        if mode == "legacy":
            await client.subscribe_resource("test://watched-resource")
            await client.unsubscribe_resource("test://watched-resource")
        else:  # removed in the stateless era: subscriptions/listen replaces it
            with pytest.raises(MCPError) as caught:
                await client.subscribe_resource("test://watched-resource")
            assert caught.value.code == METHOD_NOT_FOUND
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        with_args = await client.get_prompt("test_prompt_with_arguments", {"arg1": "one", "arg2": "two"})
        embedded = await client.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://x"})
        completed = await client.complete(PromptReference(name="test_prompt_with_arguments"),
                                          {"name": "arg1", "value": "test"})
    assert {"test://static-text", "test://static-binary", "test://watched-resource"} <= listed
    assert isinstance(text, TextResourceContents)
    assert text.text == "This is the content of the static text resource."
    assert isinstance(blob, BlobResourceContents)
    assert base64.b64decode(blob.blob).startswith(b"\x89PNG")
    assert isinstance(data, TextResourceContents)
    assert json.loads(data.text)["id"] == "42"
    assert {"test_simple_prompt", "test_input_required_result_prompt"} <= prompts
    message = only_text([m.content for m in with_args.messages])
    assert "arg1='one'" in message
    assert "arg2='two'" in message
    assert any(isinstance(m.content, EmbeddedResource) for m in embedded.messages)
    assert completed.completion.values == ["testValue1", "testValue2"]
    # resource not found: -32602 in the stateless era, -32002 before it; both name the URI
    assert (missing.value.code, missing.value.data) == (-32602 if mode == "auto" else -32002, {"uri": UNKNOWN})
    if mode == "auto":
        (subscribe,) = wire.requests("resources/subscribe")
        assert subscribe.status == 404
        (read,) = wire.requests("resources/read")[:1]
        assert read.headers["mcp-name"] == "test://static-text"
        answer = read.messages[0]["result"]
        assert answer["resultType"] == "complete"
        assert isinstance(answer["ttlMs"], int)  # a caching hint on a cacheable result


# -- asking the client during a call ----------------------------------------------------------------------
@pytest.mark.parametrize("mode", eras(
    ("basic/patterns/mrtr#basic-workflow", "basic/patterns/mrtr#client-requirements-basic-workflow",
     "client/elicitation#form-mode-elicitation-requests", "client/sampling#creating-messages"),
    ("basic/transports#sending-messages-to-the-server", "client/elicitation#form-mode-elicitation-requests",
     "client/sampling#creating-messages")))
async def test_answers_an_elicitation_and_a_sampling_request_during_a_call(
        mode: str, everything: UvicornProcess) -> None:
    answers = Answers()
    wire = Wire()
    async with connect(everything, mode, wire, sampling_callback=answers.sample,
                       elicitation_callback=answers.elicit) as client:
        sampling = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
        elicitation = await client.call_tool("test_elicitation", {"message": "Favourite colour?"})
    assert only_text(sampling.content) == "LLM response: Paris"
    (request,) = answers.sampled
    assert isinstance(request.messages[0].content, TextContent)
    assert request.messages[0].content.text == "Capital of France?"
    assert only_text(elicitation.content) == "User response: action=accept, response=blue"
    (question,) = answers.elicited
    assert question.message == "Favourite colour?"
    assert "response" in question.requested_schema["properties"]

    if mode == "auto":
        # no server-to-client request on any stream, no response POSTed by the client: only retries
        assert wire.server_requests == []
        assert wire.client_responses == []
        for tool in ("test_sampling", "test_elicitation"):
            first, retry = wire.calls(tool)
            (asked,) = first.messages
            assert asked["result"]["resultType"] == "input_required"
            (key,) = asked["result"]["inputRequests"]
            assert "inputResponses" not in first.body["params"]
            assert list(retry.body["params"]["inputResponses"]) == [key]
            assert retry.body["params"]["requestState"] == asked["result"]["requestState"]  # echoed exactly
            assert retry.body["id"] != first.body["id"]
            assert retry.messages[0]["result"]["resultType"] == "complete"
        (answer,) = wire.calls("test_elicitation")[1].body["params"]["inputResponses"].values()
        assert answer == {"action": "accept", "content": {"response": "blue"}}
    else:
        assert [m["method"] for m in wire.server_requests] == ["sampling/createMessage", "elicitation/create"]
        assert [r["id"] for r in wire.client_responses] == [m["id"] for m in wire.server_requests]
        assert all(len(wire.calls(tool)) == 1 for tool in ("test_sampling", "test_elicitation"))


@pytest.mark.parametrize("mode", eras(
    ("basic/patterns/mrtr#basic-workflow", "basic/patterns/mrtr#inputrequests"),
    ("client/elicitation#form-mode-elicitation-requests", "client/roots#listing-roots")))
async def test_a_multi_round_tool_completes(mode: str, everything: UvicornProcess) -> None:
    answers = Answers()
    wire = Wire()
    async with connect(everything, mode, wire, **answers.callbacks) as client:
        result = await client.call_tool("test_input_required_result_multi_round")
        inputs = await client.call_tool("test_input_required_result_multiple_inputs")
        prompt = await client.get_prompt("test_input_required_result_prompt")
    assert only_text(result.content) == "Ada likes green."
    assert [p.message for p in answers.elicited[:2]] == [
        "Step 1: What is your name?", "Step 2: What is your favorite color?"]
    assert only_text(inputs.content) == "All inputs received."
    assert (len(answers.sampled), answers.roots_listed) == (1, 1)
    assert only_text([m.content for m in prompt.messages]).startswith("Use the following context:")
    if mode == "auto":
        assert wire.server_requests == []
        rounds = wire.calls("test_input_required_result_multi_round")
        assert [r.messages[0]["result"]["resultType"] for r in rounds] == ["input_required", "input_required",
                                                                          "complete"]
        assert [len(r.body["params"].get("inputResponses", {})) for r in rounds] == [0, 1, 1]
        first, retry = wire.calls("test_input_required_result_multiple_inputs")
        keys = {"user_name", "greeting", "client_roots"}  # three questions in one round, answered together
        assert set(first.messages[0]["result"]["inputRequests"]) == set(retry.body["params"]["inputResponses"]) == keys
        asked, answered = wire.requests("prompts/get")
        assert asked.headers["mcp-name"] == answered.headers["mcp-name"] == "test_input_required_result_prompt"
        assert list(answered.body["params"]["inputResponses"]) == ["user_context"]
    else:
        assert len(wire.server_requests) == 6  # 2 + 3 + 1, each a real request on the call's stream


# -- notifications ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", eras("server/utilities/logging#per-request-log-level",
                                      "server/utilities/logging#log-message-notifications"))
async def test_the_logging_callback_receives_the_tools_log_messages(mode: str, everything: UvicornProcess) -> None:
    messages: list[LoggingMessageNotificationParams] = []
    three = anyio.Event()

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        messages.append(params)
        if len(messages) >= 3:
            three.set()

    # the stateless era: each request opts in with a log level; the handshake era: logging/setLevel
    async with connect(everything, mode, logging_callback=on_log,
                       log_level="debug" if mode == "auto" else None) as client:
        if mode == "legacy":
            await client.set_logging_level("debug")
        result = await client.call_tool("test_tool_with_logging")
        with anyio.fail_after(WAIT):
            await three.wait()
    assert not result.is_error
    assert [(m.level, m.data) for m in messages] == [
        ("info", "Tool execution started"), ("info", "Tool processing data"), ("info", "Tool execution completed")]


@pytest.mark.spec(f"{STATELESS}/server/utilities/logging#per-request-log-level")
async def test_stateless_logging_only_for_requests_with_a_log_level(everything: UvicornProcess) -> None:
    messages: list[LoggingMessageNotificationParams] = []
    two = anyio.Event()

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        messages.append(params)
        if len(messages) >= 2:
            two.set()

    wire = Wire()
    async with connect(everything, wire=wire, logging_callback=on_log) as client:  # no log_level
        silent = await client.call_tool("test_logging_tool")
        opted_in = await client.call_tool("test_logging_tool", meta=cast(RequestParamsMeta, {LOG_LEVEL: "warning"}))
        with anyio.fail_after(WAIT):
            await two.wait()
    assert only_text(silent.content) == only_text(opted_in.content) == "logged"
    quiet, loud = wire.calls("test_logging_tool")
    assert quiet.response_headers["content-type"].startswith("application/json")  # nothing but the result
    assert [m.get("method") for m in quiet.messages] == [None]
    assert [m["params"]["level"] for m in loud.messages if m.get("method") == "notifications/message"] == [
        "warning", "error"]
    assert [(m.level, m.data) for m in messages] == [("warning", "a warning message"), ("error", "a error message")]


@pytest.mark.parametrize("mode", eras("basic/patterns/progress#progress-flow", "basic/utilities/progress#progress-flow"))
async def test_the_progress_callback_receives_increasing_progress(mode: str, everything: UvicornProcess) -> None:
    updates: list[tuple[float, float | None]] = []
    three = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total))
        if len(updates) >= 3:
            three.set()

    async with connect(everything, mode) as client:
        result = await client.call_tool("test_tool_with_progress", progress_callback=on_progress)
        with anyio.fail_after(WAIT):
            await three.wait()
    assert not result.is_error
    assert updates == [(0, 100), (50, 100), (100, 100)]


@pytest.mark.spec(f"{STATELESS}/basic/patterns/subscriptions#opening-a-stream")
@pytest.mark.spec(f"{STATELESS}/basic/patterns/subscriptions#receiving-notifications")
@pytest.mark.spec(f"{STATELESS}/server/tools#list-changed-notification")
async def test_listen_receives_a_tools_list_change(everything: UvicornProcess) -> None:
    wire = Wire()
    async with connect(everything, wire=wire) as client:
        async with client.listen(tools_list_changed=True) as subscription:
            assert subscription.honored.tools_list_changed is True
            assert only_text((await client.call_tool("test_trigger_tool_change")).content) == "tool list changed"
            with anyio.fail_after(WAIT):
                event = await anext(subscription)
        tools = {tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools}
    assert event == ToolsListChanged()
    assert "transient_tool" not in tools
    (listen,) = wire.requests("subscriptions/listen")
    assert listen.response_headers["content-type"].startswith("text/event-stream")
    ack, *changes = listen.messages
    tag = {"io.modelcontextprotocol/subscriptionId": listen.body["id"]}
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"] == {"_meta": tag, "notifications": {"toolsListChanged": True}}
    assert changes
    assert all(m == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": tag}}
               for m in changes)
