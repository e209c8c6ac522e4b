"""The fixtures of the official MCP conformance suite, on one server.

Every tool, resource and prompt that ``@modelcontextprotocol/conformance`` looks for is
here, under the name it looks for, so this module doubles as a tour of the framework:
content blocks, logging, progress, errors, sampling, elicitation (with a pydantic model
and with raw JSON Schemas), a hand-written JSON Schema 2020-12, resource templates and
subscriptions, prompts and completions, and Agent Skills (``examples/skills/library``).

    wiremcp stdio examples.everything:server
    wiremcp http examples.everything:server
"""

from __future__ import annotations

import asyncio
import io
import json
import struct
import wave
import zlib
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

from wiremcp import (
    Audio,
    Context,
    EmbeddedResource,
    Image,
    InputRequired,
    MCPError,
    MCPServer,
    Message,
    ToolError,
    param_header,
    text,
    user,
)
from wiremcp.errors import INTERNAL_ERROR
from wiremcp.prompts import Prompt
from wiremcp.tools import Tool
from wiremcp.types import JSONObject

server = MCPServer(
    "wiremcp-everything", "1.0.0", title="wiremcp everything",
    instructions="The fixtures of the MCP conformance suite: one tool, resource or prompt per feature.",
)

# -- skills (SEP-2640): the library of examples/skills, for the sep-2640-* scenarios ------------------------
server.skills(Path(__file__).parent / "skills" / "library")


# -- media ----------------------------------------------------------------------------------------
def tiny_png() -> bytes:
    """A valid 1x1 PNG (one opaque red pixel), built by hand."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # width, height, 8-bit RGBA, no interlace
    pixels = zlib.compress(b"\x00" + bytes((255, 0, 0, 255)))  # filter byte, then one RGBA pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def tiny_wav() -> bytes:
    """A valid WAV file: 10 ms of 16-bit mono silence at 8 kHz."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 80)
    return buffer.getvalue()


PNG = tiny_png()
WAV = tiny_wav()


# -- tools: content ---------------------------------------------------------------------------------
@server.tool()
def test_simple_text() -> str:
    """Return one text block."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> Image:
    """Return one image block (a 1x1 PNG)."""
    return Image(PNG, "image/png")


@server.tool()
def test_audio_content() -> Audio:
    """Return one audio block (a short WAV)."""
    return Audio(WAV, "audio/wav")


@server.tool()
def test_embedded_resource() -> EmbeddedResource:
    """Return a resource embedded in the result."""
    return EmbeddedResource("test://embedded-resource", text="This is an embedded resource content.",
                            mime_type="text/plain")


@server.tool()
def test_multiple_content_types() -> list[JSONObject | Image | EmbeddedResource]:
    """Return text, an image and an embedded resource in one result."""
    return [
        text("Multiple content types test:"),
        Image(PNG, "image/png"),
        EmbeddedResource("test://mixed-content-resource", text=json.dumps({"test": "data", "value": 123}),
                         mime_type="application/json"),
    ]


# -- tools: notifications and errors ------------------------------------------------------------------
@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Send three log messages while running."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0, 50 and 100 of 100 (when the call carries a progress token)."""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await asyncio.sleep(0.01)
    return f"Progress reported for token {ctx.progress_token}"


@server.tool()
def test_error_handling() -> str:
    """Always fail: the failure is a result with isError, not a protocol error."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool()
async def test_reconnection(ctx: Context) -> str:
    """Close the SSE connection mid-call (SSE polling); the client resumes with Last-Event-ID."""
    await ctx.info("Before closing the stream")
    ctx.close_sse_stream()
    await asyncio.sleep(0.1)  # the client is away: what follows is replayed when it comes back
    await ctx.info("After closing the stream")
    return "Reconnection test completed"


# -- tools: asking the client ---------------------------------------------------------------------------
@server.tool()
async def test_sampling(prompt: Annotated[str, Field(description="The prompt to send to the client's model")],
                        ctx: Context) -> str:
    """Ask the client's model to complete a prompt (sampling/createMessage)."""
    answer = await ctx.sample(prompt, max_tokens=100)
    content = answer.get("content")
    reply = content.get("text") if isinstance(content, dict) else None
    return f"LLM response: {reply if isinstance(reply, str) else '(no text)'}"


class UserResponse(BaseModel):
    response: str = Field(description="The user's response")


@server.tool()
async def test_elicitation(message: Annotated[str, Field(description="The question to ask the user")],
                           ctx: Context) -> str:
    """Ask the user a question (elicitation/create with a schema from a pydantic model)."""
    result = await ctx.elicit(message, UserResponse)
    if result.data is not None:
        return f"User response: action={result.action}, response={result.data.response}"
    return f"User response: action={result.action}"


SEP1034_DEFAULTS_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
                   "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}
"""A form with a default for every primitive type (SEP-1034)."""


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Ask for a form whose fields all have defaults (SEP-1034)."""
    result = await ctx.elicit("Please provide user information", SEP1034_DEFAULTS_SCHEMA)
    return f"Elicitation result: action={result.action}, content={json.dumps(result.content or {})}"


SEP1330_ENUMS_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "title": "Untitled single select",
                           "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "title": "Titled single select", "oneOf": [
            {"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"},
        ]},
        "legacyEnum": {"type": "string", "title": "Legacy enum", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "title": "Untitled multi select",
                          "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "title": "Titled multi select", "items": {"anyOf": [
            {"const": "value1", "title": "First Choice"},
            {"const": "value2", "title": "Second Choice"},
            {"const": "value3", "title": "Third Choice"},
        ]}},
    },
}
"""Every way to write a choice in a form (SEP-1330): plain, titled, legacy, single and multiple."""


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Ask for a form with every kind of enum (SEP-1330)."""
    result = await ctx.elicit("Please select options from the enum fields", SEP1330_ENUMS_SCHEMA)
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}"


# -- tools: a hand-written JSON Schema 2020-12 -------------------------------------------------------------
CONTACT_SCHEMA: JSONObject = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "address",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            "required": ["street", "city"],
            "additionalProperties": False,
        },
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "required": ["name"],
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
"""Served verbatim in ``tools/list`` and checked as written: ``$defs``, ``$anchor``, composition, conditionals."""


@server.tool(input_schema=CONTACT_SCHEMA)
def json_schema_2020_12_tool(**contact: Any) -> str:
    """Accept a contact checked against a hand-written JSON Schema 2020-12."""
    return f"Contact accepted: {json.dumps(contact, sort_keys=True)}"


# -- resources ---------------------------------------------------------------------------------------------
@server.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A fixed text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A fixed binary resource (a 1x1 PNG)."""
    return PNG


@server.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
def template_data(id: str) -> str:
    """Data for any id, from a URI template."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to for updates."""
    # After a change, server.resource_updated("test://watched-resource") notifies the subscribers.
    return "Watched resource content"


# -- prompts -----------------------------------------------------------------------------------------------
@server.prompt()
def test_simple_prompt() -> Message:
    """A prompt without arguments."""
    return user("This is a simple prompt for testing.")


@server.prompt()
def test_prompt_with_arguments(arg1: Annotated[str, Field(description="The first argument")],
                               arg2: Annotated[str, Field(description="The second argument")]) -> Message:
    """A prompt with two required arguments."""
    return user(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")


@server.prompt()
def test_prompt_with_embedded_resource(
        resourceUri: Annotated[str, Field(description="The URI of the resource to embed")]) -> list[Message]:
    """A prompt that embeds a resource."""
    return [
        user(EmbeddedResource(resourceUri, text="Embedded resource content for testing.", mime_type="text/plain")),
        user("Please process the embedded resource above."),
    ]


@server.prompt()
def test_prompt_with_image() -> list[Message]:
    """A prompt that carries an image."""
    return [user(Image(PNG, "image/png")), user("Please analyze the image above.")]


@server.completion(prompt="test_prompt_with_arguments", argument="arg1")
def complete_arg1(value: str, arguments: dict[str, str]) -> list[str]:
    """Suggestions for ``arg1`` that start with what was typed so far."""
    return [choice for choice in ("testValue1", "testValue2", "example") if choice.startswith(value)]


# -- the stateless era (2026-07-28) -------------------------------------------------------------------------
@server.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability (stateless era: -32021 when the request did not declare it)."""
    ctx.require_capability("sampling")
    return "The client declared sampling."


@server.tool()
def test_x_mcp_header(region: Annotated[str, param_header("Region"),
                                        Field(description="Mirrored into the Mcp-Param-Region header")] = "<none>") -> str:
    """Echo a parameter that also travels as an HTTP header (x-mcp-header)."""
    return f"region={region}"


@server.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Log at every level; only a request that opted in with a logLevel gets the messages."""
    for level in ("debug", "info", "warning", "error"):
        await ctx.log(level, f"a {level} message")
    return "logged"


@server.tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Elicit while streaming progress; the stateless era turns the question into an input request."""
    await ctx.report_progress(0, 2)
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA)
    await ctx.report_progress(2, 2)
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


@server.tool()
def test_trigger_tool_change() -> str:
    """Add and remove a tool: listeners of tool list changes are told."""
    server.add_tool(Tool(_transient, name="transient_tool", description="Appears for a moment."))
    server.remove_tool("transient_tool")
    return "tool list changed"


@server.tool()
def test_trigger_prompt_change() -> str:
    """Add and remove a prompt: listeners of prompt list changes are told."""
    server.add_prompt(Prompt(_transient, name="transient_prompt", description="Appears for a moment."))
    server.remove_prompt("transient_prompt")
    return "prompt list changed"


def _transient() -> str:
    return "transient"


# Multi round-trip requests, written at the low level: the handler returns InputRequired itself and reads
# the answers from ctx.input_responses (its own state comes back, verified, as ctx.request_state).
NAME_SCHEMA: JSONObject = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CONFIRM_SCHEMA: JSONObject = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _elicit(message: str, schema: JSONObject = NAME_SCHEMA) -> JSONObject:
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


def _sample(text: str, max_tokens: int) -> JSONObject:
    return {"method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": text}}],
                       "maxTokens": max_tokens}}


def _content(answer: Any) -> JSONObject:
    content = answer.get("content") if isinstance(answer, dict) else None
    return content if isinstance(content, dict) else {}


@server.tool()
def test_input_required_result_elicitation(ctx: Context) -> str | InputRequired:
    """Ask the user's name with an input request (key user_name)."""
    if "user_name" in ctx.input_responses:
        return f"Hello, {_content(ctx.input_responses['user_name']).get('name', 'stranger')}!"
    return InputRequired({"user_name": _elicit("What is your name?")})


@server.tool()
def test_input_required_result_sampling(ctx: Context) -> str | InputRequired:
    """Ask the client's model a question with an input request."""
    if "capital_question" in ctx.input_responses:
        return f"Model said: {_content(ctx.input_responses['capital_question']).get('text', '?')}"
    return InputRequired({"capital_question": _sample("What is the capital of France?", 100)})


@server.tool()
def test_input_required_result_list_roots(ctx: Context) -> str | InputRequired:
    """Ask for the client's roots with an input request."""
    if "client_roots" in ctx.input_responses:
        roots = ctx.input_responses["client_roots"].get("roots")
        return f"Client exposed {len(roots) if isinstance(roots, list) else 0} root(s)."
    return InputRequired({"client_roots": {"method": "roots/list"}})


@server.tool()
def test_input_required_result_request_state(ctx: Context) -> str | InputRequired:
    """Carry a state across the round trip."""
    if "confirm" in ctx.input_responses and ctx.request_state == "request-state-nonce":
        return "state-ok: confirmation received"
    return InputRequired({"confirm": _elicit("Please confirm", CONFIRM_SCHEMA)}, request_state="request-state-nonce")


@server.tool()
def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequired:
    """Ask for an elicitation, a sampling and the roots in one round."""
    if {"user_name", "greeting", "client_roots"} <= ctx.input_responses.keys():
        return "All inputs received."
    return InputRequired({"user_name": _elicit("What is your name?"),
                          "greeting": _sample("Generate a greeting", 50),
                          "client_roots": {"method": "roots/list"}}, request_state="multiple-inputs")


@server.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Three rounds, written at the high level: each ctx.elicit is one round trip in the stateless era."""
    name = await ctx.elicit("Step 1: What is your name?", NAME_SCHEMA)
    color = await ctx.elicit("Step 2: What is your favorite color?",
                             {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]})
    return f"{(name.content or {}).get('name')} likes {(color.content or {}).get('color')}."


@server.tool()
def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequired:
    """Round-trip a state; a tampered one is refused before this runs."""
    if ctx.request_state is None:
        return InputRequired({"confirm": _elicit("Please confirm", CONFIRM_SCHEMA)}, request_state="round-1")
    return f"state-ok: {ctx.request_state}"


@server.tool()
def test_input_required_result_capabilities(ctx: Context) -> InputRequired:
    """Ask only for what the request's client capabilities allow."""
    requests: dict[str, JSONObject] = {}
    if "sampling" in ctx.client_capabilities:
        requests["sample"] = _sample("Say hello", 50)
    if "elicitation" in ctx.client_capabilities:
        requests["ask"] = _elicit("What is your name?")
    return InputRequired(requests, request_state="capability-gated")


@server.prompt()
def test_input_required_result_prompt(ctx: Context) -> Message | InputRequired:
    """A prompt that asks the user for context first."""
    if "user_context" in ctx.input_responses:
        return user(f"Use the following context: {_content(ctx.input_responses['user_context']).get('context')}")
    return InputRequired({"user_context": _elicit(
        "What context should the prompt use?",
        {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]})})


# -- tasks (2025-11-25 experimental tasks and the 2026-07-28 tasks extension) -----------------------
DELETE_SCHEMA: JSONObject = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}


@server.tool()
def greet(name: str) -> str:
    """An ordinary tool: never a task."""
    return f"Hello, {name}!"


@server.tool(task_support="optional")
async def slow_compute(seconds: Annotated[float, Field(ge=0, le=3600)], label: str = "") -> str:
    """Work for ``seconds`` seconds, as a task when the client supports tasks; cancellable."""
    await asyncio.sleep(seconds)
    return f"Computed {label or 'result'} in {seconds:g}s."


@server.tool(task_support="required")
async def failing_job() -> str:
    """Always a task; after a second it reports a tool error (a completed task with isError)."""
    await asyncio.sleep(1)
    raise ToolError("The job failed: the input could not be processed.")


@server.tool(task_support="optional")
async def protocol_error_job() -> str:
    """Fails with a JSON-RPC error (a failed task with an inlined error)."""
    await asyncio.sleep(0.2)
    raise MCPError(INTERNAL_ERROR, "The job crashed: its worker went away.")


@server.tool(task_support="optional")
async def confirm_delete(filename: str, ctx: Context) -> str:
    """Ask the user to confirm, then 'delete' the file; as a task, it waits in input_required."""
    answer = await ctx.elicit(f"Delete {filename}?", DELETE_SCHEMA)
    confirmed = answer.accepted and bool((answer.content or {}).get("confirm"))
    return f"Deleted {filename}." if confirmed else f"Kept {filename}."


@server.tool(task_support="optional")
async def multi_input(ctx: Context) -> str:
    """Ask two questions; as a task, both at once (two input requests pending together)."""
    if ctx.task_id is not None:
        name, proceed = await asyncio.gather(ctx.elicit("What is your name?", NAME_SCHEMA),
                                             ctx.elicit("Proceed?", DELETE_SCHEMA))
    else:  # an ordinary call asks one question per round
        name = await ctx.elicit("What is your name?", NAME_SCHEMA)
        proceed = await ctx.elicit("Proceed?", DELETE_SCHEMA)
    return f"{(name.content or {}).get('name', 'someone')} answered; proceed={proceed.accepted}."


@server.tool(task_support="required", task_start="handler")
async def test_tool_with_task(ctx: Context) -> str:
    """Gather the user's name while the client waits (input-required rounds), then go on as a task."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA)
    await ctx.start_task()
    await asyncio.sleep(0.2)
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}! The task is done."
