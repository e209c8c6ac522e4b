"""examples/everything.py against the shape rules of the official conformance suite, in process.

The rules come from /work/shared/spec/conformance-fixtures.md: every fixture name the suite
looks for is present, and each answers with the shape the suite checks.
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

from app.errors import MCPError
from app.types import JSONObject
from examples.everything import CONTACT_SCHEMA, server
from transports.memory import Client, ClientHandler

TOOLS = {
    "test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
    "test_multiple_content_types", "test_tool_with_logging", "test_error_handling", "test_tool_with_progress",
    "test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool", "test_reconnection",
}
RESOURCES = {"test://static-text", "test://static-binary", "test://watched-resource"}
TEMPLATES = {"test://template/{id}/data"}
PROMPTS = {"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource",
           "test_prompt_with_image"}
WAIT = 5.0  # an upper bound for awaited events, never a sleep


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


async def test_sampling_without_the_capability_is_a_tool_error() -> None:
    async with connect() as client:
        result = await client.call_tool("test_sampling", {"prompt": "hello"})
    assert result["isError"] is True
    assert "sampling" in result["content"][0]["text"]


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
