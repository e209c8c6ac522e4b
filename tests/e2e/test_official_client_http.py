"""The official MCP Python SDK client (``mcp``) against a real ``uvicorn app:asgi`` over Streamable HTTP.

One uvicorn process serves ``examples.everything:server`` for the module. In its default
``mode="auto"`` the client first probes ``server/discover`` without a session; the server answers
400 with a JSON-RPC error and the client falls back to ``initialize``. ``mode="legacy"`` goes
straight to ``initialize``. Every HTTP exchange is recorded, so the tests also check that the
client ends its session with ``DELETE`` and that the server forgets it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
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
    TextContent,
    TextResourceContents,
)

from tests.support_http import UvicornProcess, post_headers, request_body, run_uvicorn

EVERYTHING = "examples.everything:server"
WAIT = 10.0  # an upper bound for awaited things, never a sleep
TRANSPORTS = "2025-11-25/basic/transports"
MODES = ["auto", "legacy"]

pytestmark = [
    # logging/setLevel and resources/(un)subscribe are deprecated in 2026-07-28; this server speaks 2025-11-25
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
    pytest.mark.timeout(30),
]


@pytest.fixture(scope="module")
def everything() -> Iterator[UvicornProcess]:
    with run_uvicorn(EVERYTHING) as server:
        yield server
        output = server.output()
    assert "Traceback" not in output, output


@dataclass
class Exchanges:
    """(method, Mcp-Session-Id sent, status) of every HTTP request the client made."""

    seen: list[tuple[str, str | None, int]] = field(default_factory=list)

    async def record(self, response: httpx2.Response) -> None:
        request = response.request
        self.seen.append((request.method, request.headers.get("mcp-session-id"), response.status_code))

    @property
    def session_id(self) -> str:
        ids = {sid for _, sid, _ in self.seen if sid is not None}
        assert len(ids) == 1, self.seen
        return ids.pop()


@asynccontextmanager
async def connect(server: UvicornProcess, mode: str = "auto", exchanges: Exchanges | None = None,
                  **callbacks: Any) -> AsyncIterator[Client]:
    """A connected client; on exit, checks it ended its session with DELETE and the server forgot it."""
    exchanges = exchanges if exchanges is not None else Exchanges()
    problems: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            problems.append(message)

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(WAIT, read=60.0),
                                  event_hooks={"response": [exchanges.record]}) as http:
        transport = streamable_http_client(server.url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=WAIT, message_handler=on_message,
                          **callbacks) as client:
            yield client
    assert problems == []
    sid = exchanges.session_id
    assert ("DELETE", sid, 200) in exchanges.seen
    async with httpx.AsyncClient(timeout=WAIT) as raw:
        after = await raw.post(server.url, content=json.dumps(request_body(1, "ping")),
                               headers=post_headers(**{"mcp-session-id": sid}))
    assert after.status_code == 404


def only_text(blocks: list[Any]) -> str:
    (block,) = blocks
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.spec(f"{TRANSPORTS}#session-management")
@pytest.mark.spec("2025-11-25/basic/lifecycle#initialization")
async def test_connects_lists_and_calls_tools(mode: str, everything: UvicornProcess) -> None:
    exchanges = Exchanges()
    async with connect(everything, mode, exchanges) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.session.initialize_result is not None  # auto mode fell back from server/discover
        assert client.session.discover_result is None
        assert client.server_info is not None
        assert client.server_info.name == "mcpwire-everything"
        assert client.server_capabilities.tools is not None
        tools = {tool.name for tool in (await client.list_tools()).tools}
        simple = await client.call_tool("test_simple_text")
        image = await client.call_tool("test_image_content")
        failed = await client.call_tool("test_error_handling")
    assert {"test_simple_text", "test_sampling", "test_elicitation", "test_tool_with_logging"} <= tools
    assert only_text(simple.content) == "This is a simple text response for testing."
    (png,) = image.content
    assert isinstance(png, ImageContent)
    assert base64.b64decode(png.data).startswith(b"\x89PNG\r\n\x1a\n")
    assert failed.is_error
    sid = exchanges.session_id
    handshake = [("POST", None, 200), ("POST", sid, 202)]  # initialize, then notifications/initialized
    if mode == "auto":
        handshake.insert(0, ("POST", None, 400))  # server/discover without a session: not a modern server
    posts = [e for e in exchanges.seen if e[0] == "POST"]  # the GET stream opens concurrently
    assert posts[:len(handshake)] == handshake
    assert exchanges.seen[-1] == ("DELETE", sid, 200)


@pytest.mark.spec("2025-11-25/server/resources#reading-resources")
@pytest.mark.spec("2025-11-25/server/prompts#getting-a-prompt")
async def test_reads_resources_and_gets_prompts(everything: UvicornProcess) -> None:
    async with connect(everything) as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        (text,) = (await client.read_resource("test://static-text")).contents
        (blob,) = (await client.read_resource("test://static-binary")).contents
        (data,) = (await client.read_resource("test://template/42/data")).contents
        await client.subscribe_resource("test://watched-resource")
        await client.unsubscribe_resource("test://watched-resource")
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        with_args = await client.get_prompt("test_prompt_with_arguments", {"arg1": "one", "arg2": "two"})
        embedded = await client.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://x"})
    assert {"test://static-text", "test://static-binary", "test://watched-resource"} <= listed
    assert isinstance(text, TextResourceContents)
    assert text.text == "This is the content of the static text resource."
    assert isinstance(blob, BlobResourceContents)
    assert base64.b64decode(blob.blob).startswith(b"\x89PNG")
    assert isinstance(data, TextResourceContents)
    assert json.loads(data.text)["id"] == "42"
    assert "test_simple_prompt" in prompts
    message = only_text([m.content for m in with_args.messages])
    assert "arg1='one'" in message
    assert "arg2='two'" in message
    assert any(isinstance(m.content, EmbeddedResource) for m in embedded.messages)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.spec(f"{TRANSPORTS}#sending-messages-to-the-server")
@pytest.mark.spec("2025-11-25/client/sampling#creating-messages")
@pytest.mark.spec("2025-11-25/client/elicitation#form-mode-elicitation-requests")
async def test_answers_an_elicitation_and_a_sampling_request_during_a_call(
        mode: str, everything: UvicornProcess) -> None:
    sampled: list[CreateMessageRequestParams] = []
    elicited: list[ElicitRequestFormParams] = []

    async def sample(context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        sampled.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Paris"),
                                   model="test-model", stop_reason="endTurn")

    async def elicit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        assert isinstance(params, ElicitRequestFormParams)
        elicited.append(params)
        return ElicitResult(action="accept", content={"response": "blue"})

    async with connect(everything, mode, sampling_callback=sample, elicitation_callback=elicit) as client:
        sampling = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
        elicitation = await client.call_tool("test_elicitation", {"message": "Favourite colour?"})
    assert only_text(sampling.content) == "LLM response: Paris"
    (request,) = sampled
    assert isinstance(request.messages[0].content, TextContent)
    assert request.messages[0].content.text == "Capital of France?"
    assert only_text(elicitation.content) == "User response: action=accept, response=blue"
    (question,) = elicited
    assert question.message == "Favourite colour?"
    assert "response" in question.requested_schema["properties"]


@pytest.mark.spec("2025-11-25/server/utilities/logging#log-message-notifications")
async def test_the_logging_callback_receives_the_tools_log_messages(everything: UvicornProcess) -> None:
    messages: list[LoggingMessageNotificationParams] = []
    three = anyio.Event()

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        messages.append(params)
        if len(messages) >= 3:
            three.set()

    async with connect(everything, logging_callback=on_log) as client:
        await client.set_logging_level("debug")
        result = await client.call_tool("test_tool_with_logging")
        with anyio.fail_after(WAIT):
            await three.wait()
    assert not result.is_error
    assert [(m.level, m.data) for m in messages] == [
        ("info", "Tool execution started"), ("info", "Tool processing data"), ("info", "Tool execution completed")]


@pytest.mark.spec("2025-11-25/basic/utilities/progress#progress-flow")
async def test_the_progress_callback_receives_increasing_progress(everything: UvicornProcess) -> None:
    updates: list[tuple[float, float | None]] = []
    three = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total))
        if len(updates) >= 3:
            three.set()

    async with connect(everything) as client:
        result = await client.call_tool("test_tool_with_progress", progress_callback=on_progress)
        with anyio.fail_after(WAIT):
            await three.wait()
    assert not result.is_error
    assert updates == [(0, 100), (50, 100), (100, 100)]
