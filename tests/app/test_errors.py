"""``wiremcp.errors``: the protocol errors, each the JSON-RPC error it becomes (code, message, ``data``),
and which of them the stateless era answers with HTTP 400 (``BadRequest``)."""

from __future__ import annotations

from typing import Any

import pytest

import wiremcp
from wiremcp import MCPServer
from wiremcp.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    BadRequest,
    ClientError,
    ClientTimeout,
    CompletionError,
    DefinitionError,
    HeaderMismatch,
    InsufficientScope,
    InvalidMeta,
    InvalidParams,
    InvalidRequest,
    MCPError,
    MethodNotFound,
    MissingClientCapability,
    PromptError,
    ResourceError,
    ResourceNotFound,
    ToolError,
    UnsupportedProtocolVersion,
)
from wiremcp.transports.memory import Client


@pytest.mark.spec("2025-11-25/basic/index#error-responses")
def test_the_json_rpc_codes() -> None:
    assert (PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR) == (
        -32700, -32600, -32601, -32602, -32603)
    assert RESOURCE_NOT_FOUND == -32002
    assert (HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION) == (-32020, -32021, -32022)


def test_an_error_carries_data_only_when_it_has_some() -> None:
    assert MCPError(-1, "no").to_error() == {"code": -1, "message": "no"}
    assert MCPError(-1, "no", {"why": "because"}).to_error() == {"code": -1, "message": "no", "data": {"why": "because"}}
    assert MCPError(-1, "no", 0).to_error()["data"] == 0  # falsy data is still data
    assert str(MCPError(-1, "no")) == "no"


@pytest.mark.parametrize(("error", "expected"), [
    (InvalidParams("bad cursor"), {"code": INVALID_PARAMS, "message": "bad cursor"}),
    (MethodNotFound("tools/explode"), {"code": METHOD_NOT_FOUND, "message": "Method not found: tools/explode"}),
    (InvalidRequest("too early"), {"code": INVALID_REQUEST, "message": "too early"}),
    (ResourceNotFound("file:///x"), {"code": RESOURCE_NOT_FOUND, "message": "Resource not found: file:///x",
                                     "data": {"uri": "file:///x"}}),
    (InvalidMeta("bad _meta"), {"code": INVALID_PARAMS, "message": "bad _meta"}),
    (HeaderMismatch("Mcp-Method"), {"code": HEADER_MISMATCH, "message": "Header mismatch: Mcp-Method"}),
    (UnsupportedProtocolVersion("1999-01-01", ("2026-07-28",)), {
        "code": UNSUPPORTED_PROTOCOL_VERSION, "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28"], "requested": "1999-01-01"}}),
    (InsufficientScope(["files:read", "admin"]), {
        "code": INVALID_REQUEST, "message": "Forbidden: this needs the scopes files:read admin",
        "data": {"requiredScopes": ["files:read", "admin"]}}),
])
def test_each_error_is_its_json_rpc_error(error: MCPError, expected: dict[str, object]) -> None:
    assert error.to_error() == expected


@pytest.mark.spec("2026-07-28/basic/index#_meta")
def test_a_missing_capability_names_what_is_required() -> None:
    error = MissingClientCapability({"sampling": {"tools": {}}, "elicitation": {}})
    assert error.capability == "elicitation, sampling.tools"
    assert error.to_error() == {"code": MISSING_CLIENT_CAPABILITY,
                                "message": "Missing required client capability: elicitation, sampling.tools",
                                "data": {"requiredCapabilities": {"sampling": {"tools": {}}, "elicitation": {}}}}


def test_which_errors_are_http_400_in_the_stateless_era() -> None:
    bad_requests = [InvalidMeta("x"), HeaderMismatch("x"), UnsupportedProtocolVersion("x", ()),
                    MissingClientCapability({"roots": {}})]
    assert all(isinstance(e, BadRequest) for e in bad_requests)
    others = [InvalidParams("x"), MethodNotFound("x"), InvalidRequest("x"), ResourceNotFound("x"),
              InsufficientScope(["x"]), ClientError(-1, "x")]
    assert not any(isinstance(e, BadRequest) for e in others)
    assert issubclass(ClientTimeout, TimeoutError)


# -- the user-facing errors of each kind of component, in both eras ---------------------------------------------

ERAS = ["2025-11-25", "2026-07-28"]


def _failing_server() -> MCPServer:
    server = MCPServer("failing")

    @server.resource("notes://{name}")
    def note(name: str) -> str:
        if name == "missing":
            raise ResourceNotFound(f"notes://{name}")
        if name == "tool-error":
            raise ToolError("notes are read-only today")
        raise ResourceError("the notes database is down", {"retryable": True})

    @server.prompt
    def review(tone: str) -> str:
        if tone == "tool-error":
            raise ToolError("no reviews on Sundays")
        raise PromptError(f"unknown tone {tone}")

    @server.completion(prompt="review", argument="tone")
    def tones(value: str, arguments: dict[str, str]) -> list[str]:
        if value == "tool-error":
            raise ToolError("tones are being retuned")
        raise CompletionError("no tones yet")

    return server


async def _error(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = await client.request_raw(method, client.with_meta(params) if client.stateless else params)
    assert "result" not in response, response
    error: dict[str, Any] = response["error"]
    return error


@pytest.mark.parametrize("version", ERAS)
async def test_a_components_own_error_keeps_its_words_in_both_eras(version: str) -> None:
    review_ref = {"type": "ref/prompt", "name": "review"}
    async with Client(_failing_server(), protocol_version=version) as client:
        assert await _error(client, "resources/read", {"uri": "notes://missing"}) == {  # 2026-07-28 names -32602
            "code": -32602 if client.stateless else -32002, "message": "Resource not found: notes://missing", "data": {"uri": "notes://missing"}}
        assert await _error(client, "resources/read", {"uri": "notes://x"}) == {
            "code": -32603, "message": "the notes database is down", "data": {"retryable": True}}
        assert await _error(client, "resources/read", {"uri": "notes://tool-error"}) == {
            "code": -32603, "message": "notes are read-only today"}
        assert await _error(client, "prompts/get", {"name": "review", "arguments": {"tone": "harsh"}}) == {
            "code": -32603, "message": "unknown tone harsh"}
        assert await _error(client, "prompts/get", {"name": "review", "arguments": {"tone": "tool-error"}}) == {
            "code": -32603, "message": "no reviews on Sundays"}
        assert await _error(client, "completion/complete", {"ref": review_ref,
                                                             "argument": {"name": "tone", "value": "h"}}) == {
            "code": -32603, "message": "no tones yet"}
        assert await _error(client, "completion/complete", {"ref": review_ref,
                                                             "argument": {"name": "tone", "value": "tool-error"}}) == {
            "code": -32603, "message": "tones are being retuned"}


def test_the_user_facing_errors_are_exported_from_wiremcp() -> None:
    assert (wiremcp.ToolError, wiremcp.ResourceError, wiremcp.ResourceNotFound, wiremcp.PromptError,
            wiremcp.CompletionError, wiremcp.InvalidParams, wiremcp.DefinitionError) == (
        ToolError, ResourceError, ResourceNotFound, PromptError, CompletionError, InvalidParams, DefinitionError)
    assert all(issubclass(kind, MCPError) for kind in (ResourceError, PromptError, CompletionError))
