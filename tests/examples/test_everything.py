"""examples/everything.py against the shape rules of the official conformance suite, in process.

The rules come from /work/shared/spec/conformance-fixtures.md: every fixture name the suite
looks for is present, and each answers with the shape the suite checks. The first part drives
the server in the handshake era (2025-11-25, ``initialize``); the last part in the stateless era
(2026-07-28: per-request ``_meta``, ``InputRequiredResult`` instead of server-to-client requests,
``subscriptions/listen``), where the in-memory client answers input requests and retries by itself.
"""

from __future__ import annotations

import asyncio
import base64
import io
import struct
import wave
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from examples.everything import CONFIRM_SCHEMA, CONTACT_SCHEMA, NAME_SCHEMA, server
from wiremcp.errors import MCPError
from wiremcp.protocol import META_SERVER_INFO, META_SUBSCRIPTION
from wiremcp.subscriptions import InMemorySubscriptionBus
from wiremcp.transports.memory import Client, ClientHandler
from wiremcp.types import JSONObject

HANDSHAKE_TOOLS = {
    "test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
    "test_multiple_content_types", "test_tool_with_logging", "test_error_handling", "test_tool_with_progress",
    "test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool", "test_reconnection",
}
INPUT_REQUIRED_TOOLS = {
    "test_input_required_result_elicitation", "test_input_required_result_sampling",
    "test_input_required_result_list_roots", "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state", "test_input_required_result_capabilities",
}
STATELESS_TOOLS = {
    "test_missing_capability", "test_x_mcp_header", "test_logging_tool", "test_streaming_elicitation",
    "test_trigger_tool_change", "test_trigger_prompt_change", *INPUT_REQUIRED_TOOLS,
}
TASK_TOOLS = {"greet", "slow_compute", "failing_job", "protocol_error_job", "confirm_delete", "multi_input",
              "test_tool_with_task"}
"""The tasks extension scenarios' fixtures (both eras' tasks)."""
TOOLS = HANDSHAKE_TOOLS | STATELESS_TOOLS | TASK_TOOLS
RESOURCES = {"test://static-text", "test://static-binary", "test://watched-resource",
             "skill://acme/billing/refunds/SKILL.md", "skill://pdf-processing/SKILL.md"}
"""The conformance fixtures, and the skills of ``examples/skills/library`` (for the ``sep-2640-*`` scenarios)."""
TEMPLATES = {"test://template/{id}/data"}
PROMPTS = {"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource",
           "test_prompt_with_image", "test_input_required_result_prompt"}
WAIT = 20.0  # an upper bound for awaited events, never a sleep; generous, for loaded machines
STATELESS = "2026-07-28"


@asynccontextmanager
async def connect(*, elicitation: ClientHandler | None = None,
                  sampling: ClientHandler | None = None) -> AsyncIterator[Client]:
    async with Client(server, elicitation=elicitation, sampling=sampling) as client:
        yield client


def png_chunks(data: bytes) -> list[bytes]:
    """The chunk types of a PNG, checking the signature and every chunk's CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    kinds, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body)
        kinds.append(kind)
        pos += 12 + length
    return kinds


def assert_png(encoded: str) -> None:
    assert png_chunks(base64.b64decode(encoded, validate=True)) == [b"IHDR", b"IDAT", b"IEND"]


def blocks(result: JSONObject, kind: str) -> list[JSONObject]:
    return [block for block in result["content"] if block["type"] == kind]


# -- lists ----------------------------------------------------------------------------------------------
@pytest.mark.spec("2025-11-25/server/tools#listing-tools")
async def test_tools_list_has_exactly_the_fixtures_each_described() -> None:
    async with connect() as client:
        tools = await client.list_tools()
    assert {tool["name"] for tool in tools} == TOOLS
    for tool in tools:
        assert tool["description"], tool["name"]
        assert tool["inputSchema"]["type"] == "object", tool["name"]


@pytest.mark.spec("2025-11-25/basic/lifecycle#capability-negotiation")
async def test_capabilities_declare_every_feature_served() -> None:
    async with connect() as client:
        assert client.initialize_result is not None
        caps = client.initialize_result["capabilities"]
        assert await client.ping() == {}
    assert caps["tools"] == {"listChanged": True}
    assert caps["resources"]["subscribe"] is True
    assert "prompts" in caps
    assert "completions" in caps
    assert "logging" in caps


# -- content --------------------------------------------------------------------------------------------
@pytest.mark.spec("2025-11-25/server/tools#text-content")
async def test_simple_text() -> None:
    async with connect() as client:
        result = await client.call_tool("test_simple_text")
    assert "isError" not in result
    assert [block["text"] for block in blocks(result, "text") if block["text"]]


@pytest.mark.spec("2025-11-25/server/tools#image-content")
async def test_image_content_is_a_real_png() -> None:
    async with connect() as client:
        result = await client.call_tool("test_image_content")
    (image,) = blocks(result, "image")
    assert image["mimeType"] == "image/png"
    assert_png(image["data"])


@pytest.mark.spec("2025-11-25/server/tools#audio-content")
async def test_audio_content_is_a_real_wav() -> None:
    async with connect() as client:
        result = await client.call_tool("test_audio_content")
    (audio,) = blocks(result, "audio")
    assert audio["mimeType"] == "audio/wav"
    with wave.open(io.BytesIO(base64.b64decode(audio["data"], validate=True))) as wav:
        assert wav.getnchannels() == 1
        assert wav.getnframes() > 0


@pytest.mark.spec("2025-11-25/server/tools#embedded-resources")
async def test_embedded_resource() -> None:
    async with connect() as client:
        result = await client.call_tool("test_embedded_resource")
    (block,) = blocks(result, "resource")
    assert block["resource"] == {"uri": "test://embedded-resource", "mimeType": "text/plain",
                                 "text": "This is an embedded resource content."}


@pytest.mark.spec("2025-11-25/server/tools#tool-result")
async def test_multiple_content_types() -> None:
    async with connect() as client:
        result = await client.call_tool("test_multiple_content_types")
    assert [block["type"] for block in result["content"]] == ["text", "image", "resource"]
    assert_png(blocks(result, "image")[0]["data"])
    resource = blocks(result, "resource")[0]["resource"]
    assert resource["uri"] == "test://mixed-content-resource"
    assert resource["mimeType"] == "application/json"
    assert '"value": 123' in resource["text"]


# -- notifications and errors -----------------------------------------------------------------------------
@pytest.mark.spec("2025-11-25/server/utilities/logging#log-message-notifications")
async def test_tool_with_logging_sends_three_messages_at_debug_level() -> None:
    async with connect() as client:
        assert await client.set_logging_level("debug") == {}
        result = await client.call_tool("test_tool_with_logging")
        messages = await asyncio.wait_for(client.wait_for_notification("notifications/message", 3), WAIT)
    assert "isError" not in result
    assert len(messages) == 3
    for message in messages:
        assert message["params"]["level"] == "info"
        assert message["params"]["data"]


@pytest.mark.spec("2025-11-25/server/utilities/logging#setting-log-level")
async def test_tool_with_logging_is_silent_above_info() -> None:
    async with connect() as client:
        await client.set_logging_level("warning")
        result = await client.call_tool("test_tool_with_logging")
        # messages are written before the response on the same channel, so none can still be on the way
        assert not [n for n in client.notifications if n["method"] == "notifications/message"]
    assert "isError" not in result


@pytest.mark.spec("2025-11-25/server/tools#error-handling")
async def test_error_handling_is_a_result_not_a_protocol_error() -> None:
    async with connect() as client:
        response = await client.request_raw("tools/call", {"name": "test_error_handling", "arguments": {}})
    assert "error" not in response
    result = response["result"]
    assert result["isError"] is True
    assert result["content"][0]["type"] == "text"
    assert result["content"][0]["text"]


@pytest.mark.spec("2025-11-25/basic/utilities/progress#progress-flow")
async def test_tool_with_progress_reports_non_decreasing_progress() -> None:
    async with connect() as client:
        result = await client.call_tool("test_tool_with_progress", progress_token="progress-test-1")
        notes = await asyncio.wait_for(client.wait_for_notification("notifications/progress", 3), WAIT)
    assert "isError" not in result
    params = [note["params"] for note in notes]
    assert all(p["progressToken"] == "progress-test-1" for p in params)
    values = [p["progress"] for p in params]
    assert values == sorted(values)
    assert values == [0, 50, 100]
    assert all(p["total"] == 100 for p in params)


@pytest.mark.spec("2025-11-25/basic/utilities/progress#progress-flow")
async def test_tool_with_progress_is_silent_without_a_token() -> None:
    async with connect() as client:
        result = await client.call_tool("test_tool_with_progress")
        assert not [n for n in client.notifications if n["method"] == "notifications/progress"]
    assert "isError" not in result


async def test_reconnection_returns_text() -> None:
    async with connect() as client:
        result = await client.call_tool("test_reconnection")
    assert "isError" not in result
    assert blocks(result, "text")[0]["text"]


# -- asking the client --------------------------------------------------------------------------------------
@pytest.mark.spec("2025-11-25/client/sampling#creating-messages")
async def test_sampling_asks_the_client_during_the_call() -> None:
    requests: list[JSONObject] = []

    async def sample(params: JSONObject) -> JSONObject:
        requests.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "test-model",
                "stopReason": "endTurn"}

    async with connect(sampling=sample) as client:
        result = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
    (request,) = requests
    assert request["messages"] == [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}]
    assert request["maxTokens"] > 0
    assert "isError" not in result
    assert "Paris" in result["content"][0]["text"]


async def test_sampling_without_the_capability_is_error_32021_in_the_handshake_era_too() -> None:
    async with connect() as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("test_sampling", {"prompt": "hello"})
    assert caught.value.code == -32021
    assert caught.value.data == {"requiredCapabilities": {"sampling": {}}}


@pytest.mark.spec("2025-11-25/client/elicitation#form-mode-elicitation-requests")
async def test_elicitation_asks_the_user_during_the_call() -> None:
    requests: list[JSONObject] = []

    async def elicit(params: JSONObject) -> JSONObject:
        requests.append(params)
        return {"action": "accept", "content": {"response": "blue"}}

    async with connect(elicitation=elicit) as client:
        result = await client.call_tool("test_elicitation", {"message": "Favourite colour?"})
    (request,) = requests
    assert request["mode"] == "form"
    assert request["message"] == "Favourite colour?"
    schema = request["requestedSchema"]
    assert schema["type"] == "object"
    assert schema["properties"]["response"]["type"] == "string"
    assert "isError" not in result
    assert "action=accept" in result["content"][0]["text"]
    assert "blue" in result["content"][0]["text"]


@pytest.mark.spec("2025-11-25/client/elicitation#response-actions")
async def test_elicitation_reports_a_decline() -> None:
    async def decline(params: JSONObject) -> JSONObject:
        return {"action": "decline"}

    async with connect(elicitation=decline) as client:
        result = await client.call_tool("test_elicitation", {"message": "Favourite colour?"})
    assert "isError" not in result
    assert "action=decline" in result["content"][0]["text"]


async def requested_schema(tool: str) -> JSONObject:
    """The ``requestedSchema`` a tool sends, answered with a cancel."""
    requests: list[JSONObject] = []

    async def cancel(params: JSONObject) -> JSONObject:
        requests.append(params)
        return {"action": "cancel"}

    async with connect(elicitation=cancel) as client:
        result = await client.call_tool(tool)
    assert "isError" not in result
    assert result["content"][0]["text"]
    (request,) = requests
    schema: JSONObject = request["requestedSchema"]
    return schema


@pytest.mark.spec("2025-11-25/client/elicitation#requested-schema")
async def test_elicitation_sep1034_defaults() -> None:
    properties = (await requested_schema("test_elicitation_sep1034_defaults"))["properties"]
    assert properties["name"]["type"] == "string"
    assert properties["name"]["default"] == "John Doe"
    assert properties["age"]["type"] == "integer"
    assert properties["age"]["default"] == 30
    assert properties["score"]["type"] == "number"
    assert properties["score"]["default"] == 95.5
    assert properties["status"]["type"] == "string"
    assert properties["status"]["default"] == "active"
    assert "active" in properties["status"]["enum"]
    assert properties["verified"]["type"] == "boolean"
    assert properties["verified"]["default"] is True


@pytest.mark.spec("2025-11-25/client/elicitation#requested-schema")
async def test_elicitation_sep1330_enums() -> None:
    properties = (await requested_schema("test_elicitation_sep1330_enums"))["properties"]

    untitled = properties["untitledSingle"]
    assert untitled["type"] == "string"
    assert untitled["enum"]
    assert "oneOf" not in untitled
    assert "enumNames" not in untitled

    titled = properties["titledSingle"]
    assert titled["type"] == "string"
    assert "enum" not in titled
    assert titled["oneOf"]
    assert all(set(option) == {"const", "title"} for option in titled["oneOf"])

    legacy = properties["legacyEnum"]
    assert legacy["type"] == "string"
    assert legacy["enum"]
    assert len(legacy["enumNames"]) == len(legacy["enum"])

    untitled_multi = properties["untitledMulti"]
    assert untitled_multi["type"] == "array"
    assert untitled_multi["items"]["type"] == "string"
    assert untitled_multi["items"]["enum"]

    titled_multi = properties["titledMulti"]
    assert titled_multi["type"] == "array"
    options = titled_multi["items"]["anyOf"]
    assert options
    assert all(set(option) == {"const", "title"} for option in options)


# -- JSON Schema 2020-12 --------------------------------------------------------------------------------------
@pytest.mark.spec("2025-11-25/server/tools#tool")
async def test_json_schema_2020_12_tool_schema_is_listed_as_written() -> None:
    async with connect() as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
    schema = tools["json_schema_2020_12_tool"]["inputSchema"]
    assert schema == CONTACT_SCHEMA
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$defs"]["address"]["$anchor"] == "address"
    assert schema["properties"]["address"] == {"$ref": "#/$defs/address"}
    assert schema["additionalProperties"] is False
    assert {"allOf", "if", "then", "else"} <= set(schema)
    assert "anyOf" in schema["allOf"][0]


@pytest.mark.parametrize(("arguments", "accepted"), [
    ({"name": "Ada", "email": "ada@example.com"}, True),
    ({"name": "Ada", "contactMethod": "phone", "phone": "+44 1",
      "address": {"street": "1 Lane", "city": "London"}}, True),
    ({"name": "Ada"}, False),  # neither phone nor email
    ({"name": "Ada", "contactMethod": "phone", "email": "ada@example.com"}, False),  # if/then: phone required
    ({"name": "Ada", "email": "a@b", "address": {"street": "1 Lane"}}, False),  # $defs.address: city required
    ({"name": "Ada", "email": "a@b", "nickname": "A"}, False),  # additionalProperties: false
])
@pytest.mark.spec("2025-11-25/server/tools#error-handling")
async def test_json_schema_2020_12_tool_validates_arguments(arguments: JSONObject, accepted: bool) -> None:
    async with connect() as client:
        result = await client.call_tool("json_schema_2020_12_tool", arguments)
    assert result.get("isError", False) is not accepted
    if accepted:
        assert result["content"][0]["text"].startswith("Contact accepted")


# -- resources ------------------------------------------------------------------------------------------------
@pytest.mark.spec("2025-11-25/server/resources#listing-resources")
async def test_resources_and_templates_are_listed_with_uri_and_name() -> None:
    async with connect() as client:
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
    assert {r["uri"] for r in resources} == RESOURCES
    assert all(r["name"] for r in resources)
    assert {t["uriTemplate"] for t in templates} == TEMPLATES
    assert all(t["name"] for t in templates)


@pytest.mark.spec("2025-11-25/server/resources#text-content")
async def test_read_static_text() -> None:
    async with connect() as client:
        (contents,) = (await client.read_resource("test://static-text"))["contents"]
    assert contents["uri"] == "test://static-text"
    assert contents["mimeType"] == "text/plain"
    assert contents["text"]


@pytest.mark.spec("2025-11-25/server/resources#binary-content")
async def test_read_static_binary() -> None:
    async with connect() as client:
        (contents,) = (await client.read_resource("test://static-binary"))["contents"]
    assert contents["uri"] == "test://static-binary"
    assert contents["mimeType"] == "image/png"
    assert_png(contents["blob"])


@pytest.mark.spec("2025-11-25/server/resources#resource-templates")
async def test_read_template_substitutes_the_id() -> None:
    async with connect() as client:
        (contents,) = (await client.read_resource("test://template/123/data"))["contents"]
    assert contents["uri"] == "test://template/123/data"
    assert "123" in contents["text"]


@pytest.mark.spec("2025-11-25/server/resources#subscriptions")
async def test_watched_resource_subscribe_and_unsubscribe() -> None:
    uri = "test://watched-resource"
    async with connect() as client:
        assert (await client.read_resource(uri))["contents"][0]["text"]
        assert await client.subscribe(uri) == {}
        server.resource_updated(uri)
        (update,) = await asyncio.wait_for(client.wait_for_notification("notifications/resources/updated"), WAIT)
        assert update["params"] == {"uri": uri}
        assert await client.unsubscribe(uri) == {}
        assert uri not in client.session.state.subscriptions


# -- prompts and completion -------------------------------------------------------------------------------------
@pytest.mark.spec("2025-11-25/server/prompts#listing-prompts")
async def test_prompts_are_listed_with_descriptions_and_arguments() -> None:
    async with connect() as client:
        prompts = {prompt["name"]: prompt for prompt in await client.list_prompts()}
    assert set(prompts) == PROMPTS
    assert all(prompt["description"] for prompt in prompts.values())
    arguments = prompts["test_prompt_with_arguments"]["arguments"]
    assert [(a["name"], a["required"]) for a in arguments] == [("arg1", True), ("arg2", True)]
    (resource_uri,) = prompts["test_prompt_with_embedded_resource"]["arguments"]
    assert resource_uri["name"] == "resourceUri"
    assert resource_uri["required"] is True
    assert "arguments" not in prompts["test_simple_prompt"]
    assert "arguments" not in prompts["test_prompt_with_image"]
    assert "arguments" not in prompts["test_input_required_result_prompt"]


@pytest.mark.spec("2025-11-25/server/prompts#getting-a-prompt")
async def test_simple_prompt() -> None:
    async with connect() as client:
        messages = (await client.get_prompt("test_simple_prompt"))["messages"]
    assert messages
    for message in messages:
        assert message["role"] in ("user", "assistant")
        assert message["content"]["type"] == "text"
        assert message["content"]["text"]


@pytest.mark.spec("2025-11-25/server/prompts#getting-a-prompt")
async def test_prompt_with_arguments_uses_them() -> None:
    async with connect() as client:
        result = await client.get_prompt("test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"})
    texts = " ".join(m["content"]["text"] for m in result["messages"] if m["content"]["type"] == "text")
    assert "testValue1" in texts
    assert "testValue2" in texts


@pytest.mark.spec("2025-11-25/server/prompts#error-handling")
async def test_prompt_with_arguments_rejects_a_missing_argument() -> None:
    async with connect() as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("test_prompt_with_arguments", {"arg1": "testValue1"})
    assert caught.value.code == -32602


@pytest.mark.spec("2025-11-25/server/prompts#embedded-resources")
async def test_prompt_with_embedded_resource() -> None:
    async with connect() as client:
        result = await client.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://static-text"})
    embedded = [m["content"]["resource"] for m in result["messages"] if m["content"]["type"] == "resource"]
    assert embedded
    assert embedded[0]["uri"] == "test://static-text"
    assert embedded[0]["text"]


@pytest.mark.spec("2025-11-25/server/prompts#image-content")
async def test_prompt_with_image() -> None:
    async with connect() as client:
        result = await client.get_prompt("test_prompt_with_image")
    images = [m["content"] for m in result["messages"] if m["content"]["type"] == "image"]
    assert images
    assert images[0]["mimeType"] == "image/png"
    assert_png(images[0]["data"])


@pytest.mark.spec("2025-11-25/server/utilities/completion#completion-results")
async def test_completion_for_arg1_returns_values() -> None:
    ref: JSONObject = {"type": "ref/prompt", "name": "test_prompt_with_arguments"}
    async with connect() as client:
        typed = await client.complete(ref, "arg1", "test")
        other = await client.complete(ref, "arg1", "ex")
        uncompleted = await client.complete(ref, "arg2", "x")
    assert typed["completion"]["values"] == ["testValue1", "testValue2"]
    assert other["completion"]["values"] == ["example"]
    assert uncompleted["completion"]["values"] == []


# -- the stateless era (2026-07-28) ---------------------------------------------------------------------------
MRTR = "2026-07-28/basic/patterns/mrtr"
SUBSCRIPTIONS = "2026-07-28/basic/patterns/subscriptions"
ADA: JSONObject = {"action": "accept", "content": {"name": "Ada"}}
PARIS: JSONObject = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "test-model",
                     "stopReason": "endTurn"}
ROOTS: JSONObject = {"roots": [{"uri": "file:///work/project", "name": "project"}]}
ELICIT_NAME: JSONObject = {"method": "elicitation/create", "params": {
    "mode": "form", "message": "What is your name?", "requestedSchema": NAME_SCHEMA}}


class Recorder:
    """Client-side handlers for input requests that answer with fixed values and keep what they were asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, JSONObject]] = []

    async def elicit(self, params: JSONObject) -> JSONObject:
        self.asked.append(("elicitation/create", params))
        properties = params["requestedSchema"]["properties"]
        if "color" in properties:
            return {"action": "accept", "content": {"color": "green"}}
        if "ok" in properties:
            return {"action": "accept", "content": {"ok": True}}
        if "context" in properties:
            return {"action": "accept", "content": {"context": "the wire"}}
        if "response" in properties:
            return {"action": "accept", "content": {"response": "blue"}}
        return ADA

    async def sample(self, params: JSONObject) -> JSONObject:
        self.asked.append(("sampling/createMessage", params))
        return PARIS

    async def roots(self, params: JSONObject) -> JSONObject:
        self.asked.append(("roots/list", params))
        return ROOTS

    @property
    def methods(self) -> list[str]:
        return [method for method, _ in self.asked]


@asynccontextmanager
async def stateless(recorder: Recorder | None = None, *, elicitation: bool = True, sampling: bool = True,
                    roots: bool = True, log_level: str | None = None) -> AsyncIterator[Client]:
    """A 2026-07-28 client: no handshake, ``_meta`` on every request, input requests answered by ``recorder``."""
    answers = recorder or Recorder()
    async with Client(server, protocol_version=STATELESS, log_level=log_level,
                      elicitation=answers.elicit if elicitation else None,
                      sampling=answers.sample if sampling else None,
                      roots=answers.roots if roots else None) as client:
        assert client.initialize_result is None
        yield client


async def first_round(client: Client, method: str, params: JSONObject) -> JSONObject:
    """The result of one request sent once, as the server answered it (no retry)."""
    response = await client.request_raw(method, client.with_meta(params))
    assert "error" not in response, response
    result: JSONObject = response["result"]
    return result


async def call_once(client: Client, tool: str, arguments: JSONObject | None = None,
                    **extra: object) -> JSONObject:
    return await first_round(client, "tools/call", {"name": tool, "arguments": arguments or {}, **extra})


def assert_input_required(result: JSONObject, requests: JSONObject) -> str:
    """An ``InputRequiredResult`` with exactly ``requests``; returns its (opaque) ``requestState``."""
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == requests
    assert "content" not in result
    assert result["_meta"][META_SERVER_INFO]["name"] == "wiremcp-everything"
    state = result["requestState"]
    assert isinstance(state, str)
    assert state
    return state


def text_of(result: JSONObject) -> str:
    assert result["resultType"] == "complete"
    assert "isError" not in result, result
    (block,) = result["content"]
    assert block["type"] == "text"
    text: str = block["text"]
    return text


@pytest.mark.spec("2026-07-28/server/discover#response")
@pytest.mark.spec("2026-07-28/basic/versioning#protocol-version-negotiation")
async def test_discover_names_both_eras_and_every_feature() -> None:
    async with stateless() as client:
        result = await client.request("server/discover")
    assert result["resultType"] == "complete"
    assert {STATELESS, "2025-11-25"} <= set(result["supportedVersions"])
    caps = result["capabilities"]
    assert caps["tools"] == {"listChanged": True}
    assert caps["prompts"]["listChanged"] is True
    assert caps["resources"]["subscribe"] is True
    assert {"completions", "logging"} <= set(caps)
    assert result["instructions"]
    assert result["_meta"][META_SERVER_INFO]["name"] == "wiremcp-everything"
    assert isinstance(result["ttlMs"], int)
    assert result["cacheScope"] in ("public", "private")


@pytest.mark.spec("2026-07-28/server/tools#listing-tools")
@pytest.mark.spec("2026-07-28/server/utilities/caching#cacheable-results")
async def test_stateless_lists_have_every_fixture_with_caching_hints() -> None:
    async with stateless() as client:
        tools = await first_round(client, "tools/list", {})
        prompts = await first_round(client, "prompts/list", {})
        resources = await client.list_resources()
    assert {tool["name"] for tool in tools["tools"]} == TOOLS
    assert {prompt["name"] for prompt in prompts["prompts"]} == PROMPTS
    assert {r["uri"] for r in resources} == RESOURCES
    for listed in (tools, prompts):
        assert listed["resultType"] == "complete"
        assert isinstance(listed["ttlMs"], int)
        assert listed["cacheScope"] in ("public", "private")


@pytest.mark.spec("2026-07-28/basic/index#_meta")
@pytest.mark.spec("2026-07-28/basic/index#error-codes")
async def test_missing_capability_without_sampling_is_error_32021() -> None:
    async with stateless(sampling=False) as client:
        response = await client.request_raw("tools/call", client.with_meta(
            {"name": "test_missing_capability", "arguments": {}}))
    assert "result" not in response
    assert response["error"]["code"] == -32021
    assert response["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


@pytest.mark.spec("2026-07-28/basic/index#_meta")
async def test_missing_capability_with_sampling_succeeds() -> None:
    recorder = Recorder()
    async with stateless(recorder, elicitation=False, roots=False) as client:
        result = await client.call_tool("test_missing_capability")
    assert text_of(result) == "The client declared sampling."
    assert recorder.asked == []  # declaring the capability is enough: nothing is asked


@pytest.mark.spec("2026-07-28/basic/index#statelessness")
async def test_each_request_declares_its_own_capabilities() -> None:
    """Same connection, two requests: only the one whose ``_meta`` declares sampling gets through."""
    async with stateless(sampling=False) as client:
        without = await client.request_raw("tools/call", client.with_meta(
            {"name": "test_missing_capability", "arguments": {}}))
        declared = await client.request_raw("tools/call", client.with_meta({
            "name": "test_missing_capability", "arguments": {},
            "_meta": {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}}))
        again = await client.request_raw("tools/call", client.with_meta(
            {"name": "test_missing_capability", "arguments": {}}))
    assert without["error"]["code"] == -32021
    assert text_of(declared["result"]) == "The client declared sampling."
    assert again["error"]["code"] == -32021


@pytest.mark.spec("2026-07-28/basic/index#error-codes")
async def test_sampling_without_the_capability_is_error_32021_in_the_stateless_era() -> None:
    async with stateless(sampling=False) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("test_sampling", {"prompt": "hello"})
    assert caught.value.code == -32021
    assert caught.value.data == {"requiredCapabilities": {"sampling": {}}}


@pytest.mark.spec("2026-07-28/server/tools#x-mcp-header")
async def test_x_mcp_header_is_declared_on_the_region_property() -> None:
    async with stateless() as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
        given = await client.call_tool("test_x_mcp_header", {"region": "eu-west-1"})
        default = await client.call_tool("test_x_mcp_header")
    region = tools["test_x_mcp_header"]["inputSchema"]["properties"]["region"]
    assert region["type"] == "string"
    assert region["x-mcp-header"] == "Region"
    assert text_of(given) == "region=eu-west-1"
    assert text_of(default) == "region=<none>"


@pytest.mark.parametrize(("log_level", "levels"), [
    (None, []),
    ("warning", ["warning", "error"]),
    ("debug", ["debug", "info", "warning", "error"]),
])
@pytest.mark.spec("2026-07-28/server/utilities/logging#per-request-log-level")
async def test_logging_tool_logs_only_at_the_requested_level(log_level: str | None, levels: list[str]) -> None:
    async with stateless(log_level=log_level) as client:
        result = await client.call_tool("test_logging_tool")
        # messages go out before the response on the same channel, so all of them have arrived
        messages = [n["params"] for n in client.notifications if n["method"] == "notifications/message"]
    assert text_of(result) == "logged"
    assert [m["level"] for m in messages] == levels
    assert all(m["data"] == f"a {m['level']} message" for m in messages)


@pytest.mark.spec("2026-07-28/server/utilities/logging#per-request-log-level")
async def test_no_log_level_no_log_messages_even_from_the_handshake_fixture() -> None:
    async with stateless() as client:
        silent = await client.call_tool("test_tool_with_logging")
        assert [n for n in client.notifications if n["method"] == "notifications/message"] == []
        opted_in = await client.request("tools/call", {
            "name": "test_tool_with_logging", "arguments": {},
            "_meta": {"io.modelcontextprotocol/logLevel": "info"}})
        messages = await asyncio.wait_for(client.wait_for_notification("notifications/message", 3), WAIT)
    assert text_of(silent) == text_of(opted_in) == "Tool with logging executed successfully"
    assert [m["params"]["level"] for m in messages] == ["info", "info", "info"]


@pytest.mark.spec("2026-07-28/basic/patterns/progress#progress-flow")
@pytest.mark.spec(f"{MRTR}#basic-workflow")
async def test_streaming_elicitation_reports_progress_around_an_input_request() -> None:
    recorder = Recorder()
    async with stateless(recorder) as client:
        first = await call_once(client, "test_streaming_elicitation", _meta={"progressToken": "stream-1"})
        first_progress = [n["params"] for n in client.notifications]
        client.notifications.clear()
        result = await client.call_tool("test_streaming_elicitation", progress_token="stream-2")
    (key,) = first["inputRequests"]
    assert_input_required(first, {key: {"method": "elicitation/create", "params": {
        "mode": "form", "message": "What is your name?", "requestedSchema": NAME_SCHEMA}}})
    assert first_progress == [{"progressToken": "stream-1", "progress": 0, "total": 2}]
    assert text_of(result) == "Hello, Ada!"
    assert recorder.methods == ["elicitation/create"]
    progress = [n["params"] for n in client.notifications if n["method"] == "notifications/progress"]
    assert all(p["progressToken"] == "stream-2" for p in progress)
    assert progress[-1] == {"progressToken": "stream-2", "progress": 2, "total": 2}


async def listen(client: Client, listen_id: str, notifications: JSONObject) -> asyncio.Task[JSONObject]:
    """Open ``subscriptions/listen`` and wait for its acknowledgment; the task ends with its response."""
    task = asyncio.create_task(client.request_raw(
        "subscriptions/listen", client.with_meta({"notifications": notifications}), id=listen_id))
    (ack,) = await asyncio.wait_for(client.wait_for_notification("notifications/subscriptions/acknowledged"), WAIT)
    assert ack["params"]["_meta"] == {META_SUBSCRIPTION: listen_id}
    return task


@pytest.mark.spec(f"{SUBSCRIPTIONS}#acknowledgment")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#receiving-notifications")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#graceful-closure")
async def test_trigger_tool_change_reaches_a_tools_listener_only() -> None:
    async with stateless() as client:
        listening = await listen(client, "listen-tools", {"toolsListChanged": True})
        assert client.notifications[0]["params"]["notifications"] == {"toolsListChanged": True}
        assert text_of(await client.call_tool("test_trigger_prompt_change")) == "prompt list changed"
        assert text_of(await client.call_tool("test_trigger_tool_change")) == "tool list changed"
        changes = await asyncio.wait_for(client.wait_for_notification("notifications/tools/list_changed"), WAIT)
        server.runtime.backend.bus.end_all()  # the server ends the subscription: it answers the listen request
        closed = await asyncio.wait_for(listening, WAIT)
        tools = {tool["name"] for tool in await client.list_tools()}
    # add + remove is two changes; the listener gets them in order, and nothing it did not ask for
    assert [c["params"] for c in changes] == [{"_meta": {META_SUBSCRIPTION: "listen-tools"}}] * len(changes)
    assert not [n for n in client.notifications if n["method"] == "notifications/prompts/list_changed"]
    assert closed["result"]["resultType"] == "complete"
    assert closed["result"]["_meta"][META_SUBSCRIPTION] == "listen-tools"
    assert "transient_tool" not in tools
    assert tools == TOOLS


@pytest.mark.spec(f"{SUBSCRIPTIONS}#notification-filter")
@pytest.mark.spec("2026-07-28/server/prompts#list-changed-notification")
async def test_trigger_prompt_change_reaches_a_prompts_listener() -> None:
    async with stateless() as client:
        listening = await listen(client, "listen-prompts", {"promptsListChanged": True})
        await client.call_tool("test_trigger_tool_change")
        await client.call_tool("test_trigger_prompt_change")
        changes = await asyncio.wait_for(client.wait_for_notification("notifications/prompts/list_changed"), WAIT)
        await client.notify("notifications/cancelled", {"requestId": "listen-prompts"})  # stdio's way to stop
        prompts = {prompt["name"] for prompt in await client.list_prompts()}
    listening.cancel()  # a cancelled request is not answered
    assert changes[0]["params"]["_meta"] == {META_SUBSCRIPTION: "listen-prompts"}
    assert not [n for n in client.notifications if n["method"] == "notifications/tools/list_changed"]
    assert prompts == PROMPTS
    assert isinstance(server.runtime.backend.bus, InMemorySubscriptionBus)
    assert server.runtime.backend.bus.listeners == 0  # the cancelled listen request let go of its subscription


# -- multi round-trip requests: InputRequiredResult ----------------------------------------------------------------
@pytest.mark.spec(f"{MRTR}#inputrequiredresult")
@pytest.mark.spec(f"{MRTR}#client-requirements-basic-workflow")
async def test_input_required_result_elicitation() -> None:
    recorder = Recorder()
    async with stateless(recorder) as client:
        first = await call_once(client, "test_input_required_result_elicitation")
        result = await client.call_tool("test_input_required_result_elicitation")
    assert_input_required(first, {"user_name": ELICIT_NAME})
    assert text_of(result) == "Hello, Ada!"
    assert recorder.asked == [("elicitation/create", ELICIT_NAME["params"])]


@pytest.mark.spec(f"{MRTR}#inputrequests")
async def test_input_required_result_sampling() -> None:
    recorder = Recorder()
    async with stateless(recorder) as client:
        first = await call_once(client, "test_input_required_result_sampling")
        result = await client.call_tool("test_input_required_result_sampling")
    assert_input_required(first, {"capital_question": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
        "maxTokens": 100}}})
    assert text_of(result) == "Model said: Paris"
    assert recorder.methods == ["sampling/createMessage"]


@pytest.mark.spec(f"{MRTR}#inputrequests")
async def test_input_required_result_list_roots() -> None:
    recorder = Recorder()
    async with stateless(recorder) as client:
        first = await call_once(client, "test_input_required_result_list_roots")
        result = await client.call_tool("test_input_required_result_list_roots")
    assert_input_required(first, {"client_roots": {"method": "roots/list"}})
    assert text_of(result) == "Client exposed 1 root(s)."
    assert recorder.methods == ["roots/list"]


@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
@pytest.mark.spec(f"{MRTR}#error-handling")
async def test_input_required_result_request_state_comes_back_sealed() -> None:
    confirm: JSONObject = {"confirm": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Please confirm", "requestedSchema": CONFIRM_SCHEMA}}}
    answer: JSONObject = {"confirm": {"action": "accept", "content": {"ok": True}}}
    async with stateless() as client:
        first = await call_once(client, "test_input_required_result_request_state")
        state = assert_input_required(first, confirm)
        done = await call_once(client, "test_input_required_result_request_state",
                               inputResponses=answer, requestState=state)
        # the answers without the state: the handler still lacks what it needs, so it asks again
        stateless_retry = await call_once(client, "test_input_required_result_request_state", inputResponses=answer)
        automatic = await client.call_tool("test_input_required_result_request_state")
    assert "request-state-nonce" not in state  # the handler's state travels sealed, not in the clear
    assert text_of(done) == "state-ok: confirmation received"
    assert_input_required(stateless_retry, confirm)
    assert text_of(automatic) == "state-ok: confirmation received"


@pytest.mark.spec(f"{MRTR}#basic-workflow")
async def test_input_required_result_multiple_inputs_in_one_round() -> None:
    recorder = Recorder()
    async with stateless(recorder) as client:
        first = await call_once(client, "test_input_required_result_multiple_inputs")
        result = await client.call_tool("test_input_required_result_multiple_inputs")
    assert_input_required(first, {
        "user_name": ELICIT_NAME,
        "greeting": {"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
            "maxTokens": 50}},
        "client_roots": {"method": "roots/list"}})
    assert text_of(result) == "All inputs received."
    assert sorted(recorder.methods) == ["elicitation/create", "roots/list", "sampling/createMessage"]


@pytest.mark.spec(f"{MRTR}#basic-workflow")
@pytest.mark.spec(f"{MRTR}#client-requirements-basic-workflow")
async def test_input_required_result_multi_round_asks_one_question_per_round() -> None:
    async with stateless() as client:
        first = await call_once(client, "test_input_required_result_multi_round")
        (key1,) = first["inputRequests"]
        second = await call_once(client, "test_input_required_result_multi_round",
                                 inputResponses={key1: ADA}, requestState=first["requestState"])
        (key2,) = second["inputRequests"]
        third = await call_once(client, "test_input_required_result_multi_round",
                                inputResponses={key2: {"action": "accept", "content": {"color": "green"}}},
                                requestState=second["requestState"])
        recorder = Recorder()
    async with stateless(recorder) as other:
        automatic = await other.call_tool("test_input_required_result_multi_round")
    assert first["inputRequests"][key1]["params"]["message"] == "Step 1: What is your name?"
    assert second["resultType"] == "input_required"
    assert key2 != key1
    assert second["inputRequests"][key2]["params"]["message"] == "Step 2: What is your favorite color?"
    assert second["requestState"] != first["requestState"]  # it now carries the first answer too
    assert text_of(third) == "Ada likes green."
    assert text_of(automatic) == "Ada likes green."
    assert [params["message"] for _, params in recorder.asked] == [
        "Step 1: What is your name?", "Step 2: What is your favorite color?"]


@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_input_required_result_tampered_state_is_refused() -> None:
    answer: JSONObject = {"confirm": {"action": "accept", "content": {"ok": True}}}
    async with stateless() as client:
        first = await call_once(client, "test_input_required_result_tampered_state")
        state: str = first["requestState"]
        tampered = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
        refused = await client.request_raw("tools/call", client.with_meta({
            "name": "test_input_required_result_tampered_state", "arguments": {},
            "inputResponses": answer, "requestState": tampered}))
        other_tool = await client.request_raw("tools/call", client.with_meta({
            "name": "test_input_required_result_request_state", "arguments": {},
            "inputResponses": answer, "requestState": state}))
        accepted = await call_once(client, "test_input_required_result_tampered_state",
                                   inputResponses=answer, requestState=state)
        asked = await call_once(client, "test_elicitation", {"message": "Favourite colour?"})
        other_arguments = await client.request_raw("tools/call", client.with_meta({
            "name": "test_elicitation", "arguments": {"message": "Favourite food?"},
            "inputResponses": {key: {"action": "accept", "content": {"response": "soup"}}
                               for key in asked["inputRequests"]},
            "requestState": asked["requestState"]}))
    assert refused["error"]["code"] == -32602
    # bound to the request it was issued for: the same method and the same parameters
    assert other_tool["error"]["code"] == -32602
    assert other_arguments["error"]["code"] == -32602
    assert text_of(accepted) == "state-ok: round-1"


@pytest.mark.parametrize(("declared", "keys"), [
    ({"sampling": True, "elicitation": True}, {"sample", "ask"}),
    ({"sampling": True}, {"sample"}),
    ({"elicitation": True}, {"ask"}),
    ({}, set()),
])
@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_input_required_result_capabilities_asks_only_for_what_was_declared(
        declared: dict[str, bool], keys: set[str]) -> None:
    async with stateless(sampling=declared.get("sampling", False),
                         elicitation=declared.get("elicitation", False), roots=False) as client:
        result = await call_once(client, "test_input_required_result_capabilities")
    assert result["resultType"] == "input_required"
    assert set(result.get("inputRequests", {})) == keys
    assert result["requestState"]  # at least one of inputRequests and requestState, always


@pytest.mark.spec(f"{MRTR}#supported-requests")
@pytest.mark.spec("2026-07-28/server/prompts#getting-a-prompt")
async def test_input_required_result_prompt() -> None:
    recorder = Recorder()
    async with stateless(recorder) as client:
        first = await first_round(client, "prompts/get", {"name": "test_input_required_result_prompt"})
        result = await client.get_prompt("test_input_required_result_prompt")
    (request,) = first["inputRequests"].values()
    assert list(first["inputRequests"]) == ["user_context"]
    assert first["resultType"] == "input_required"
    assert request["method"] == "elicitation/create"
    assert request["params"]["requestedSchema"]["required"] == ["context"]
    assert result["resultType"] == "complete"
    (message,) = result["messages"]
    assert message == {"role": "user", "content": {"type": "text", "text": "Use the following context: the wire"}}
    assert recorder.methods == ["elicitation/create"]


@pytest.mark.spec("2026-07-28/basic/index#statelessness")
@pytest.mark.spec(f"{MRTR}#basic-workflow")
async def test_a_retry_needs_nothing_from_the_connection_that_started_it() -> None:
    async with stateless() as client:
        first = await call_once(client, "test_input_required_result_request_state")
    async with stateless() as other:  # a new connection: everything the retry needs is in the request
        done = await call_once(other, "test_input_required_result_request_state",
                               inputResponses={"confirm": {"action": "accept", "content": {"ok": True}}},
                               requestState=first["requestState"])
    assert text_of(done) == "state-ok: confirmation received"


@pytest.mark.spec("2026-07-28/client/elicitation#form-mode-elicitation-requests")
@pytest.mark.spec("2026-07-28/client/sampling#creating-messages")
async def test_handshake_fixtures_ask_through_input_requests_in_the_stateless_era() -> None:
    recorder = Recorder()
    async with stateless(recorder) as client:
        first = await call_once(client, "test_elicitation", {"message": "Favourite colour?"})
        elicited = await client.call_tool("test_elicitation", {"message": "Favourite colour?"})
        sampled = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
        defaults = await client.call_tool("test_elicitation_sep1034_defaults")
    (request,) = first["inputRequests"].values()
    assert first["resultType"] == "input_required"
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "Favourite colour?"
    assert text_of(elicited) == "User response: action=accept, response=blue"
    assert text_of(sampled) == "LLM response: Paris"
    assert text_of(defaults).startswith("Elicitation result: action=accept")
    assert recorder.methods == ["elicitation/create", "sampling/createMessage", "elicitation/create"]
