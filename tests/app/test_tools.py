"""Tools: definitions on the wire, argument validation, results and errors of a call."""

import asyncio
import base64
import dataclasses
import json
import threading
import typing
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from tests.support.failures import reference_in
from wiremcp import (
    Audio,
    Context,
    EmbeddedResource,
    Image,
    MCPServer,
    ResourceLink,
    ToolError,
    ToolResult,
    text,
)
from wiremcp import threads as threads_module
from wiremcp.errors import INVALID_PARAMS, DefinitionError, MCPError
from wiremcp.tools import Tool
from wiremcp.transports.memory import Client


class City(BaseModel):
    name: str
    population: int


class Forecast(typing.TypedDict):
    city: str
    high: float


@dataclasses.dataclass
class Span:
    start: int
    end: int


async def _call(server: MCPServer, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    async with Client(server) as client:
        return await client.call_tool(name, arguments)


def _text(result: dict[str, Any]) -> str:
    blocks = result["content"]
    assert blocks
    assert blocks[0]["type"] == "text"
    value: str = blocks[0]["text"]
    return value


# -- definitions ------------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/server/tools#listing-tools")
async def test_tool_definition_on_the_wire() -> None:
    server = MCPServer("t")

    @server.tool(title="Adder", annotations={"readOnlyHint": True}, icons=[{"src": "https://x/i.png"}],
                 meta={"com.example/v": 1})
    async def add(a: int, b: int = 2) -> int:
        """Add two numbers.

        Returns the sum.
        """
        return a + b

    async with Client(server) as client:
        (tool,) = await client.list_tools()
    assert tool["name"] == "add"
    assert tool["title"] == "Adder"
    assert tool["description"] == "Add two numbers.\n\nReturns the sum."
    assert tool["inputSchema"]["required"] == ["a"]
    assert tool["outputSchema"]["properties"]["result"] == {"type": "integer"}
    assert tool["annotations"] == {"readOnlyHint": True}
    assert tool["icons"] == [{"src": "https://x/i.png"}]
    assert tool["_meta"] == {"com.example/v": 1}


def test_tool_without_docstring_has_no_description() -> None:
    def bare() -> None:
        return None

    wire = Tool(bare, name="renamed").to_wire()
    assert wire == {"name": "renamed", "inputSchema": {"type": "object", "properties": {},
                                                       "additionalProperties": False}}


def test_a_tool_returning_a_complete_result_has_no_output_schema_and_logs_no_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    """A ``ToolResult`` is returned as is, with whatever structured content it carries: nothing to derive."""

    def restock() -> ToolResult:
        return ToolResult([text("ordered")], {"ordered": 1})

    def maybe() -> ToolResult | None:
        return None

    assert "outputSchema" not in Tool(restock).to_wire()
    assert "outputSchema" not in Tool(maybe).to_wire()
    assert not caplog.records


def test_tool_name_length_is_checked() -> None:
    def f() -> None:
        return None

    with pytest.raises(ValueError, match="1 to 128"):
        Tool(f, name="x" * 129)
    assert Tool(f, name="x" * 128).name == "x" * 128


def test_hand_written_input_schema_must_be_an_object() -> None:
    def f(**kwargs: Any) -> None:
        return None

    with pytest.raises(ValueError, match="type 'object'"):
        Tool(f, input_schema={"type": "array"})


# -- argument validation ------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/server/tools#error-handling")
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"a": "seven", "b": 1}, "a: Input should be a valid integer"),
        ({"a": 1}, "b: Field required"),
        ({"a": 1, "b": 2, "c": 3}, "c: Extra inputs are not permitted"),
    ],
)
async def test_invalid_arguments_are_a_tool_error_result(arguments: dict[str, Any], expected: str) -> None:
    server = MCPServer("t")
    calls: list[int] = []

    @server.tool()
    async def add(a: int, b: int) -> int:
        calls.append(a)
        return a + b

    result = await _call(server, "add", arguments)
    assert result["isError"] is True
    assert "Invalid arguments for tool add" in _text(result)
    assert expected in _text(result)
    assert calls == []


async def test_arguments_are_converted_to_the_annotated_types() -> None:
    server = MCPServer("t")
    seen: list[Any] = []

    @server.tool()
    async def place(city: City, forecast: Forecast, span: Span) -> str:
        seen.extend([city, forecast, span])
        return "ok"

    result = await _call(server, "place", {"city": {"name": "Oslo", "population": "700000"},
                                           "forecast": {"city": "Oslo", "high": 3},
                                           "span": {"start": 1, "end": 2}})
    assert "isError" not in result
    assert seen == [City(name="Oslo", population=700000), {"city": "Oslo", "high": 3.0}, Span(1, 2)]


async def test_null_arguments_mean_no_arguments() -> None:
    server = MCPServer("t")

    @server.tool()
    async def hello(name: str = "world") -> str:
        return f"hello {name}"

    async with Client(server) as client:
        result = await client.request("tools/call", {"name": "hello", "arguments": None})
        without = await client.request("tools/call", {"name": "hello"})
    assert _text(result) == "hello world"
    assert _text(without) == "hello world"


async def test_non_object_arguments_are_invalid_params() -> None:
    server = MCPServer("t")

    @server.tool()
    async def hello() -> str:
        return "hi"

    async with Client(server) as client:
        response = await client.request_raw("tools/call", {"name": "hello", "arguments": [1]})
    assert response["error"]["code"] == INVALID_PARAMS


# -- failures ------------------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/server/tools#error-handling")
async def test_tool_error_becomes_an_error_result() -> None:
    server = MCPServer("t")

    @server.tool()
    async def divide(a: float, b: float) -> float:
        if b == 0:
            raise ToolError("cannot divide by zero")
        return a / b

    @server.tool()
    def silent() -> str:
        raise ToolError

    result = await _call(server, "divide", {"a": 1, "b": 0})
    assert result == {"content": [{"type": "text", "text": "cannot divide by zero"}], "isError": True}
    assert _text(await _call(server, "silent")) == "Tool silent failed"


@pytest.mark.spec("2025-11-25/server/tools#error-handling")
async def test_unexpected_exception_is_an_error_result_with_a_reference_and_its_text_only_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    server = MCPServer("t")

    @server.tool()
    async def explode() -> str:
        raise KeyError("missing-key")

    with caplog.at_level("ERROR", logger="wiremcp.failures"):
        result = await _call(server, "explode")
    assert result["isError"] is True
    message = _text(result)
    reference = reference_in(message, "Error executing tool explode")
    assert "missing-key" not in message
    (logged,) = caplog.records
    assert logged.getMessage() == message
    assert logged.exc_info is not None
    assert isinstance(logged.exc_info[1], KeyError)
    assert reference in caplog.text
    assert "missing-key" in caplog.text


async def test_mcp_error_raised_by_a_tool_is_a_protocol_error() -> None:
    server = MCPServer("t")

    @server.tool()
    async def strict() -> str:
        raise MCPError(INVALID_PARAMS, "not now", {"why": "test"})

    async with Client(server) as client:
        response = await client.request_raw("tools/call", {"name": "strict"})
    assert response["error"] == {"code": INVALID_PARAMS, "message": "not now", "data": {"why": "test"}}


# -- sync tools ----------------------------------------------------------------------------------------


async def test_a_sync_tool_marked_blocking_runs_in_a_worker_thread() -> None:
    server = MCPServer("t")
    release = threading.Event()
    started = asyncio.Event()
    loop = asyncio.get_running_loop()
    threads: list[threading.Thread] = []

    @server.tool(blocking=True)
    def blocking() -> str:
        threads.append(threading.current_thread())
        loop.call_soon_threadsafe(started.set)
        if not release.wait(timeout=10):
            return "never released"
        return "released"

    async with Client(server) as client:
        call = asyncio.ensure_future(client.call_tool("blocking"))
        await started.wait()
        # the event loop is free while the sync tool blocks its thread
        assert await client.ping() == {}
        assert not call.done()
        release.set()
        result = await call
    assert _text(result) == "released"
    assert threads
    assert threads[0] is not threading.main_thread()


async def test_a_sync_tool_runs_on_the_event_loops_thread_until_one_call_holds_it_too_long(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    server = MCPServer("t")
    threads: list[threading.Thread] = []

    @server.tool()
    def where() -> str:
        threads.append(threading.current_thread())
        return "here"

    async with Client(server) as client:
        assert _text(await client.call_tool("where")) == "here"
        assert threads == [threading.current_thread()]  # no hop to a worker thread
        monkeypatch.setattr(threads_module, "HOLD_LIMIT", -1.0)  # any call now holds the loop "too long"
        with caplog.at_level("WARNING", "wiremcp.threads"):
            assert _text(await client.call_tool("where")) == "here"  # this call still ran on the loop ...
            monkeypatch.setattr(threads_module, "HOLD_LIMIT", 0.01)
            assert _text(await client.call_tool("where")) == "here"  # ... and the next on a worker
            assert _text(await client.call_tool("where")) == "here"
    assert threads[1] is threading.current_thread()
    assert threads[2] is not threading.current_thread()
    assert threads[3] is not threading.current_thread()
    warnings = [r.getMessage() for r in caplog.records if r.name == "wiremcp.threads"]
    assert len(warnings) == 1, warnings  # said once
    assert warnings[0].startswith("tool 'where' held the event loop for ")
    assert "blocking=True" in warnings[0]


async def test_a_sync_tool_marked_not_blocking_stays_on_the_loop_whatever_a_call_takes(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    server = MCPServer("t")
    threads: list[threading.Thread] = []

    @server.tool(blocking=False)
    def cheap() -> int:
        threads.append(threading.current_thread())
        return len(threads)

    monkeypatch.setattr(threads_module, "HOLD_LIMIT", -1.0)
    async with Client(server) as client:
        for _ in range(3):
            await client.call_tool("cheap")
    assert threads == [threading.current_thread()] * 3
    assert not [r for r in caplog.records if r.name == "wiremcp.threads"]


async def test_resources_and_prompts_take_blocking_too() -> None:
    server = MCPServer("t")
    threads: dict[str, threading.Thread] = {}

    @server.resource("notes://today", blocking=True)
    def today() -> str:
        threads["resource"] = threading.current_thread()
        return "notes"

    @server.prompt(blocking=True)
    def review() -> str:
        threads["prompt"] = threading.current_thread()
        return "review this"

    @server.prompt()
    def greet() -> str:
        threads["inline"] = threading.current_thread()
        return "hello"

    async with Client(server) as client:
        await client.read_resource("notes://today")
        await client.get_prompt("review")
        await client.get_prompt("greet")
    assert threads["resource"] is not threading.current_thread()
    assert threads["prompt"] is not threading.current_thread()
    assert threads["inline"] is threading.current_thread()


def test_blocking_must_be_true_false_or_none() -> None:
    server = MCPServer("t")
    with pytest.raises(DefinitionError) as caught:
        @server.tool(blocking="yes")  # type: ignore[call-overload]
        def tool() -> str:
            return ""
    message = str(caught.value)
    assert "\n" not in message
    assert "test_tools.py:" in message
    assert "blocking= must be True, False or None, not 'yes'" in message


async def test_sync_tool_sees_the_context() -> None:
    server = MCPServer("t")

    @server.tool()
    def whoami(ctx: Context) -> str:
        return f"{ctx.method} {ctx.client_info['name']} {ctx.protocol_version}"

    result = await _call(server, "whoami")
    assert _text(result) == "tools/call wiremcp-test-client 2025-11-25"


# -- structured output ---------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/server/tools#structured-content")
@pytest.mark.parametrize(
    ("name", "structured"),
    [
        ("model", {"name": "Oslo", "population": 700000}),
        ("typed_dict", {"city": "Oslo", "high": 3.5}),
        ("data_class", {"start": 1, "end": 5}),
        ("number", {"result": 42}),
        ("numbers", {"result": [1, 2]}),
    ],
)
async def test_structured_content_with_the_same_json_in_a_text_block(name: str, structured: Any) -> None:
    server = MCPServer("t")

    @server.tool()
    def model() -> City:
        return City(name="Oslo", population=700000)

    @server.tool()
    def typed_dict() -> Forecast:
        return {"city": "Oslo", "high": 3.5}

    @server.tool()
    def data_class() -> Span:
        return Span(1, 5)

    @server.tool()
    def number() -> int:
        return 42

    @server.tool()
    def numbers() -> list[int]:
        return [1, 2]

    async with Client(server) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        result = await client.call_tool(name)
    assert result["structuredContent"] == structured
    assert len(result["content"]) == 1
    assert json.loads(_text(result)) == structured
    assert "isError" not in result
    jsonschema.validate(result["structuredContent"], tools[name]["outputSchema"])


@pytest.mark.spec("2025-11-25/server/tools#output-schema")
async def test_result_not_matching_the_output_schema_is_an_error_result() -> None:
    server = MCPServer("t")

    @server.tool()
    def count() -> int:
        return "many"  # type: ignore[return-value]

    result = await _call(server, "count")
    assert result["isError"] is True
    assert "structuredContent" not in result
    reference_in(_text(result), "Tool count returned a result that does not match its output schema")
    assert "many" not in _text(result)


async def test_hand_written_output_schema_is_checked() -> None:
    server = MCPServer("t")
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

    @server.tool(output_schema=schema)
    def good() -> Any:
        return {"ok": True}

    @server.tool(output_schema=schema)
    def bad() -> Any:
        return {"ok": "yes"}

    async with Client(server) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        ok = await client.call_tool("good")
        wrong = await client.call_tool("bad")
    assert tools["good"]["outputSchema"] == schema
    assert ok == {"content": [{"type": "text", "text": '{"ok":true}'}], "structuredContent": {"ok": True}}
    assert wrong["isError"] is True
    reference_in(_text(wrong), "Tool bad returned a result that does not match its output schema")
    assert "yes" not in _text(wrong)


async def test_plain_results_are_text_content() -> None:
    server = MCPServer("t")

    @server.tool()
    def greeting() -> str:
        return "hi"

    @server.tool(structured_output=False)
    def data() -> dict[str, int]:
        return {"a": 1}

    @server.tool()
    def nothing() -> None:
        return None

    assert await _call(server, "greeting") == {"content": [{"type": "text", "text": "hi"}]}
    assert await _call(server, "data") == {"content": [{"type": "text", "text": '{"a":1}'}]}
    assert await _call(server, "nothing") == {"content": []}


async def test_tool_result_is_returned_as_is() -> None:
    server = MCPServer("t")

    @server.tool()
    def custom() -> ToolResult:
        return ToolResult(["partial", Image(b"\x89PNG")], {"n": 1}, is_error=True, meta={"k": "v"})

    result = await _call(server, "custom")
    assert result == {
        "content": [{"type": "text", "text": "partial"},
                    {"type": "image", "data": base64.b64encode(b"\x89PNG").decode(), "mimeType": "image/png"}],
        "structuredContent": {"n": 1},
        "isError": True,
        "_meta": {"k": "v"},
    }


# -- hand-written input schema ------------------------------------------------------------------------

ADDRESS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{4}$"}},
            "required": ["street", "zip"],
            "additionalProperties": False,
        }
    },
    "properties": {"name": {"type": "string"}, "home": {"$ref": "#/$defs/address"}},
    "required": ["name", "home"],
    "additionalProperties": False,
}


@pytest.mark.spec("2025-11-25/basic/index#json-schema-usage")
async def test_hand_written_input_schema_is_kept_verbatim_and_validated() -> None:
    server = MCPServer("t")
    received: list[dict[str, Any]] = []

    @server.tool(input_schema=json.loads(json.dumps(ADDRESS_SCHEMA)))
    def register(**arguments: Any) -> str:
        received.append(arguments)
        return "registered"

    async with Client(server) as client:
        (tool,) = await client.list_tools()
        bad = await client.call_tool("register", {"name": "Ann", "home": {"street": "Main", "zip": "12"}})
        extra = await client.call_tool("register", {"name": "Ann", "home": {"street": "M", "zip": "1234"}, "x": 1})
        good = await client.call_tool("register", {"name": "Ann", "home": {"street": "Main", "zip": "1234"}})
    assert tool["inputSchema"] == ADDRESS_SCHEMA
    assert bad["isError"] is True
    assert "home.zip: '12' does not match" in _text(bad)
    assert extra["isError"] is True
    assert "Additional properties are not allowed" in _text(extra)
    assert _text(good) == "registered"
    assert received == [{"name": "Ann", "home": {"street": "Main", "zip": "1234"}}]


async def test_hand_written_input_schema_with_context() -> None:
    server = MCPServer("t")

    @server.tool(input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    async def double(ctx: Context, n: int = 0) -> int:
        assert isinstance(ctx, Context)
        return n * 2

    result = await _call(server, "double", {"n": 4})
    assert result["structuredContent"] == {"result": 8}


# -- content helpers ---------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/server/tools#tool-result")
async def test_content_helpers() -> None:
    server = MCPServer("t")
    annotations = {"audience": ["user"], "priority": 0.5}

    @server.tool()
    def image() -> Image:
        return Image(b"\x89PNG\r\n", annotations=annotations)

    @server.tool()
    def audio() -> Audio:
        return Audio("UklGRg==")  # already base64

    @server.tool()
    def embedded() -> list[EmbeddedResource]:
        return [EmbeddedResource("test://embedded", text="hello", mime_type="text/plain"),
                EmbeddedResource("test://blob", blob=b"\x00\x01", mime_type="application/octet-stream")]

    @server.tool()
    def link() -> ResourceLink:
        return ResourceLink("file:///a.txt", "a.txt", title="A", description="the a file", mime_type="text/plain",
                            size=3, meta={"k": 1})

    @server.tool()
    def mixed() -> list[str | dict[str, Any] | Image]:
        return ["first", text("second", annotations={"priority": 1}), Image("AAAA", "image/jpeg"),
                {"type": "text", "text": "raw block"}]

    async with Client(server) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        results = {name: await client.call_tool(name) for name in tools}

    assert all("outputSchema" not in tool for tool in tools.values())
    assert results["image"]["content"] == [{"type": "image", "data": base64.b64encode(b"\x89PNG\r\n").decode(),
                                            "mimeType": "image/png", "annotations": annotations}]
    assert results["audio"]["content"] == [{"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}]
    assert results["embedded"]["content"] == [
        {"type": "resource", "resource": {"uri": "test://embedded", "mimeType": "text/plain", "text": "hello"}},
        {"type": "resource", "resource": {"uri": "test://blob", "mimeType": "application/octet-stream",
                                          "blob": base64.b64encode(b"\x00\x01").decode()}},
    ]
    assert results["link"]["content"] == [{"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt",
                                           "title": "A", "description": "the a file", "mimeType": "text/plain",
                                           "size": 3, "_meta": {"k": 1}}]
    assert results["mixed"]["content"] == [
        {"type": "text", "text": "first"},
        {"type": "text", "text": "second", "annotations": {"priority": 1}},
        {"type": "image", "data": "AAAA", "mimeType": "image/jpeg"},
        {"type": "text", "text": "raw block"},
    ]
    assert all("isError" not in r and "structuredContent" not in r for r in results.values())
