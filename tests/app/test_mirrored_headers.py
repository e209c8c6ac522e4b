"""The stateless era's mirrored headers as units: decoding values, matching them to the body, and ``check``
on headers read from a bare ASGI scope (the HTTP-level behaviour is in ``test_stateless_http.py``)."""

from __future__ import annotations

import base64
from typing import Annotated, Any

import pytest

from wiremcp import MCPServer, jsonrpc, param_header
from wiremcp.access import called_tool
from wiremcp.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    UNSUPPORTED_PROTOCOL_VERSION,
    HeaderMismatch,
    MCPError,
)
from wiremcp.header_params import MAX_SAFE_INTEGER
from wiremcp.mirrored_headers import NAMED, Headers, _matches, check, decode
from wiremcp.protocol import META_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_VERSION
from wiremcp.transports.asgi import header

VERSION = "2026-07-28"
TRANSPORT = "2026-07-28/basic/transports/streamable-http"


def spec(section: str) -> pytest.MarkDecorator:
    return pytest.mark.spec(f"{TRANSPORT}#{section}")


def b64(raw: bytes) -> str:
    return f"=?base64?{base64.b64encode(raw).decode()}?="


# -- decode -------------------------------------------------------------------------------------------------
@spec("value-encoding")
@pytest.mark.parametrize(("original", "encoded"), [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
], ids=["plain", "non-ascii", "padded", "newline", "sentinel-lookalike"])
def test_the_specs_encoding_examples_decode_to_the_original(original: str, encoded: str) -> None:
    assert decode(encoded, "Mcp-Param-X") == original


@spec("value-encoding")
@pytest.mark.parametrize("value", ["", "plain", "with space", "tab\there", "SGVsbG8=", "=?base64?abc", "abc?=",
                                   "=?BASE64?SGVsbG8=?=", "=?base64?=", "?=", "=?base64?", "~!@#$%^&*()"])
def test_anything_but_the_exact_sentinel_is_taken_literally(value: str) -> None:
    assert decode(value, "Mcp-Name") == value


@spec("value-encoding")
def test_the_sentinel_may_carry_an_empty_value() -> None:
    assert decode("=?base64??=", "Mcp-Name") == ""


@spec("value-encoding")
@pytest.mark.parametrize("value", [
    pytest.param("=?base64?ZX*1?=", id="character-outside-the-alphabet"),
    pytest.param("=?base64?ZWNobw?=", id="length-not-a-multiple-of-4"),
    pytest.param("=?base64?SGVsbG8===?=", id="too-much-padding"),
    pytest.param("=?base64?SGV=sbG8?=", id="padding-in-the-middle"),
    pytest.param("=?base64?-_-_?=", id="url-safe-alphabet"),
    pytest.param("=?base64?SGVs bG8=?=", id="space-inside"),
    pytest.param(b64(b"\xff\xfe"), id="not-utf-8"),
    pytest.param("=?base64?A===?=", id="one-character-and-padding"),
])
def test_a_malformed_sentinel_is_a_header_mismatch(value: str) -> None:
    with pytest.raises(HeaderMismatch, match=r"Mcp-Param-Region header has a malformed base64 sentinel value") as raised:
        decode(value, "Mcp-Param-Region")
    assert raised.value.code == HEADER_MISMATCH


@spec("server-validation")
@pytest.mark.parametrize("value", [
    pytest.param("nul\x00", id="nul"),
    pytest.param("del\x7f", id="del"),
    pytest.param("caf\xe9", id="latin-1"),
    pytest.param("grüße", id="non-ascii"),
    pytest.param("a\rb", id="cr"),
    pytest.param("a\nb", id="lf"),
    pytest.param("trailing\n", id="trailing-lf"),
    pytest.param("bell\x07", id="control"),
    pytest.param("=?base64?SGVsbG8=\n?=", id="lf-in-a-sentinel"),
])
def test_invalid_characters_are_a_header_mismatch(value: str) -> None:
    with pytest.raises(HeaderMismatch, match=r"Mcp-Name header value has invalid characters"):
        decode(value, "Mcp-Name")


# -- matching a decoded value with the body's --------------------------------------------------------------
@spec("server-validation")
@pytest.mark.parametrize(("sent", "body", "kind", "expected"), [
    ("eu", "eu", "string", True),
    ("EU", "eu", "string", False),
    ("eu ", "eu", "string", False),
    ("42", 42, "string", False),
    ("", "", "string", True),
    ("42", 42, "integer", True),
    ("42.0", 42, "integer", True),
    ("4.2e1", 42, "integer", True),
    ("042", 42, "integer", True),
    ("42", 42.0, "integer", True),
    ("-7", -7, "integer", True),
    ("0", 0, "integer", True),
    ("43", 42, "integer", False),
    ("0x2a", 42, "integer", False),
    ("forty-two", 42, "integer", False),
    ("", 0, "integer", False),
    ("nan", 0, "integer", False),
    ("1", True, "integer", False),
    ("42", "42", "integer", False),
    (str(MAX_SAFE_INTEGER), MAX_SAFE_INTEGER, "integer", True),
    (str(-MAX_SAFE_INTEGER), -MAX_SAFE_INTEGER, "integer", True),
    (str(MAX_SAFE_INTEGER + 1), MAX_SAFE_INTEGER + 1, "integer", False),
    ("true", True, "boolean", True),
    ("false", False, "boolean", True),
    ("true", False, "boolean", False),
    ("True", True, "boolean", False),
    ("TRUE", True, "boolean", False),
    ("1", True, "boolean", False),
    ("true", 1, "boolean", False),
    ("false", 0, "boolean", False),
    ("true", "true", "boolean", False),
])
def test_a_header_value_matches_the_body_by_the_parameters_type(sent: str, body: Any, kind: str,
                                                                expected: bool) -> None:
    assert _matches(sent, body, kind) is expected


# -- check: the whole request --------------------------------------------------------------------------------
server = MCPServer("headers")


@server.tool()
def routed(query: str, region: Annotated[str, param_header("Region")] = "-",
           count: Annotated[int, param_header("Count")] = 0) -> str:
    return query


@server.tool(input_schema={"type": "object", "properties": {"target": {"type": "object", "properties": {
    "zone": {"type": "string", "x-mcp-header": "Zone"}}}}})
def zoned(target: dict[str, Any] | None = None) -> str:
    return str(target)


def scope(headers: dict[str, str | bytes]) -> Headers:
    """The headers as the HTTP transport hands them to the check (read from an ASGI scope)."""
    raw = [(k.lower().encode("latin-1"), v if isinstance(v, bytes) else v.encode("latin-1"))
           for k, v in headers.items()]
    asgi = {"type": "http", "headers": raw}
    return lambda name: header(asgi, name.encode())


def meta(**changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {META_VERSION: VERSION, META_CAPABILITIES: {}, META_CLIENT_INFO: {"name": "c", "version": "1"}}
    out.update(changes)
    return {k: v for k, v in out.items() if v is not None}


def request(method: str, params: dict[str, Any] | None = None, /, **meta_changes: Any) -> jsonrpc.Request:
    return jsonrpc.Request(1, method, {**(params or {}), "_meta": meta(**meta_changes)})


def standard(method: str, params: dict[str, Any] | None = None, /, **extra: str | bytes) -> dict[str, str | bytes]:
    out: dict[str, str | bytes] = {"MCP-Protocol-Version": VERSION, "Mcp-Method": method}
    key = NAMED.get(method)
    if key is not None and params is not None:
        out["Mcp-Name"] = params[key]
    out.update(extra)
    return out


def rejected(headers: dict[str, str | bytes], req: jsonrpc.Request) -> MCPError:
    with pytest.raises(MCPError) as raised:
        check(scope(headers), req, called_tool(req.params, server))
    return raised.value


@spec("server-validation")
def test_check_returns_the_state_the_request_declares() -> None:
    req = request("tools/list", capabilities=None, **{META_CAPABILITIES: {"sampling": {}}, META_LOG_LEVEL: "info"})
    state = check(scope(standard("tools/list")), req)
    assert state.protocol_version == VERSION
    assert state.client_capabilities == {"sampling": {}}
    assert state.client_info == {"name": "c", "version": "1"}
    assert state.log_level == "info"
    assert state.id is None  # no session


@spec("server-validation")
@pytest.mark.parametrize(("headers", "req", "code", "message"), [
    pytest.param({"Mcp-Method": "tools/list"}, request("tools/list"), HEADER_MISMATCH,
                 "Header mismatch: the MCP-Protocol-Version header is missing", id="no-version-header"),
    pytest.param(standard("tools/list"), jsonrpc.Request(1, "tools/list", {}), INVALID_PARAMS,
                 "_meta with io.modelcontextprotocol/protocolVersion", id="no-meta"),
    pytest.param(standard("tools/list"), request("tools/list", **{META_VERSION: None}), INVALID_PARAMS,
                 "io.modelcontextprotocol/protocolVersion", id="no-meta-version"),
    pytest.param(standard("tools/list"), request("tools/list", **{META_CAPABILITIES: None}), INVALID_PARAMS,
                 "io.modelcontextprotocol/clientCapabilities", id="no-capabilities"),
    pytest.param(standard("tools/list"), request("tools/list", **{META_VERSION: "v9"}), HEADER_MISMATCH,
                 "MCP-Protocol-Version header value '2026-07-28' does not match body value 'v9'", id="version-mismatch"),
    pytest.param(standard("tools/list", **{"MCP-Protocol-Version": "v9"}), request("tools/list", **{META_VERSION: "v9"}),
                 UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", id="unsupported"),
    pytest.param(standard("tools/list", **{"MCP-Protocol-Version": "2025-11-25"}),
                 request("tools/list", **{META_VERSION: "2025-11-25"}), UNSUPPORTED_PROTOCOL_VERSION,
                 "Unsupported protocol version", id="handshake-version-in-meta"),
    pytest.param({"MCP-Protocol-Version": VERSION}, request("tools/list"), HEADER_MISMATCH,
                 "the Mcp-Method header is missing", id="no-method-header"),
    pytest.param(standard("tools/call"), request("tools/list"), HEADER_MISMATCH,
                 "Mcp-Method header value 'tools/call' does not match body value 'tools/list'", id="method-mismatch"),
    pytest.param(standard("tools/call"), request("tools/call", {"name": "routed", "arguments": {"query": "q"}}),
                 HEADER_MISMATCH, "the Mcp-Name header is missing", id="no-name-header"),
    pytest.param(standard("resources/read", {"uri": "a://b"}), request("resources/read", {"uri": "a://c"}),
                 HEADER_MISMATCH, "Mcp-Name header value 'a://b' does not match body value 'a://c'",
                 id="name-mismatch"),
    pytest.param(standard("prompts/get", {"name": "p"}, **{"Mcp-Name": b64(b"q")}), request("prompts/get", {"name": "p"}),
                 HEADER_MISMATCH, "Mcp-Name header value 'q' does not match body value 'p'", id="decoded-name-mismatch"),
    pytest.param(standard("tools/call", {"name": "routed"}),
                 request("tools/call", {"name": "routed", "arguments": {"query": "q", "region": "eu"}}),
                 HEADER_MISMATCH, "Mcp-Param-Region header is missing but the body's argument is present",
                 id="param-missing"),
    pytest.param(standard("tools/call", {"name": "routed"}, **{"Mcp-Param-Count": "7"}),
                 request("tools/call", {"name": "routed", "arguments": {"query": "q", "count": 8}}),
                 HEADER_MISMATCH, "Mcp-Param-Count header value '7' does not match body value 8", id="param-mismatch"),
    pytest.param(standard("tools/call", {"name": "zoned"}),
                 request("tools/call", {"name": "zoned", "arguments": {"target": {"zone": "z"}}}),
                 HEADER_MISMATCH, "Mcp-Param-Zone header is missing", id="nested-param-missing"),
])
def test_check_refuses_with_a_clear_message(headers: dict[str, str | bytes], req: jsonrpc.Request, code: int,
                                            message: str) -> None:
    error = rejected(headers, req)
    assert error.code == code
    assert message in error.message


@spec("server-validation")
def test_surrounding_whitespace_is_trimmed_from_every_checked_header() -> None:
    params = {"name": "routed", "arguments": {"query": "q", "region": "eu", "count": 3}}
    headers: dict[str, str | bytes] = {"MCP-Protocol-Version": f" \t{VERSION} ", "Mcp-Method": "\ttools/call  ",
                                       "Mcp-Name": "  routed", "Mcp-Param-Region": "eu\t", "Mcp-Param-Count": " 3 "}
    assert check(scope(headers), request("tools/call", params), called_tool(params, server)).protocol_version == VERSION


@spec("server-validation")
def test_a_tool_the_server_does_not_have_gets_only_the_standard_checks() -> None:
    params = {"name": "missing", "arguments": {"region": "eu"}}
    assert check(scope(standard("tools/call", params)), request("tools/call", params), called_tool(params, server))


@spec("server-behavior-for-custom-headers")
@pytest.mark.parametrize("arguments", [{"query": "q"}, {"query": "q", "region": None}, None, ["eu"], "eu"],
                         ids=["absent", "null", "no-arguments", "a-list", "a-string"])
def test_no_param_header_is_expected_without_a_value_at_its_path(arguments: Any) -> None:
    params: dict[str, Any] = {"name": "routed"}
    if arguments is not None:
        params["arguments"] = arguments
    assert check(scope(standard("tools/call", params)), request("tools/call", params), called_tool(params, server))


@spec("server-behavior-for-custom-headers")
def test_a_param_header_with_invalid_characters_is_refused_even_when_it_would_match() -> None:
    params = {"name": "routed", "arguments": {"query": "q", "region": "grüße"}}
    headers = standard("tools/call", params, **{"Mcp-Param-Region": "grüße".encode()})
    error = rejected(headers, request("tools/call", params))
    assert error.code == HEADER_MISMATCH
    assert "Mcp-Param-Region header value has invalid characters" in error.message
    headers["Mcp-Param-Region"] = b64("grüße".encode())
    assert check(scope(headers), request("tools/call", params), called_tool(params, server))
