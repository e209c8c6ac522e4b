"""The official MCP Python SDK client (``mcp``) driving real server processes over stdio, in both eras.

Each test starts ``python -m wiremcp stdio MODULE:ATTR`` as the SDK's stdio transport does and
talks to it through ``mcp.Client``:

- ``mode="auto"`` (the default) probes ``server/discover``; the server answers it, so the client
  speaks the stateless era (2026-07-28): no ``initialize``, ``_meta`` on every request, and input
  (elicitation, sampling, roots) asked for with ``InputRequiredResult`` and answered by a retry.
- ``mode="legacy"`` goes straight to ``initialize`` (2025-11-25): a session, server-to-client
  requests, ``logging/setLevel`` and ``resources/subscribe``.

Every JSON-RPC message on the pipe is recorded both ways, so the tests also check how each era
looks on the wire.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self, cast

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client._transport import ReadStream, TransportStreams, WriteStream
from mcp.client.session import IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import ListenNotSupportedError, PromptsListChanged, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    LoggingMessageNotificationParams,
    PromptListChangedNotification,
    PromptReference,
    RequestParamsMeta,
    TextContent,
    TextResourceContents,
    ToolListChangedNotification,
)

from tests.support.official_client import Answers

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = "examples.everything:server"
WORD_COUNT = "examples.word_count:server"
WAIT = 10.0  # an upper bound for awaited events, never a sleep
STATELESS = "2026-07-28"
LEGACY = "2025-11-25"
VERSION = {"auto": STATELESS, "legacy": LEGACY}
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
METHOD_NOT_FOUND = -32601
MISSING_CAPABILITY = -32021

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


def server_params(target: str) -> StdioServerParameters:
    # The SDK passes the child only a minimal environment (HOME, PATH, ...): add what the server needs.
    return StdioServerParameters(command=sys.executable, args=["-m", "wiremcp", "stdio", target], cwd=ROOT,
                                 env={"WIREMCP_LOG_LEVEL": "WARNING", "PYTHONDONTWRITEBYTECODE": "1"})


# -- the wire, recorded ----------------------------------------------------------------------------------------
@dataclass
class Wire:
    """Every JSON-RPC message the client wrote to the server's stdin and read from its stdout."""

    sent: list[dict[str, Any]] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)

    def sent_requests(self, method: str | None = None) -> list[dict[str, Any]]:
        return [m for m in self.sent if "id" in m and "method" in m and method in (None, m["method"])]

    def calls(self, tool: str) -> list[dict[str, Any]]:
        """The params of every ``tools/call`` of ``tool`` the client sent (each round of a retried call)."""
        return [m["params"] for m in self.sent_requests("tools/call") if m["params"]["name"] == tool]

    @property
    def server_requests(self) -> list[dict[str, Any]]:
        """Server-to-client requests (the handshake era's way to ask the client for input)."""
        return [m for m in self.received if "id" in m and "method" in m]


def _record(item: SessionMessage | Exception, into: list[dict[str, Any]]) -> None:
    if isinstance(item, SessionMessage):
        into.append(item.message.model_dump(by_alias=True, mode="json", exclude_none=True))


class _TapRead:
    def __init__(self, inner: ReadStream[SessionMessage | Exception], into: list[dict[str, Any]]) -> None:
        self._inner = inner
        self._into = into

    @property
    def last_context(self) -> Any:  # the dispatcher runs handlers in the sender's context when it can
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        item = await self._inner.receive()
        _record(item, self._into)
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        item = await self._inner.__anext__()
        _record(item, self._into)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None,
                        exc_tb: TracebackType | None) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc_val, exc_tb)


class _TapWrite:
    def __init__(self, inner: WriteStream[SessionMessage], into: list[dict[str, Any]]) -> None:
        self._inner = inner
        self._into = into

    async def send(self, item: SessionMessage, /) -> None:
        _record(item, self._into)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None,
                        exc_tb: TracebackType | None) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc_val, exc_tb)


@asynccontextmanager
async def recorded(transport: AbstractAsyncContextManager[TransportStreams], wire: Wire) -> AsyncIterator[
        TransportStreams]:
    async with transport as (read_stream, write_stream):
        yield _TapRead(read_stream, wire.received), _TapWrite(write_stream, wire.sent)


@asynccontextmanager
async def connect(target: str = EVERYTHING, mode: str = "auto", wire: Wire | None = None,
                  **options: Any) -> AsyncIterator[Client]:
    """A connected client; on exit, checks the transport never saw a line that was not a JSON-RPC message,
    and that a stateless-era client never started a handshake."""
    wire = wire if wire is not None else Wire()
    problems: list[Exception] = []
    on_message = options.pop("message_handler", None)

    async def handle(message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            problems.append(message)
        if on_message is not None:
            await on_message(message)

    async with Client(recorded(stdio_client(server_params(target)), wire), mode=mode, read_timeout_seconds=WAIT,
                      message_handler=handle, **options) as client:
        assert client.protocol_version == VERSION[mode]
        yield client
    assert problems == []
    methods = [m["method"] for m in wire.sent if "method" in m]
    if mode == "auto":
        assert "initialize" not in methods
        assert "notifications/initialized" not in methods
        assert all(m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == STATELESS
                   for m in wire.sent_requests())  # every request describes itself
    else:
        assert "server/discover" not in methods
        assert methods[:2] == ["initialize", "notifications/initialized"]


def only_text(blocks: list[Any]) -> str:
    (block,) = blocks
    assert isinstance(block, TextContent)
    return block.text


# -- negotiation and a typed tool ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", eras(
    ("basic/versioning#protocol-version-negotiation", "server/discover#when-to-call",
     "basic/transports/stdio#request-metadata"),
    ("basic/lifecycle#initialization", "basic/lifecycle#version-negotiation")))
async def test_negotiates_the_era(mode: str) -> None:
    wire = Wire()
    async with connect(WORD_COUNT, mode, wire) as client:
        assert client.server_info is not None
        assert client.server_info.name == "word_count"
        assert client.server_capabilities.tools is not None
        if mode == "auto":
            assert client.session.discover_result is not None
            assert STATELESS in client.session.discover_result.supported_versions
            assert client.session.initialize_result is None
        else:
            assert client.session.initialize_result is not None
            assert client.session.discover_result is None
    first = wire.sent[0]
    assert first["method"] == ("server/discover" if mode == "auto" else "initialize")


@pytest.mark.parametrize("mode", eras("server/tools#structured-content", "server/tools#structured-content"))
async def test_word_count_returns_structured_content(mode: str) -> None:
    async with connect(WORD_COUNT, mode) as client:
        (tool,) = (await client.list_tools()).tools
        result = await client.call_tool("word_count", {"text": "read the wire"})
    assert tool.name == "word_count"
    assert tool.description
    assert tool.output_schema is not None
    assert tool.output_schema["properties"].keys() == {"words", "chars"}
    assert not result.is_error
    assert result.structured_content == {"words": 3, "chars": 13}
    assert only_text(result.content) == '{"words":3,"chars":13}'


# -- everything: tools ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", eras("server/tools#calling-tools", "server/tools#calling-tools"))
async def test_everything_tools(mode: str) -> None:
    async with connect(EVERYTHING, mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        simple = await client.call_tool("test_simple_text")
        image = await client.call_tool("test_image_content")
        audio = await client.call_tool("test_audio_content")
        embedded = await client.call_tool("test_embedded_resource")
        mixed = await client.call_tool("test_multiple_content_types")
        failed = await client.call_tool("test_error_handling")
        contact = await client.call_tool("json_schema_2020_12_tool", {"name": "Ada", "email": "ada@example.com"})

    assert {"test_simple_text", "test_elicitation", "test_input_required_result_multi_round"} <= set(tools)
    assert all(tool.description for tool in tools.values())
    schema = tools["json_schema_2020_12_tool"].input_schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$defs"]["address"]["$anchor"] == "address"
    assert schema["additionalProperties"] is False

    assert only_text(simple.content)
    (png,) = image.content
    assert isinstance(png, ImageContent)
    assert png.mime_type == "image/png"
    assert base64.b64decode(png.data).startswith(b"\x89PNG\r\n\x1a\n")
    (wav,) = audio.content
    assert isinstance(wav, AudioContent)
    assert wav.mime_type == "audio/wav"
    assert base64.b64decode(wav.data)[:4] == b"RIFF"
    (resource,) = embedded.content
    assert isinstance(resource, EmbeddedResource)
    assert isinstance(resource.resource, TextResourceContents)
    assert resource.resource.uri == "test://embedded-resource"
    assert [block.type for block in mixed.content] == ["text", "image", "resource"]
    assert failed.is_error
    assert only_text(failed.content)
    assert not contact.is_error
    assert "Ada" in only_text(contact.content)


@pytest.mark.parametrize("mode", eras(("basic/index#_meta", "basic/index#error-codes"), "client/sampling#capabilities"))
async def test_a_tool_needing_sampling_without_the_capability(mode: str) -> None:
    async with connect(EVERYTHING, mode) as client:
        # Both eras: a protocol error naming what is missing (-32021, as 2026-07-28 prescribes).
        with pytest.raises(MCPError) as caught:
            await client.call_tool("test_missing_capability")
        assert caught.value.code == MISSING_CAPABILITY
        assert caught.value.data == {"requiredCapabilities": {"sampling": {}}}
    async with connect(EVERYTHING, mode, sampling_callback=Answers().sample) as client:
        declared = await client.call_tool("test_missing_capability")
    assert only_text(declared.content) == "The client declared sampling."


# -- logging and progress -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", eras("server/utilities/logging#per-request-log-level",
                                      "server/utilities/logging#log-message-notifications"))
async def test_logging_callback_receives_the_tool_log_messages(mode: str) -> None:
    messages: list[LoggingMessageNotificationParams] = []
    three = anyio.Event()

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        messages.append(params)
        if len(messages) >= 3:
            three.set()

    # the stateless era: each request opts in with a log level; the handshake era: logging/setLevel
    async with connect(EVERYTHING, mode, logging_callback=on_log, log_level="debug" if mode == "auto" else None) \
            as client:
        if mode == "legacy":
            await client.set_logging_level("debug")
        result = await client.call_tool("test_tool_with_logging")
        with anyio.fail_after(WAIT):
            await three.wait()
    assert not result.is_error
    assert [(m.level, m.data) for m in messages] == [
        ("info", "Tool execution started"), ("info", "Tool processing data"), ("info", "Tool execution completed")]


@pytest.mark.spec(f"{STATELESS}/server/utilities/logging#per-request-log-level")
async def test_stateless_logging_only_for_requests_with_a_log_level() -> None:
    messages: list[LoggingMessageNotificationParams] = []
    two = anyio.Event()

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        messages.append(params)
        if len(messages) >= 2:
            two.set()

    wire = Wire()
    async with connect(EVERYTHING, "auto", wire, logging_callback=on_log) as client:  # no log_level
        silent = await client.call_tool("test_logging_tool")
        # the same tool, this one request opting in: its messages follow the first call's on the pipe
        opted_in = await client.call_tool("test_logging_tool", meta=cast(RequestParamsMeta, {LOG_LEVEL: "warning"}))
        with anyio.fail_after(WAIT):
            await two.wait()
    assert only_text(silent.content) == only_text(opted_in.content) == "logged"
    assert [(m.level, m.data) for m in messages] == [("warning", "a warning message"), ("error", "a error message")]
    first, second = wire.calls("test_logging_tool")
    assert LOG_LEVEL not in first["_meta"]
    assert second["_meta"][LOG_LEVEL] == "warning"
    assert [m["params"]["level"] for m in wire.received if m.get("method") == "notifications/message"] == [
        "warning", "error"]


@pytest.mark.parametrize("mode", eras("basic/patterns/progress#progress-flow", "basic/utilities/progress#progress-flow"))
async def test_progress_callback_receives_increasing_progress(mode: str) -> None:
    updates: list[tuple[float, float | None, str | None]] = []
    three = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))
        if len(updates) >= 3:
            three.set()

    async with connect(EVERYTHING, mode) as client:
        result = await client.call_tool("test_tool_with_progress", progress_callback=on_progress)
        with anyio.fail_after(WAIT):
            await three.wait()
    assert not result.is_error
    assert [(progress, total) for progress, total, _ in updates] == [(0, 100), (50, 100), (100, 100)]
    assert all(message for _, _, message in updates)


# -- everything: resources, prompts, completion ------------------------------------------------------------
@pytest.mark.parametrize("mode", eras("server/resources#reading-resources", "server/resources#subscriptions"))
async def test_everything_resources(mode: str) -> None:
    async with connect(EVERYTHING, mode) as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        (text,) = (await client.read_resource("test://static-text")).contents
        (blob,) = (await client.read_resource("test://static-binary")).contents
        (data,) = (await client.read_resource("test://template/123/data")).contents
        if mode == "legacy":
            assert await client.subscribe_resource("test://watched-resource") is not None
            assert await client.unsubscribe_resource("test://watched-resource") is not None
        else:  # removed in the stateless era (subscriptions/listen replaces it)
            with pytest.raises(MCPError) as caught:
                await client.subscribe_resource("test://watched-resource")
            assert caught.value.code == METHOD_NOT_FOUND

    assert listed == {"test://static-text", "test://static-binary", "test://watched-resource",
                      "skill://acme/billing/refunds/SKILL.md", "skill://pdf-processing/SKILL.md"}
    assert templates == ["test://template/{id}/data"]
    assert isinstance(text, TextResourceContents)
    assert text.mime_type == "text/plain"
    assert text.text
    assert isinstance(blob, BlobResourceContents)
    assert blob.mime_type == "image/png"
    assert base64.b64decode(blob.blob).startswith(b"\x89PNG")
    assert isinstance(data, TextResourceContents)
    assert str(data.uri) == "test://template/123/data"
    assert "123" in data.text


@pytest.mark.parametrize("mode", eras(
    ("server/prompts#getting-a-prompt", "server/utilities/completion#completion-results"),
    ("server/prompts#getting-a-prompt", "server/utilities/completion#completion-results")))
async def test_everything_prompts_and_completion(mode: str) -> None:
    async with connect(EVERYTHING, mode) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        simple = await client.get_prompt("test_simple_prompt")
        with_args = await client.get_prompt("test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"})
        embedded = await client.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://static-text"})
        image = await client.get_prompt("test_prompt_with_image")
        completed = await client.complete(PromptReference(name="test_prompt_with_arguments"),
                                          {"name": "arg1", "value": "test"})

    assert set(prompts) == {"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource",
                            "test_prompt_with_image", "test_input_required_result_prompt"}
    assert all(p.description for p in prompts.values())
    assert [(a.name, a.required) for a in prompts["test_prompt_with_arguments"].arguments or []] == [
        ("arg1", True), ("arg2", True)]
    assert simple.messages
    text = only_text([m.content for m in with_args.messages])
    assert "testValue1" in text
    assert "testValue2" in text
    assert any(isinstance(m.content, EmbeddedResource) for m in embedded.messages)
    assert any(isinstance(m.content, ImageContent) and m.content.data for m in image.messages)
    assert completed.completion.values == ["testValue1", "testValue2"]


# -- asking the client during a call ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", eras(
    ("basic/patterns/mrtr#basic-workflow", "basic/patterns/mrtr#client-requirements-basic-workflow",
     "client/elicitation#form-mode-elicitation-requests", "client/sampling#creating-messages"),
    ("client/elicitation#form-mode-elicitation-requests", "client/sampling#creating-messages")))
async def test_sampling_and_elicitation_callbacks_answer_during_a_call(mode: str) -> None:
    answers = Answers()
    wire = Wire()
    async with connect(EVERYTHING, mode, wire, sampling_callback=answers.sample,
                       elicitation_callback=answers.elicit) as client:
        sampling = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
        elicitation = await client.call_tool("test_elicitation", {"message": "Favourite colour?"})
        defaults = await client.call_tool("test_elicitation_sep1034_defaults")
        enums = await client.call_tool("test_elicitation_sep1330_enums")

    assert only_text(sampling.content) == "LLM response: Paris"
    (request,) = answers.sampled
    assert request.max_tokens > 0
    assert isinstance(request.messages[0].content, TextContent)
    assert request.messages[0].content.text == "Capital of France?"

    assert only_text(elicitation.content) == "User response: action=accept, response=blue"
    assert answers.elicited[0].message == "Favourite colour?"
    assert not defaults.is_error
    assert '"name": "John Doe"' in only_text(defaults.content)
    assert answers.elicited[1].requested_schema["properties"]["age"] == {
        "type": "integer", "description": "User age", "default": 30}
    assert not enums.is_error
    assert answers.elicited[2].requested_schema["properties"]["legacyEnum"]["enumNames"]

    if mode == "auto":  # multi round-trip: each call is answered with an input request, then retried
        assert wire.server_requests == []
        for tool in ("test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults"):
            first, retry = wire.calls(tool)
            assert "inputResponses" not in first
            assert "requestState" not in first
            assert len(retry["inputResponses"]) == 1
            assert isinstance(retry["requestState"], str)
            assert retry["requestState"]
        (answer,) = wire.calls("test_elicitation")[1]["inputResponses"].values()
        assert answer == {"action": "accept", "content": {"response": "blue"}}
        ids = [m["id"] for m in wire.sent_requests("tools/call")]
        assert len(ids) == len(set(ids))  # a retry is a new request
    else:  # the handshake era: real requests from the server, answered by the client
        assert [m["method"] for m in wire.server_requests] == [
            "sampling/createMessage", "elicitation/create", "elicitation/create", "elicitation/create"]
        assert all(len(wire.calls(tool)) == 1 for tool in ("test_sampling", "test_elicitation"))


@pytest.mark.parametrize("mode", eras(
    ("basic/patterns/mrtr#basic-workflow", "basic/patterns/mrtr#inputrequests"),
    ("client/elicitation#form-mode-elicitation-requests", "client/roots#listing-roots")))
async def test_multi_round_tool_completes_with_the_elicitation_callback(mode: str) -> None:
    answers = Answers()
    wire = Wire()
    async with connect(EVERYTHING, mode, wire, **answers.callbacks) as client:
        result = await client.call_tool("test_input_required_result_multi_round")
        inputs = await client.call_tool("test_input_required_result_multiple_inputs")
    assert only_text(result.content) == "Ada likes green."
    assert [p.message for p in answers.elicited] == [
        "Step 1: What is your name?", "Step 2: What is your favorite color?", "What is your name?"]
    assert only_text(inputs.content) == "All inputs received."
    assert len(answers.sampled) == 1
    assert answers.roots_listed == 1
    if mode == "auto":
        assert wire.server_requests == []
        rounds = wire.calls("test_input_required_result_multi_round")
        assert len(rounds) == 3  # name, then color, then the result
        (name_key,) = rounds[1]["inputResponses"]  # each retry answers only the round's own question:
        (color_key,) = rounds[2]["inputResponses"]  # the earlier answers travel in the sealed requestState
        assert name_key != color_key
        assert rounds[2]["inputResponses"][color_key]["content"] == {"color": "green"}
        assert rounds[1]["requestState"] != rounds[2]["requestState"]
        first, retry = wire.calls("test_input_required_result_multiple_inputs")
        assert "inputResponses" not in first
        assert set(retry["inputResponses"]) == {"user_name", "greeting", "client_roots"}
    else:
        assert sorted(m["method"] for m in wire.server_requests) == [
            "elicitation/create", "elicitation/create", "elicitation/create", "roots/list", "sampling/createMessage"]


# -- change notifications ------------------------------------------------------------------------------------
@pytest.mark.spec(f"{STATELESS}/basic/patterns/subscriptions#receiving-notifications")
@pytest.mark.spec(f"{STATELESS}/server/tools#list-changed-notification")
async def test_listen_receives_list_changes_in_the_stateless_era() -> None:
    wire = Wire()
    async with connect(EVERYTHING, "auto", wire) as client, client.listen(
            tools_list_changed=True, prompts_list_changed=True) as subscription:
        assert subscription.honored.tools_list_changed is True
        assert subscription.honored.prompts_list_changed is True
        assert only_text((await client.call_tool("test_trigger_tool_change")).content) == "tool list changed"
        await client.call_tool("test_trigger_prompt_change")
        events: set[object] = set()
        with anyio.fail_after(WAIT):
            async for event in subscription:
                events.add(event)
                if events >= {ToolsListChanged(), PromptsListChanged()}:
                    break
        tools = {tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools}
    assert "transient_tool" not in tools
    (listen,) = wire.sent_requests("subscriptions/listen")
    changes = [m for m in wire.received if m.get("method") == "notifications/tools/list_changed"]
    assert changes
    assert all(m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen["id"] for m in changes)


@pytest.mark.spec(f"{LEGACY}/server/tools#list-changed-notification")
async def test_list_changes_reach_an_initialized_session_in_the_handshake_era() -> None:
    changed = anyio.Event()
    seen: list[object] = []

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, ToolListChangedNotification | PromptListChangedNotification):
            seen.append(message)
            changed.set()

    async with connect(EVERYTHING, "legacy", message_handler=on_message) as client:
        with pytest.raises(ListenNotSupportedError):
            async with client.listen(tools_list_changed=True):
                pass
        await client.call_tool("test_trigger_tool_change")
        with anyio.fail_after(WAIT):
            await changed.wait()
    assert isinstance(seen[0], ToolListChangedNotification)
