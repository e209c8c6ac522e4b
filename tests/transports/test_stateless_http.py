"""Streamable HTTP in the stateless era (2026-07-28): one POST, one request, no session.

Most checks run against the shared ``uvicorn app:asgi`` process serving the HTTP fixture server, so
headers go through a real HTTP parser; ``subscriptions/listen`` and shutdown are checked against
servers in this process (``serve_in_process``), where the test can publish changes and end
subscriptions itself. Every error answer is checked for its exact HTTP status, its JSON-RPC code
and the echoed request id. Nothing sleeps: long-running handlers are released by other requests or
by the test, and every wait has a failure bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.http import (
    READ_BOUND,
    SSEEvent,
    SSEReader,
    UvicornProcess,
    error_of,
    initialize,
    run_uvicorn,
    serve_in_process,
)
from tests.support.http_fixture_server import FIXTURE_SERVER
from tests.support.stateless_http import (
    ACK,
    VERSION,
    Call,
    assert_no_session,
    b64,
    listen_call,
    listening,
    post,
    raw_post,
    result_of,
    standard_headers,
    tagged,
    tool,
    tool_text,
    with_meta,
)
from wiremcp import Context, MCPServer
from wiremcp.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from wiremcp.prompts import Prompt
from wiremcp.protocol import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_SERVER_INFO,
    META_SUBSCRIPTION,
    META_VERSION,
)
from wiremcp.resources import Resource
from wiremcp.tools import Tool
from wiremcp.transports.http_app import MCPHttpApp

TRANSPORT = "basic/transports/streamable-http"

pytestmark = pytest.mark.timeout(30)


def spec(page_section: str) -> pytest.MarkDecorator:
    return pytest.mark.spec(f"{VERSION}/{page_section}")


_uniq = itertools.count()


def unique(prefix: str) -> str:
    """A name no other test uses (gates and tools live as long as the shared server)."""
    return f"{prefix}-stateless-{next(_uniq)}"



# -- validation: each path, its exact status and code, in the spec's order -----------------------------------
@dataclass
class Reject:
    """A request the server must refuse, and how."""

    id: str
    call: Callable[[], Call]
    status: int
    code: int
    marks: tuple[pytest.MarkDecorator, ...] = ()
    raw: bool = False
    """Written on the socket by hand (header values httpx would refuse to send)."""


def _drop_meta(*keys: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    out = with_meta(params)
    for key in keys:
        del out["_meta"][key]
    return out


def _removed(method: str) -> Callable[[], Call]:
    """A handshake-era method, sent the stateless way with the params it used to take."""
    params = {"uri": "fixture://watched"} if "subscribe" in method else {"level": "info"} if "Level" in method else {}
    return lambda: Call(method, with_meta(params))


_SEC_VERSION = spec(f"{TRANSPORT}#protocol-version-header")
_SEC_VALIDATION = spec(f"{TRANSPORT}#server-validation")
_SEC_STANDARD = spec(f"{TRANSPORT}#standard-request-headers")
_SEC_CUSTOM = spec(f"{TRANSPORT}#server-behavior-for-custom-headers")
_SEC_ENCODING = spec(f"{TRANSPORT}#value-encoding")
_SEC_META = spec("basic/index#_meta")

REJECTS: list[Reject] = [
    # 1. the version header must be there (-32020), whatever else is wrong
    Reject("missing-version-header", lambda: Call("tools/list", headers={"MCP-Protocol-Version": None}),
           400, HEADER_MISMATCH, (_SEC_VERSION, _SEC_VALIDATION)),
    Reject("missing-version-header-before-incomplete-meta",
           lambda: Call("tools/list", _drop_meta(META_CAPABILITIES), {"MCP-Protocol-Version": None}),
           400, HEADER_MISMATCH, (_SEC_VALIDATION,)),
    # 2. then the required _meta fields (-32602), even though the header is present
    Reject("missing-meta", lambda: Call("server/discover", {}), 400, INVALID_PARAMS, (_SEC_META,)),
    Reject("no-params-at-all", lambda: Call("server/discover", None), 400, INVALID_PARAMS, (_SEC_META,)),
    Reject("meta-not-an-object", lambda: Call("server/discover", {"_meta": "2026-07-28"}), 400, INVALID_PARAMS,
           (_SEC_META,)),
    Reject("missing-protocol-version", lambda: Call("server/discover", _drop_meta(META_VERSION)),
           400, INVALID_PARAMS, (_SEC_META,)),
    Reject("missing-client-capabilities", lambda: Call("server/discover", _drop_meta(META_CAPABILITIES)),
           400, INVALID_PARAMS, (_SEC_META,)),
    Reject("client-capabilities-not-an-object",
           lambda: Call("server/discover", with_meta(capabilities=["sampling"])), 400, INVALID_PARAMS, (_SEC_META,)),
    Reject("incomplete-meta-before-version-mismatch",
           lambda: Call("server/discover", {"_meta": {META_VERSION: "v999.0.0", META_CAPABILITIES: None}}),
           400, INVALID_PARAMS, (_SEC_META,)),
    Reject("unknown-log-level", lambda: Call("tools/list", with_meta(log_level="loud")), 400, INVALID_PARAMS,
           (_SEC_META, spec("server/utilities/logging#per-request-log-level"))),
    # 3. then the header against _meta (-32020), even when the _meta version is one nobody supports
    Reject("version-header-mismatch", lambda: Call("server/discover", with_meta(version="v999.0.0")),
           400, HEADER_MISMATCH, (_SEC_VERSION,)),
    Reject("version-header-is-a-handshake-version",
           lambda: Call("tools/list", headers={"MCP-Protocol-Version": "2025-11-25"}),
           400, HEADER_MISMATCH, (_SEC_VERSION,)),
    # 4. then the version itself (-32022)
    Reject("unsupported-version", lambda: Call("server/discover", with_meta(version="v999.0.0"),
                                               {"MCP-Protocol-Version": "v999.0.0"}),
           400, UNSUPPORTED_PROTOCOL_VERSION, (_SEC_VERSION,)),
    Reject("unsupported-version-before-method-header",
           lambda: Call("tools/list", with_meta(version="v999.0.0"),
                        {"MCP-Protocol-Version": "v999.0.0", "Mcp-Method": "prompts/list"}),
           400, UNSUPPORTED_PROTOCOL_VERSION, (_SEC_VERSION,)),
    # 5. then Mcp-Method (-32020): present, equal, case-sensitive
    Reject("missing-method-header", lambda: Call("tools/list", headers={"Mcp-Method": None}),
           400, HEADER_MISMATCH, (_SEC_STANDARD, _SEC_VALIDATION)),
    Reject("mismatched-method-header", lambda: Call("tools/list", headers={"Mcp-Method": "prompts/list"}),
           400, HEADER_MISMATCH, (_SEC_STANDARD,)),
    Reject("method-header-value-case-differs", lambda: Call("tools/list", headers={"Mcp-Method": "TOOLS/LIST"}),
           400, HEADER_MISMATCH, (spec(f"{TRANSPORT}#case-sensitivity"),)),
    Reject("removed-method-with-mismatched-method-header",
           lambda: Call("ping", headers={"Mcp-Method": "tools/list"}), 400, HEADER_MISMATCH, (_SEC_STANDARD,)),
    # 6. then Mcp-Name (-32020) for the three named methods
    Reject("tools-call-missing-name", lambda: tool("echo", {"text": "x"}, headers={"Mcp-Name": None}),
           400, HEADER_MISMATCH, (_SEC_STANDARD,)),
    Reject("tools-call-mismatched-name", lambda: tool("echo", {"text": "x"}, headers={"Mcp-Name": "release"}),
           400, HEADER_MISMATCH, (_SEC_STANDARD,)),
    Reject("tools-call-name-case-differs", lambda: tool("echo", {"text": "x"}, headers={"Mcp-Name": "Echo"}),
           400, HEADER_MISMATCH, (_SEC_STANDARD,)),
    Reject("tools-call-mismatched-base64-name",
           lambda: tool("echo", {"text": "x"}, headers={"Mcp-Name": b64("release")}),
           400, HEADER_MISMATCH, (_SEC_STANDARD, _SEC_ENCODING)),
    Reject("tools-call-malformed-base64-name",
           lambda: tool("echo", {"text": "x"}, headers={"Mcp-Name": "=?base64?ZWNobw?="}),
           400, HEADER_MISMATCH, (_SEC_ENCODING,)),
    Reject("tools-call-name-checked-before-the-tool-runs",
           lambda: tool("needs_sampling", {}, headers={"Mcp-Name": "echo"}),
           400, HEADER_MISMATCH, (_SEC_VALIDATION,)),
    Reject("tools-call-name-checked-before-the-tool-is-looked-up",
           lambda: tool("no-such-tool", {}, headers={"Mcp-Name": "echo"}), 400, HEADER_MISMATCH, (_SEC_VALIDATION,)),
    Reject("prompts-get-missing-name",
           lambda: Call("prompts/get", with_meta({"name": "greeting", "arguments": {"who": "x"}}), {"Mcp-Name": None}),
           400, HEADER_MISMATCH, (_SEC_STANDARD,)),
    Reject("prompts-get-mismatched-name",
           lambda: Call("prompts/get", with_meta({"name": "greeting", "arguments": {"who": "x"}}),
                        {"Mcp-Name": "farewell"}), 400, HEADER_MISMATCH, (_SEC_STANDARD,)),
    Reject("resources-read-missing-name",
           lambda: Call("resources/read", with_meta({"uri": "fixture://watched"}), {"Mcp-Name": None}),
           400, HEADER_MISMATCH, (_SEC_STANDARD,)),
    Reject("resources-read-mismatched-name",
           lambda: Call("resources/read", with_meta({"uri": "fixture://watched"}), {"Mcp-Name": "fixture://other"}),
           400, HEADER_MISMATCH, (_SEC_STANDARD,)),
    Reject("resources-read-mismatched-base64-name",
           lambda: Call("resources/read", with_meta({"uri": "fixture://grüße"}), {"Mcp-Name": b64("fixture://gruesse")}),
           400, HEADER_MISMATCH, (_SEC_ENCODING,)),
    Reject("name-with-raw-non-ascii-bytes",
           lambda: Call("resources/read", with_meta({"uri": "fixture://grüße"})),
           400, HEADER_MISMATCH, (_SEC_ENCODING, _SEC_VALIDATION), raw=True),
    # 7. then Mcp-Param-* (-32020)
    Reject("param-header-missing-while-the-argument-is-present",
           lambda: tool("routed", {"query": "q", "region": "eu-west1"}), 400, HEADER_MISMATCH, (_SEC_CUSTOM,)),
    Reject("param-header-mismatched",
           lambda: tool("routed", {"query": "q", "region": "eu-west1"}, headers={"Mcp-Param-Region": "us-east1"}),
           400, HEADER_MISMATCH, (_SEC_CUSTOM,)),
    Reject("param-header-value-case-differs",
           lambda: tool("routed", {"query": "q", "region": "eu-west1"}, headers={"Mcp-Param-Region": "EU-WEST1"}),
           400, HEADER_MISMATCH, (_SEC_CUSTOM,)),
    Reject("param-header-malformed-base64",
           lambda: tool("routed", {"query": "q", "region": "eu"}, headers={"Mcp-Param-Region": "=?base64?ZX*1?="}),
           400, HEADER_MISMATCH, (_SEC_ENCODING, _SEC_CUSTOM)),
    Reject("param-header-base64-of-another-value",
           lambda: tool("routed", {"query": "q", "region": "eu"}, headers={"Mcp-Param-Region": b64("us")}),
           400, HEADER_MISMATCH, (_SEC_ENCODING, _SEC_CUSTOM)),
    Reject("param-header-base64-not-utf8",
           lambda: tool("routed", {"query": "q", "region": "eu"}, headers={"Mcp-Param-Region": "=?base64?/w==?="}),
           400, HEADER_MISMATCH, (_SEC_ENCODING,)),
    Reject("param-header-literal-base64-looking-value-is-not-decoded",
           lambda: tool("routed", {"query": "q", "region": "Hello"}, headers={"Mcp-Param-Region": "SGVsbG8="}),
           400, HEADER_MISMATCH, (_SEC_ENCODING,)),
    Reject("param-header-with-raw-non-ascii-bytes",
           lambda: tool("routed", {"query": "q", "region": "Hello, 世界"}, headers={"Mcp-Param-Region": "Hello, 世界"}),
           400, HEADER_MISMATCH, (_SEC_CUSTOM,), raw=True),
    Reject("integer-param-different-number",
           lambda: tool("routed", {"query": "q", "count": 42}, headers={"Mcp-Param-Count": "43"}),
           400, HEADER_MISMATCH, (_SEC_VALIDATION,)),
    Reject("integer-param-not-a-number",
           lambda: tool("routed", {"query": "q", "count": 42}, headers={"Mcp-Param-Count": "forty-two"}),
           400, HEADER_MISMATCH, (_SEC_VALIDATION,)),
    Reject("integer-param-missing",
           lambda: tool("routed", {"query": "q", "count": 0}), 400, HEADER_MISMATCH, (_SEC_CUSTOM,)),
    Reject("integer-param-beyond-the-safe-range",
           lambda: tool("routed", {"query": "q", "count": 2**53}, headers={"Mcp-Param-Count": str(2**53)}),
           400, HEADER_MISMATCH, (spec("server/tools#x-mcp-header"),)),
    Reject("boolean-param-capitalised",
           lambda: tool("routed", {"query": "q", "dry_run": True}, headers={"Mcp-Param-Dry-Run": "True"}),
           400, HEADER_MISMATCH, (_SEC_ENCODING,)),
    Reject("boolean-param-as-a-number",
           lambda: tool("routed", {"query": "q", "dry_run": True}, headers={"Mcp-Param-Dry-Run": "1"}),
           400, HEADER_MISMATCH, (_SEC_ENCODING,)),
    Reject("boolean-param-opposite",
           lambda: tool("routed", {"query": "q", "dry_run": False}, headers={"Mcp-Param-Dry-Run": "true"}),
           400, HEADER_MISMATCH, (_SEC_CUSTOM,)),
    Reject("boolean-param-missing-for-false",
           lambda: tool("routed", {"query": "q", "dry_run": False}), 400, HEADER_MISMATCH, (_SEC_CUSTOM,)),
    Reject("nested-param-header-missing",
           lambda: tool("zoned", {"target": {"zone": "z1"}}), 400, HEADER_MISMATCH, (_SEC_CUSTOM,)),
    Reject("nested-param-header-mismatched",
           lambda: tool("zoned", {"target": {"zone": "z1"}}, headers={"Mcp-Param-Zone": "z2"}),
           400, HEADER_MISMATCH, (_SEC_CUSTOM,)),
    # 8. then the method itself: removed in this era, unknown, or not served (404, -32601)
    *(Reject(f"removed-{m.replace('/', '-')}", _removed(m), 404, METHOD_NOT_FOUND, (_SEC_VERSION,))
      for m in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe")),
    Reject("unknown-method", lambda: Call("unknown/method"), 404, METHOD_NOT_FOUND, (_SEC_VERSION,)),
    Reject("method-of-a-capability-the-server-lacks",
           lambda: Call("completion/complete", with_meta({"ref": {"type": "ref/prompt", "name": "greeting"},
                                                          "argument": {"name": "who", "value": ""}})),
           404, METHOD_NOT_FOUND, (_SEC_VERSION,)),
    # 9. then what the request needs of the client (-32021, 400)
    Reject("missing-client-capability", lambda: tool("needs_sampling", {}), 400, MISSING_CLIENT_CAPABILITY,
           (spec(f"{TRANSPORT}#backward-compatibility"),)),
    Reject("missing-client-capability-with-a-string-id",
           lambda: Call("tools/call", with_meta({"name": "needs_sampling", "arguments": {}}), rid="call-α"),
           400, MISSING_CLIENT_CAPABILITY, ()),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=list(c.marks)) for c in REJECTS])
@_SEC_VALIDATION
async def test_a_malformed_request_gets_the_exact_status_code_and_its_id_back(
        case: Reject, http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    call = case.call()
    response = await (raw_post(http_server.url, call) if case.raw else post(http, http_server.url, call))
    assert response.status_code == case.status, response.content
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["id"] == call.rid
    assert body["error"]["code"] == case.code
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    assert_no_session(response)


@_SEC_VERSION
@spec("basic/versioning#protocol-version-negotiation")
async def test_an_unsupported_version_lists_what_discover_lists(http: httpx.AsyncClient,
                                                               http_server: UvicornProcess) -> None:
    discover = Call("server/discover")
    supported = result_of(await post(http, http_server.url, discover), discover.rid)["supportedVersions"]
    assert VERSION in supported
    call = Call("server/discover", with_meta(version="v999.0.0"), {"MCP-Protocol-Version": "v999.0.0"}, rid=301)
    response = await post(http, http_server.url, call)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == UNSUPPORTED_PROTOCOL_VERSION
    assert error["data"] == {"supported": supported, "requested": "v999.0.0"}


@spec("basic/index#error-codes")
async def test_a_missing_capability_names_what_is_required_as_an_object(http: httpx.AsyncClient,
                                                                       http_server: UvicornProcess) -> None:
    refused = await post(http, http_server.url, tool("needs_sampling", {}))
    assert refused.status_code == 400
    assert refused.json()["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    declared = tool("needs_sampling", {}, capabilities={"sampling": {}})
    assert result_of(await post(http, http_server.url, declared), declared.rid)["content"][0]["text"] == \
        "sampling declared"


@_SEC_VERSION
@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe",
                                    "resources/unsubscribe", "unknown/method"])
async def test_method_not_found_is_404_with_a_json_rpc_body(method: str, http: httpx.AsyncClient,
                                                           http_server: UvicornProcess) -> None:
    call = Call(method, rid=500)
    response = await post(http, http_server.url, call)
    assert response.status_code == 404
    assert response.json() == {"jsonrpc": "2.0", "id": 500,
                               "error": {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}}


# -- what is accepted ----------------------------------------------------------------------------------------
@dataclass
class Accept:
    id: str
    call: Callable[[], Call]
    text: str | None = None
    """The tool's answer (None: only that the request was not refused)."""
    marks: tuple[pytest.MarkDecorator, ...] = ()
    raw: bool = False
    """Written on the socket by hand (header values httpx would refuse to send)."""


def _routed(arguments: dict[str, Any], **headers: str | None) -> Call:
    return tool("routed", {"query": "q", **arguments}, headers={k.replace("_", "-"): v for k, v in headers.items()})


ACCEPTS: list[Accept] = [
    Accept("client-info-is-optional", lambda: Call("tools/list", _drop_meta(META_CLIENT_INFO)), None, (_SEC_META,)),
    Accept("lowercase-header-names",
           lambda: Call("tools/list", headers={"MCP-Protocol-Version": None, "Mcp-Method": None,
                                               "mcp-protocol-version": VERSION, "mcp-method": "tools/list"}),
           None, (spec(f"{TRANSPORT}#case-sensitivity"),)),
    Accept("uppercase-header-names",
           lambda: Call("tools/list", headers={"MCP-Protocol-Version": None, "Mcp-Method": None,
                                               "MCP-PROTOCOL-VERSION": VERSION, "MCP-METHOD": "tools/list"}),
           None, (spec(f"{TRANSPORT}#case-sensitivity"),)),
    Accept("whitespace-around-header-values",
           lambda: tool("echo", {"text": "ows"}, headers={"Mcp-Name": "  echo\t", "Mcp-Method": " tools/call ",
                                                         "MCP-Protocol-Version": f"\t{VERSION} "}),
           "ows", (_SEC_VALIDATION,), raw=True),
    Accept("whitespace-around-a-param-header", lambda: _routed({"region": "eu"}, Mcp_Param_Region="  eu  "),
           "q: region=eu count=0 dry_run=False", (_SEC_CUSTOM,), raw=True),
    Accept("header-names-as-written-by-hand",
           lambda: tool("echo", {"text": "cased"}, headers={"MCP-Protocol-Version": None, "Mcp-Method": None,
                                                           "Mcp-Name": None, "mCp-PrOtOcOl-VeRsIoN": VERSION,
                                                           "MCP-method": "tools/call", "mcp-NAME": "echo"}),
           "cased", (spec(f"{TRANSPORT}#case-sensitivity"),), raw=True),
    Accept("base64-name", lambda: tool("echo", {"text": "b64"}, headers={"Mcp-Name": b64("echo")}), "b64",
           (_SEC_ENCODING,)),
    Accept("base64-name-of-a-non-ascii-uri",
           lambda: Call("resources/read", with_meta({"uri": "fixture://grüße"}), {"Mcp-Name": b64("fixture://grüße")}),
           None, (_SEC_ENCODING,)),
    Accept("prompts-get-with-its-name", lambda: Call("prompts/get", with_meta({"name": "greeting",
                                                                               "arguments": {"who": "Ada"}})),
           None, (_SEC_STANDARD,)),
    Accept("param-absent-needs-no-header", lambda: _routed({}), "q: region=<none> count=0 dry_run=False",
           (_SEC_CUSTOM,)),
    Accept("param-null-needs-no-header", lambda: _routed({"region": None}), None, (_SEC_CUSTOM,)),
    Accept("param-plain", lambda: _routed({"region": "eu-west1"}, Mcp_Param_Region="eu-west1"),
           "q: region=eu-west1 count=0 dry_run=False", (_SEC_CUSTOM,)),
    Accept("param-header-name-lowercase", lambda: _routed({"region": "eu"}, **{"mcp-param-region": "eu"}),
           "q: region=eu count=0 dry_run=False", (spec(f"{TRANSPORT}#case-sensitivity"),)),
    Accept("param-header-name-uppercase", lambda: _routed({"dry_run": True}, **{"MCP-PARAM-DRY-RUN": "true"}),
           "q: region=<none> count=0 dry_run=True", (spec(f"{TRANSPORT}#case-sensitivity"),)),
    Accept("param-base64-non-ascii", lambda: _routed({"region": "Hello, 世界"},
                                                     Mcp_Param_Region="=?base64?SGVsbG8sIOS4lueVjA==?="),
           "q: region=Hello, 世界 count=0 dry_run=False", (_SEC_ENCODING,)),
    Accept("param-base64-padded-value", lambda: _routed({"region": " padded "},
                                                        Mcp_Param_Region="=?base64?IHBhZGRlZCA=?="),
           "q: region= padded  count=0 dry_run=False", (_SEC_ENCODING,)),
    Accept("param-base64-of-a-sentinel-looking-value",
           lambda: _routed({"region": "=?base64?literal?="}, Mcp_Param_Region="=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
           "q: region==?base64?literal?= count=0 dry_run=False", (_SEC_ENCODING,)),
    Accept("param-literal-that-looks-like-base64", lambda: _routed({"region": "SGVsbG8="}, Mcp_Param_Region="SGVsbG8="),
           "q: region=SGVsbG8= count=0 dry_run=False", (_SEC_ENCODING,)),
    Accept("param-literal-with-only-the-sentinel-prefix",
           lambda: _routed({"region": "=?base64?abc"}, Mcp_Param_Region="=?base64?abc"),
           "q: region==?base64?abc count=0 dry_run=False", (_SEC_ENCODING,)),
    Accept("integer-param-plain", lambda: _routed({"count": 42}, Mcp_Param_Count="42"),
           "q: region=<none> count=42 dry_run=False", (_SEC_VALIDATION,)),
    Accept("integer-param-negative", lambda: _routed({"count": -7}, Mcp_Param_Count="-7"),
           "q: region=<none> count=-7 dry_run=False", (_SEC_ENCODING,)),
    Accept("integer-param-compared-numerically", lambda: _routed({"count": 42}, Mcp_Param_Count="42.0"),
           "q: region=<none> count=42 dry_run=False", (_SEC_VALIDATION,)),
    Accept("integer-param-zero", lambda: _routed({"count": 0}, Mcp_Param_Count="0"),
           "q: region=<none> count=0 dry_run=False", (_SEC_CUSTOM,)),
    Accept("integer-param-base64", lambda: _routed({"count": 42}, Mcp_Param_Count=b64("42")),
           "q: region=<none> count=42 dry_run=False", (_SEC_ENCODING,)),
    Accept("integer-param-at-the-safe-limit", lambda: _routed({"count": 2**53 - 1}, Mcp_Param_Count=str(2**53 - 1)),
           f"q: region=<none> count={2**53 - 1} dry_run=False", (spec("server/tools#x-mcp-header"),)),
    Accept("boolean-param-true", lambda: _routed({"dry_run": True}, Mcp_Param_Dry_Run="true"),
           "q: region=<none> count=0 dry_run=True", (_SEC_ENCODING,)),
    Accept("boolean-param-false", lambda: _routed({"dry_run": False}, Mcp_Param_Dry_Run="false"),
           "q: region=<none> count=0 dry_run=False", (_SEC_ENCODING,)),
    Accept("every-param-at-once",
           lambda: _routed({"region": "ap", "count": 3, "dry_run": True}, Mcp_Param_Region="ap", Mcp_Param_Count="3",
                           Mcp_Param_Dry_Run="true"), "q: region=ap count=3 dry_run=True", (_SEC_CUSTOM,)),
    Accept("an-undeclared-param-header-is-ignored", lambda: _routed({}, Mcp_Param_Unknown="whatever"),
           "q: region=<none> count=0 dry_run=False", (_SEC_CUSTOM,)),
    Accept("nested-param", lambda: tool("zoned", {"target": {"zone": "z1"}}, headers={"Mcp-Param-Zone": "z1"}),
           "zone=z1", (spec("server/tools#x-mcp-header"),)),
    Accept("nested-param-absent", lambda: tool("zoned", {"target": {}}), "zone=None", (_SEC_CUSTOM,)),
    Accept("nested-parent-absent", lambda: tool("zoned", {}), "zone=None", (_SEC_CUSTOM,)),
    Accept("stale-session-id-is-ignored",
           lambda: tool("echo", {"text": "no session"}, headers={"Mcp-Session-Id": "stale-" + "x" * 32}),
           "no session", (spec(f"{TRANSPORT}#earlier-streamable-http-revisions"),)),
    Accept("last-event-id-is-ignored", lambda: tool("echo", {"text": "fresh"}, headers={"Last-Event-ID": "post_3"}),
           "fresh", (spec(f"{TRANSPORT}#earlier-streamable-http-revisions"),)),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=list(c.marks)) for c in ACCEPTS])
async def test_a_well_formed_request_is_served(case: Accept, http: httpx.AsyncClient,
                                               http_server: UvicornProcess) -> None:
    call = case.call()
    response = await (raw_post(http_server.url, call) if case.raw else post(http, http_server.url, call))
    result = result_of(response, call.rid)
    assert result["resultType"] == "complete"
    assert_no_session(response)
    if case.text is not None:
        assert not result.get("isError"), result
        assert result["content"][0]["text"] == case.text


# -- what is not a request ------------------------------------------------------------------------------------
@spec(f"{TRANSPORT}#sending-messages")
@pytest.mark.parametrize("params", [with_meta({"requestId": 1}), {"requestId": 1}], ids=["with-meta", "header-only"])
async def test_a_notification_gets_202_and_no_body(params: dict[str, Any], http: httpx.AsyncClient,
                                                   http_server: UvicornProcess) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
    response = await http.post(http_server.url, content=json.dumps(body),
                               headers=standard_headers("notifications/cancelled"))
    assert response.status_code == 202
    assert response.content == b""
    assert_no_session(response)


@spec(f"{TRANSPORT}#sending-messages")
@pytest.mark.parametrize("body", [
    {"jsonrpc": "2.0", "id": 7, "result": {}},
    {"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "no"}},
    [Call("tools/list", rid=1).body(), Call("tools/list", rid=2).body()],
    [{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": with_meta({"requestId": 1})}],
], ids=["response", "error-response", "batch-of-requests", "batch-of-notifications"])
async def test_a_response_or_a_batch_is_400(body: Any, http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    response = await http.post(http_server.url, content=json.dumps(body), headers=standard_headers("tools/list"))
    assert response.status_code == 400, response.text
    assert error_of(response) == (INVALID_REQUEST, None)
    assert_no_session(response)


# -- no sessions ---------------------------------------------------------------------------------------------
@spec(f"{TRANSPORT}#earlier-streamable-http-revisions")
async def test_no_session_id_is_minted_or_echoed(http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    plain = await post(http, http_server.url, Call("server/discover"))
    assert_no_session(plain)
    # A live handshake-era session's id on a stateless request is ignored too: not echoed, not used.
    live = await initialize(http, http_server.url)
    call = tool("echo", {"text": "stateless"}, headers={"Mcp-Session-Id": live.sid})
    response = await post(http, http_server.url, call)
    assert result_of(response, call.rid)["content"][0]["text"] == "stateless"
    assert_no_session(response)
    assert await live.call("ping") == {}  # and the session itself is untouched


@spec(f"{TRANSPORT}#earlier-streamable-http-revisions")
@pytest.mark.parametrize("verb", ["GET", "DELETE"])
@pytest.mark.parametrize("extra", [{}, {"MCP-Protocol-Version": VERSION}, {"Last-Event-ID": "get_1"}],
                         ids=["bare", "with-version", "with-last-event-id"])
async def test_get_and_delete_without_a_session_are_405(verb: str, extra: dict[str, str], http: httpx.AsyncClient,
                                                        http_server: UvicornProcess) -> None:
    response = await http.request(verb, http_server.url, headers={"accept": "text/event-stream", **extra})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert error_of(response) == (INVALID_REQUEST, None)
    assert_no_session(response)


# -- JSON or SSE ---------------------------------------------------------------------------------------------
@spec(f"{TRANSPORT}#sending-messages")
async def test_a_fast_request_is_answered_with_application_json(http: httpx.AsyncClient,
                                                                http_server: UvicornProcess) -> None:
    call = tool("count_up", {"steps": 3})  # no progressToken: nothing to send before the answer
    response = await post(http, http_server.url, call)
    assert result_of(response, call.rid)["content"][0]["text"] == "counted to 3"


@spec(f"{TRANSPORT}#receiving-messages")
@spec("basic/patterns/progress#progress-flow")
async def test_a_request_that_sends_progress_is_an_sse_stream_without_ids_or_priming(
        http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    call = tool("count_up", {"steps": 3}, progressToken="p-1")
    async with http.stream("POST", http_server.url, content=json.dumps(call.body()),
                           headers=call.all_headers()) as response:
        assert response.status_code == 200
        assert response.headers["x-accel-buffering"] == "no"
        assert_no_session(response)
        events = await SSEReader(response).rest()
    assert all(e.id is None and e.retry is None and e.data for e in events), events  # no ids, no priming
    messages = [e.message for e in events]
    assert [m.get("method") for m in messages[:3]] == ["notifications/progress"] * 3
    assert [m["params"]["progress"] for m in messages[:3]] == [1, 2, 3]
    assert all(m["params"]["progressToken"] == "p-1" for m in messages[:3])
    assert len(messages) == 4
    assert messages[3]["id"] == call.rid
    assert messages[3]["result"]["content"][0]["text"] == "counted to 3"


@spec("server/utilities/logging#per-request-log-level")
@pytest.mark.parametrize(("level", "expected"), [(None, 0), ("info", 2), ("debug", 2), ("warning", 0)])
async def test_log_messages_only_when_the_request_asks_for_them(level: str | None, expected: int,
                                                                http: httpx.AsyncClient,
                                                                http_server: UvicornProcess) -> None:
    call = tool("chatty", {"count": 2}, log_level=level)
    async with http.stream("POST", http_server.url, content=json.dumps(call.body()),
                           headers=call.all_headers()) as response:
        assert response.status_code == 200
        if expected == 0:
            assert response.headers["content-type"] == "application/json"
            messages = [json.loads(await response.aread())]
        else:
            messages = [e.message for e in await SSEReader(response).rest()]
    logs = [m for m in messages if m.get("method") == "notifications/message"]
    assert len(logs) == expected
    assert all(m["params"]["level"] == "info" for m in logs)
    assert messages[-1]["result"]["content"][0]["text"] == "sent 2"


# -- results ---------------------------------------------------------------------------------------------------
CACHEABLE = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("prompts/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "fixture://watched"}),
]


@spec("server/utilities/caching#cacheable-results")
@spec("basic/index#resulttype")
@pytest.mark.parametrize(("method", "params"), CACHEABLE, ids=[m for m, _ in CACHEABLE])
async def test_cacheable_results_carry_result_type_server_info_and_caching_hints(
        method: str, params: dict[str, Any], http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    call = Call(method, with_meta(params))
    result = result_of(await post(http, http_server.url, call), call.rid)
    assert result["resultType"] == "complete"
    assert result["_meta"][META_SERVER_INFO] == {"name": "http-fixture", "version": "1.0.0",
                                                 "title": "HTTP transport fixtures"}
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")  # the server's defaults


@spec("basic/index#resulttype")
@pytest.mark.parametrize("call", [
    lambda: tool("echo", {"text": "t"}),
    lambda: Call("prompts/get", with_meta({"name": "greeting", "arguments": {"who": "Ada"}})),
], ids=["tools-call", "prompts-get"])
async def test_other_results_carry_result_type_and_server_info_but_no_caching_hints(
        call: Callable[[], Call], http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    made = call()
    result = result_of(await post(http, http_server.url, made), made.rid)
    assert result["resultType"] == "complete"
    assert result["_meta"][META_SERVER_INFO]["name"] == "http-fixture"
    assert "ttlMs" not in result
    assert "cacheScope" not in result


@spec("server/utilities/caching#cache-scope-field")
@spec("server/utilities/caching#time-to-live-ttl-field")
@pytest.mark.parametrize(("uri", "ttl", "scope"), [
    ("fixture://cached/both", 60_000, "public"),
    ("fixture://cached/ttl", 5_000, "private"),
    ("fixture://items/7", 0, "public"),
    ("fixture://watched", 0, "private"),
])
async def test_a_resource_can_override_the_caching_hints_of_its_reads(
        uri: str, ttl: int, scope: str, http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    call = Call("resources/read", with_meta({"uri": uri}))
    result = result_of(await post(http, http_server.url, call), call.rid)
    assert (result["ttlMs"], result["cacheScope"]) == (ttl, scope)
    assert result["contents"][0]["uri"] == uri


@spec("server/resources#error-handling")
async def test_an_unknown_resource_is_invalid_params_naming_the_uri(http: httpx.AsyncClient,
                                                                   http_server: UvicornProcess) -> None:
    uri = "fixture://nonexistent-resource"
    call = Call("resources/read", with_meta({"uri": uri}))
    response = await post(http, http_server.url, call)
    code, rid = error_of(response)
    assert (code, rid) == (INVALID_PARAMS, call.rid)
    assert response.json()["error"]["data"] == {"uri": uri}


# -- cancellation ----------------------------------------------------------------------------------------------
@spec(f"{TRANSPORT}#cancellation")
@spec("basic/patterns/cancellation#transport-specific-cancellation")
async def test_closing_the_sse_stream_cancels_the_handler(http: httpx.AsyncClient,
                                                          http_server: UvicornProcess) -> None:
    name = unique("sse")
    call = tool("until_cancelled", {"name": name}, progressToken="waiting")
    async with httpx.AsyncClient(timeout=READ_BOUND) as doomed, \
            doomed.stream("POST", http_server.url, content=json.dumps(call.body()),
                          headers=call.all_headers()) as response:
        first = await SSEReader(response).message()
        assert first["method"] == "notifications/progress"
    # The stream is closed; the handler ends with a CancelledError, which it recorded.
    assert await tool_text(http, http_server.url, "cancel_outcome", {"name": name}) == f"{name}: CancelledError"


@spec(f"{TRANSPORT}#cancellation")
async def test_disconnecting_before_a_json_answer_cancels_the_handler(http: httpx.AsyncClient,
                                                                      http_server: UvicornProcess) -> None:
    name = unique("json")
    call = tool("until_cancelled", {"name": name})  # no progressToken: the handler sends nothing
    async with httpx.AsyncClient(timeout=READ_BOUND) as doomed:
        waiting = asyncio.ensure_future(post(doomed, http_server.url, call))
        assert await tool_text(http, http_server.url, "until_cancelled_started", {"name": name}) == \
            f"{name}: started"
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
    assert await tool_text(http, http_server.url, "cancel_outcome", {"name": name}) == f"{name}: CancelledError"


# -- subscriptions/listen --------------------------------------------------------------------------------------






def final(event: SSEEvent, rid: int | str) -> Any:
    """The listen request's own answer: a clean end, tagged like everything on the stream."""
    message = event.message
    assert message["id"] == rid, message
    result = message["result"]
    assert result["resultType"] == "complete"
    assert result["_meta"][META_SUBSCRIPTION] == rid
    assert "ttlMs" not in result
    return result


@spec("basic/patterns/subscriptions#acknowledgment")
@spec("basic/patterns/subscriptions#receiving-notifications")
async def test_listen_over_a_real_server_acknowledges_then_forwards_tagged_changes(
        http: httpx.AsyncClient, http_server: UvicornProcess) -> None:
    call = listen_call({"toolsListChanged": True})
    async with httpx.AsyncClient(timeout=READ_BOUND) as streaming, \
            listening(streaming, http_server.url, call) as stream:
        ack = tagged(await stream.next(), call.rid)
        assert ack["method"] == ACK
        assert ack["params"]["notifications"] == {"toolsListChanged": True}
        assert await tool_text(http, http_server.url, "add_tool", {"name": unique("added")})
        change = tagged(await stream.next(), call.rid)
        assert change["method"] == "notifications/tools/list_changed"


def _listen_server(*, prompts: bool = True) -> MCPServer:
    server = MCPServer("listen-fixture", "2.0.0")

    @server.tool()
    async def busy(ctx: Context) -> str:
        """Log, report progress, and change the tool list: only the change may reach listen streams."""
        await ctx.info("busy log")
        await ctx.report_progress(1, 1)
        ctx.server.add_tool(Tool(_noop, name=f"added-{len(ctx.server.tools)}", description="added"))
        return "busy done"

    @server.resource("mem://watched")
    def watched() -> str:
        return "watched"

    if prompts:
        @server.prompt()
        def hello() -> str:
            """Say hello."""
            return "hello"

    return server


async def _noop() -> str:
    return "noop"


@contextlib.asynccontextmanager
async def served(server: MCPServer) -> AsyncIterator[tuple[MCPHttpApp, str, httpx.AsyncClient]]:
    app = MCPHttpApp(server, legacy_sse_path=None)
    async with serve_in_process(app) as base, httpx.AsyncClient(timeout=READ_BOUND) as client:
        yield app, base + "/mcp", client


@spec("basic/patterns/subscriptions#notification-filter")
@spec("basic/patterns/subscriptions#multiple-concurrent-subscriptions")
async def test_each_listen_stream_gets_only_what_it_opted_in_to_each_tagged() -> None:
    server = _listen_server()
    filters: dict[int | str, dict[str, Any]] = {
        1: {"toolsListChanged": True},
        "prompts": {"promptsListChanged": True},
        3: {"resourceSubscriptions": ["mem://watched"]},
        4: {"resourcesListChanged": True},
        5: {},
    }
    expected: dict[int | str, list[str]] = {
        1: ["notifications/tools/list_changed"],
        "prompts": ["notifications/prompts/list_changed"],
        3: ["notifications/resources/updated"],
        4: ["notifications/resources/list_changed"],
        5: [],
    }
    async with served(server) as (_, url, client), contextlib.AsyncExitStack() as streams:
        readers: dict[int | str, SSEReader] = {}
        for rid, wanted in filters.items():
            readers[rid] = await streams.enter_async_context(listening(client, url, listen_call(wanted, rid)))
            ack = tagged(await readers[rid].next(), rid)
            assert ack["method"] == ACK
            assert ack["params"]["notifications"] == wanted
        server.add_tool(Tool(_noop, name="new-tool", description="new"))
        server.add_prompt(Prompt(_noop, name="new-prompt", description="new"))
        server.resource_updated("mem://unwatched")
        server.resource_updated("mem://watched")
        server.resources.add(Resource("mem://new", _noop, name="new"))
        server.runtime.backend.bus.end_all()  # the server ends every subscription: what was published comes first, then the end
        for rid, reader in readers.items():
            events = await reader.rest()
            assert [tagged(e, rid)["method"] for e in events[:-1]] == expected[rid]
            final(events[-1], rid)


@spec("basic/patterns/subscriptions#receiving-notifications")
async def test_resource_updates_carry_the_uri_and_the_tag() -> None:
    server = _listen_server()
    async with served(server) as (_, url, client), \
            listening(client, url, listen_call({"resourceSubscriptions": ["mem://watched"]}, "r")) as stream:
        assert tagged(await stream.next(), "r")["method"] == ACK
        server.resource_updated("mem://watched")
        updated = tagged(await stream.next(), "r")
        assert updated == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                           "params": {"uri": "mem://watched", "_meta": {META_SUBSCRIPTION: "r"}}}


@spec("basic/patterns/subscriptions#acknowledgment")
async def test_the_ack_lists_only_the_subset_the_server_honours() -> None:
    server = _listen_server(prompts=False)
    asked = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": False,
             "resourceSubscriptions": ["mem://watched", "mem://b", 7], "somethingElse": True}
    async with served(server) as (_, url, client), listening(client, url, listen_call(asked, 9)) as stream:
        first = await stream.next()
        ack = tagged(first, 9)
        assert ack["method"] == ACK
        # mem://b names no resource (a read of it would fail): it is not honoured, like a non-string
        assert ack["params"]["notifications"] == {"toolsListChanged": True,
                                                  "resourceSubscriptions": ["mem://watched"]}


@spec(f"{TRANSPORT}#receiving-messages")
async def test_progress_and_log_messages_never_reach_a_listen_stream() -> None:
    server = _listen_server()
    call = listen_call({"toolsListChanged": True}, 11, log_level="debug", progressToken="listen-progress")
    async with served(server) as (_, url, client), listening(client, url, call) as stream:
        assert tagged(await stream.next(), 11)["method"] == ACK
        busy = tool("busy", {}, log_level="debug", progressToken="busy-progress")
        async with client.stream("POST", url, content=json.dumps(busy.body()), headers=busy.all_headers()) as own:
            on_own = [e.message for e in await SSEReader(own).rest()]
        assert [m.get("method") for m in on_own] == ["notifications/message", "notifications/progress", None]
        server.runtime.backend.bus.end_all()
        events = await stream.rest()
    assert [tagged(e, 11)["method"] for e in events[:-1]] == ["notifications/tools/list_changed"]
    final(events[-1], 11)


@spec("basic/patterns/subscriptions#graceful-closure")
async def test_ending_all_subscriptions_answers_each_listen_request_cleanly() -> None:
    server = _listen_server()
    async with served(server) as (_, url, client), listening(client, url, listen_call({}, 21)) as stream:
        assert tagged(await stream.next(), 21)["method"] == ACK
        server.runtime.backend.bus.end_all()
        events = await stream.rest()
        assert stream.ended
    assert len(events) == 1
    result = final(events[0], 21)
    assert result["_meta"][META_SERVER_INFO] == {"name": "listen-fixture", "version": "2.0.0"}


async def _lifespan_shutdown(app: MCPHttpApp) -> list[Any]:
    """Drive the app's own lifespan through shutdown; returns what it sent."""
    messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    messages.put_nowait({"type": "lifespan.shutdown"})
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return await messages.get()

    async def send(message: Any) -> None:
        sent.append(message)

    async with asyncio.timeout(READ_BOUND):
        await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
    return sent


@spec("basic/patterns/subscriptions#graceful-closure")
async def test_lifespan_shutdown_answers_open_listen_requests_cleanly() -> None:
    server = _listen_server()
    async with served(server) as (app, url, client), listening(client, url, listen_call({}, 31)) as stream:
        assert tagged(await stream.next(), 31)["method"] == ACK
        assert await _lifespan_shutdown(app) == [{"type": "lifespan.shutdown.complete"}]
        events = await stream.rest()
    assert len(events) == 1, events
    final(events[0], 31)


@spec("basic/patterns/subscriptions#graceful-closure")
async def test_stopping_a_real_server_answers_open_listen_requests_cleanly() -> None:
    with run_uvicorn(FIXTURE_SERVER) as process:
        call = listen_call({"toolsListChanged": True}, 41)
        async with httpx.AsyncClient(timeout=READ_BOUND) as client, listening(client, process.url, call) as stream:
            assert tagged(await stream.next(), 41)["method"] == ACK
            process.process.send_signal(signal.SIGTERM)
            events = await stream.rest()
        assert len(events) == 1, events
        final(events[0], 41)
