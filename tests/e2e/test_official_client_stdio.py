"""The official MCP Python SDK client (``mcp``) driving real server processes over stdio.

Each test starts ``python -m app.cli stdio MODULE:ATTR`` as the SDK's stdio transport does
and talks to it through ``mcp.Client``. In its default ``mode="auto"`` the client first
probes ``server/discover``; the server answers -32601 (a handshake-era server) and the
client falls back to ``initialize``. ``mode="legacy"`` goes straight to ``initialize``.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext, IncomingMessage
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    EmbeddedResource,
    ErrorData,
    ImageContent,
    LoggingMessageNotificationParams,
    PromptReference,
    TextContent,
    TextResourceContents,
)

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = "examples.everything:server"
WORD_COUNT = "examples.word_count:server"
WAIT = 10.0  # an upper bound for awaited events, never a sleep

pytestmark = [
    # logging/setLevel and resources/(un)subscribe are deprecated in 2026-07-28; these servers speak 2025-11-25
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
    pytest.mark.timeout(30),
]


def server_params(target: str) -> StdioServerParameters:
    # The SDK passes the child only a minimal environment (HOME, PATH, ...): add what the server needs.
    return StdioServerParameters(command=sys.executable, args=["-m", "app.cli", "stdio", target], cwd=ROOT,
                                 env={"MCPWIRE_LOG_LEVEL": "WARNING", "PYTHONDONTWRITEBYTECODE": "1"})


@asynccontextmanager
async def connect(target: str = EVERYTHING, mode: str = "auto", **callbacks: Any) -> AsyncIterator[Client]:
    """A connected client; on exit, checks the transport never saw a line that was not a JSON-RPC message."""
    problems: list[Exception] = []

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            problems.append(message)

    async with Client(server_params(target), mode=mode, read_timeout_seconds=WAIT, message_handler=on_message,
                      **callbacks) as client:
        yield client
    assert problems == []


def only_text(blocks: list[Any]) -> str:
    (block,) = blocks
    assert isinstance(block, TextContent)
    return block.text


# -- handshake and a typed tool -------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.spec("2025-11-25/basic/lifecycle#initialization")
async def test_connects_with_the_initialize_handshake(mode: str) -> None:
    async with connect(WORD_COUNT, mode) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.session.initialize_result is not None  # auto mode fell back from server/discover
        assert client.session.discover_result is None
        assert client.server_info is not None
        assert client.server_info.name == "word_count"
        assert client.server_capabilities.tools is not None


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.spec("2025-11-25/server/tools#structured-content")
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
@pytest.mark.spec("2025-11-25/server/tools#calling-tools")
async def test_everything_tools() -> None:
    async with connect() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        simple = await client.call_tool("test_simple_text")
        image = await client.call_tool("test_image_content")
        audio = await client.call_tool("test_audio_content")
        embedded = await client.call_tool("test_embedded_resource")
        mixed = await client.call_tool("test_multiple_content_types")
        failed = await client.call_tool("test_error_handling")
        contact = await client.call_tool("json_schema_2020_12_tool", {"name": "Ada", "email": "ada@example.com"})

    assert "test_simple_text" in tools
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


@pytest.mark.spec("2025-11-25/server/utilities/logging#log-message-notifications")
async def test_logging_callback_receives_the_tool_log_messages() -> None:
    messages: list[LoggingMessageNotificationParams] = []
    three = anyio.Event()

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        messages.append(params)
        if len(messages) >= 3:
            three.set()

    async with connect(logging_callback=on_log) as client:
        await client.set_logging_level("debug")
        result = await client.call_tool("test_tool_with_logging")
        with anyio.fail_after(WAIT):
            await three.wait()
    assert not result.is_error
    assert [m.level for m in messages] == ["info", "info", "info"]
    assert all(isinstance(m.data, str) and m.data for m in messages)


@pytest.mark.spec("2025-11-25/basic/utilities/progress#progress-flow")
async def test_progress_callback_receives_increasing_progress() -> None:
    updates: list[tuple[float, float | None, str | None]] = []
    three = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))
        if len(updates) >= 3:
            three.set()

    async with connect() as client:
        result = await client.call_tool("test_tool_with_progress", progress_callback=on_progress)
        with anyio.fail_after(WAIT):
            await three.wait()
    assert not result.is_error
    assert [(progress, total) for progress, total, _ in updates] == [(0, 100), (50, 100), (100, 100)]
    assert all(message for _, _, message in updates)


# -- everything: resources, prompts, completion ------------------------------------------------------------
@pytest.mark.spec("2025-11-25/server/resources#reading-resources")
async def test_everything_resources() -> None:
    async with connect() as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        (text,) = (await client.read_resource("test://static-text")).contents
        (blob,) = (await client.read_resource("test://static-binary")).contents
        (data,) = (await client.read_resource("test://template/123/data")).contents
        subscribed = await client.subscribe_resource("test://watched-resource")
        unsubscribed = await client.unsubscribe_resource("test://watched-resource")

    assert listed == {"test://static-text", "test://static-binary", "test://watched-resource"}
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
    assert subscribed is not None
    assert unsubscribed is not None


@pytest.mark.spec("2025-11-25/server/prompts#getting-a-prompt")
async def test_everything_prompts_and_completion() -> None:
    async with connect() as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        simple = await client.get_prompt("test_simple_prompt")
        with_args = await client.get_prompt("test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"})
        embedded = await client.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://static-text"})
        image = await client.get_prompt("test_prompt_with_image")
        completed = await client.complete(PromptReference(name="test_prompt_with_arguments"),
                                          {"name": "arg1", "value": "test"})

    assert set(prompts) == {"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource",
                            "test_prompt_with_image"}
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
@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.spec("2025-11-25/client/sampling#creating-messages")
@pytest.mark.spec("2025-11-25/client/elicitation#form-mode-elicitation-requests")
async def test_sampling_and_elicitation_callbacks_answer_during_a_call(mode: str) -> None:
    sampled: list[CreateMessageRequestParams] = []
    elicited: list[ElicitRequestFormParams] = []

    async def sample(context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        sampled.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Paris"),
                                   model="test-model", stop_reason="endTurn")

    async def elicit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        assert isinstance(params, ElicitRequestFormParams)
        elicited.append(params)
        if "response" in params.requested_schema["properties"]:
            return ElicitResult(action="accept", content={"response": "blue"})
        defaults = {name: prop.get("default") for name, prop in params.requested_schema["properties"].items()}
        return ElicitResult(action="accept", content=defaults)

    async with connect(mode=mode, sampling_callback=sample, elicitation_callback=elicit) as client:
        sampling = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
        elicitation = await client.call_tool("test_elicitation", {"message": "Favourite colour?"})
        defaults = await client.call_tool("test_elicitation_sep1034_defaults")
        enums = await client.call_tool("test_elicitation_sep1330_enums")

    assert not sampling.is_error
    assert "Paris" in only_text(sampling.content)
    (request,) = sampled
    assert request.max_tokens > 0
    assert isinstance(request.messages[0].content, TextContent)
    assert request.messages[0].content.text == "Capital of France?"

    assert not elicitation.is_error
    assert "blue" in only_text(elicitation.content)
    assert elicited[0].message == "Favourite colour?"
    assert not defaults.is_error
    assert '"name": "John Doe"' in only_text(defaults.content)
    assert elicited[1].requested_schema["properties"]["age"] == {"type": "integer", "description": "User age",
                                                                 "default": 30}
    assert not enums.is_error
    assert elicited[2].requested_schema["properties"]["legacyEnum"]["enumNames"]
