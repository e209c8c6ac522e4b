"""``wiremcp.inbound``: the era a message speaks, decided once where it enters the core (``classify``), a
stateless request's envelope read there, and the rejections that happen before anything runs."""

from __future__ import annotations

from typing import Any

import pytest

from wiremcp import MCPServer, jsonrpc
from wiremcp.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    UNSUPPORTED_PROTOCOL_VERSION,
    BadRequest,
    HeaderMismatch,
    InvalidMeta,
    UnsupportedProtocolVersion,
)
from wiremcp.inbound import Inbound, NotOnePerPost, classify
from wiremcp.mirrored_headers import Headers
from wiremcp.outcome import Outcome
from wiremcp.protocol import (
    HANDSHAKE_VERSIONS,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_VERSION,
    SUPPORTED_VERSIONS,
)

VERSION = "2026-07-28"
INDEX = "2026-07-28/basic/index"
TRANSPORT = "2026-07-28/basic/transports/streamable-http"
VERSIONING = "2026-07-28/basic/versioning"

server = MCPServer("t")


def meta(**changes: Any) -> dict[str, Any]:
    """A complete ``_meta``; a change to None drops the key."""
    out: dict[str, Any] = {META_VERSION: VERSION, META_CAPABILITIES: {"sampling": {}},
                           META_CLIENT_INFO: {"name": "c", "version": "1"}, META_LOG_LEVEL: "info"}
    out.update(changes)
    return {k: v for k, v in out.items() if v is not None}


def stateless_request(rid: int | str = 1, method: str = "tools/list", /, **meta_changes: Any) -> jsonrpc.Request:
    return jsonrpc.Request(rid, method, {"_meta": meta(**meta_changes)})


def headers(**values: str) -> Headers:
    """Request headers as a transport hands them to ``classify``: a lower-case name to its value."""
    table = {name.replace("_", "-").lower(): value for name, value in values.items()}
    return table.get


def mirrored(method: str = "tools/list", version: str = VERSION, **extra: str) -> Headers:
    """The headers a conforming stateless client sends with ``method``."""
    return headers(mcp_protocol_version=version, mcp_method=method, **extra)


def rejected(result: Inbound | Outcome) -> Outcome:
    assert isinstance(result, Outcome), result
    assert result.error is not None
    return result


# -- the stateless era ------------------------------------------------------------------------------------
@pytest.mark.spec(f"{INDEX}#_meta")
@pytest.mark.parametrize("with_headers", [False, True], ids=["no-headers", "headers=None"])
def test_a_request_whose_meta_names_a_version_is_stateless_and_carries_its_envelope(with_headers: bool) -> None:
    request = stateless_request()
    inbound = classify(request, server, None) if with_headers else classify(request, server)
    assert isinstance(inbound, Inbound)
    assert inbound.stateless is True
    assert inbound.message is request
    assert inbound.request is request
    envelope = inbound.envelope
    assert envelope is not None
    assert envelope.protocol_version == VERSION
    assert envelope.client_capabilities == {"sampling": {}}
    assert envelope.client_info == {"name": "c", "version": "1"}
    assert envelope.log_level == "info"
    assert envelope.id is None  # no session: the envelope is this request's own state


@pytest.mark.spec(f"{INDEX}#_meta")
def test_an_envelope_without_optional_fields_has_no_client_info_or_log_level() -> None:
    inbound = classify(stateless_request(**{META_CLIENT_INFO: None, META_LOG_LEVEL: None}), server)
    assert isinstance(inbound, Inbound)
    assert inbound.envelope is not None
    assert inbound.envelope.client_info == {}
    assert inbound.envelope.log_level is None


@pytest.mark.spec(f"{INDEX}#_meta")
def test_with_http_headers_a_stateless_request_with_matching_headers_gets_its_envelope() -> None:
    inbound = classify(stateless_request(), server, mirrored())
    assert isinstance(inbound, Inbound)
    assert inbound.stateless is True
    assert inbound.envelope is not None
    assert inbound.envelope.protocol_version == VERSION


@pytest.mark.spec(f"{INDEX}#statelessness")
def test_the_meta_decides_even_on_a_session() -> None:
    inbound = classify(stateless_request(), server, mirrored(mcp_session_id="sess-1"))
    assert isinstance(inbound, Inbound)
    assert inbound.stateless is True
    assert inbound.envelope is not None


@pytest.mark.spec(f"{INDEX}#_meta")
def test_a_stateless_notification_is_stateless_with_no_envelope() -> None:
    note = jsonrpc.Notification("notifications/cancelled", {"requestId": 1, "_meta": meta()})
    inbound = classify(note, server)
    assert inbound == Inbound(note, stateless=True, envelope=None)


@pytest.mark.spec(f"{TRANSPORT}#protocol-version-header")
def test_with_http_headers_a_notification_with_a_stateless_version_header_is_stateless() -> None:
    note = jsonrpc.Notification("notifications/cancelled", {"requestId": 1})
    inbound = classify(note, server, headers(mcp_protocol_version=VERSION))
    assert inbound == Inbound(note, stateless=True)


@pytest.mark.spec(f"{TRANSPORT}#protocol-version-header")
@pytest.mark.parametrize("version", [VERSION, "1900-01-01"], ids=["stateless", "unknown"])
def test_with_http_headers_a_non_handshake_version_header_outside_a_session_makes_a_request_stateless(
        version: str) -> None:
    request = jsonrpc.Request(7, "tools/list", {})
    done = rejected(classify(request, server, mirrored(version=version)))
    # stateless, hence judged as a stateless request: it has no _meta
    assert isinstance(done.error, InvalidMeta)
    assert done.message["id"] == 7
    assert done.message["error"]["code"] == INVALID_PARAMS


@pytest.mark.spec(f"{TRANSPORT}#earlier-streamable-http-revisions")
def test_with_http_headers_a_stateless_version_header_on_a_session_stays_in_the_handshake_era() -> None:
    request = jsonrpc.Request(7, "tools/list", {})
    inbound = classify(request, server, mirrored(mcp_session_id="sess-1"))
    assert inbound == Inbound(request)


@pytest.mark.spec(f"{VERSIONING}#backward-compatibility-with-initialization-based-versions")
@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_with_http_headers_a_handshake_version_header_stays_in_the_handshake_era(version: str) -> None:
    request = jsonrpc.Request(7, "tools/list", {})
    inbound = classify(request, server, headers(mcp_protocol_version=version))
    assert inbound == Inbound(request, stateless=False, envelope=None)


@pytest.mark.spec(f"{VERSIONING}#backward-compatibility-with-initialization-based-versions")
def test_with_http_headers_a_request_without_a_version_header_or_meta_is_handshake_era() -> None:
    request = jsonrpc.Request("init", "initialize", {"protocolVersion": "2025-06-18"})
    assert classify(request, server, headers()) == Inbound(request)


# -- the handshake era ------------------------------------------------------------------------------------
@pytest.mark.spec(f"{VERSIONING}#backward-compatibility-with-initialization-based-versions")
@pytest.mark.parametrize("message", [
    jsonrpc.Request(1, "tools/list", {}),
    jsonrpc.Request(1, "tools/list", {"_meta": {"progressToken": "p"}}),
    jsonrpc.Request(1, "tools/list", {"_meta": "not an object"}),
    jsonrpc.Notification("notifications/initialized", {}),
    jsonrpc.Response(1, {"roots": []}, None),
], ids=["plain", "other-meta", "meta-not-an-object", "notification", "response"])
def test_a_message_that_names_no_stateless_version_is_handshake_era(message: jsonrpc.Message) -> None:
    inbound = classify(message, server)
    assert inbound == Inbound(message)
    assert inbound.stateless is False
    assert inbound.envelope is None


@pytest.mark.spec("2025-03-26/basic/index#batching")
@pytest.mark.parametrize("given", [None, headers(mcp_protocol_version=VERSION)], ids=["no-headers", "stateless-header"])
def test_a_batch_is_always_handshake_era(given: Headers | None) -> None:
    batch: list[jsonrpc.Message] = [stateless_request(1), jsonrpc.Notification("notifications/initialized", {})]
    inbound = classify(batch, server, given)
    assert inbound == Inbound(batch)


def test_only_a_request_has_a_request() -> None:
    inbound = Inbound(jsonrpc.Notification("notifications/initialized", {}))
    with pytest.raises(AssertionError):
        _ = inbound.request


# -- rejections -------------------------------------------------------------------------------------------
@pytest.mark.spec(f"{TRANSPORT}#sending-messages")
def test_a_response_in_the_stateless_era_is_rejected() -> None:
    response = jsonrpc.Response(3, {"roots": []}, None)
    done = rejected(classify(response, server, headers(mcp_protocol_version=VERSION)))
    assert isinstance(done.error, NotOnePerPost)
    assert isinstance(done.error, BadRequest)
    assert done.error.code == INVALID_REQUEST
    assert done.message == {"jsonrpc": "2.0", "id": None, "error": {
        "code": INVALID_REQUEST,
        "message": "Invalid Request: the stateless era takes one request or notification per POST"}}
    assert done.internal is False


@pytest.mark.spec(f"{INDEX}#_meta")
@pytest.mark.parametrize(("changes", "fragment"), [
    ({META_VERSION: ""}, META_VERSION),
    ({META_VERSION: 20260728}, META_VERSION),
    ({META_CAPABILITIES: None}, META_CAPABILITIES),
    ({META_CAPABILITIES: ["sampling"]}, META_CAPABILITIES),
    ({META_LOG_LEVEL: "verbose"}, "unknown log level 'verbose'"),
], ids=["empty-version", "version-not-a-string", "no-capabilities", "capabilities-not-an-object", "log-level"])
def test_a_stateless_request_with_a_malformed_meta_is_rejected_with_invalid_params(
        changes: dict[str, Any], fragment: str) -> None:
    done = rejected(classify(stateless_request("r-1", **changes), server))
    assert isinstance(done.error, InvalidMeta)
    assert done.message["jsonrpc"] == "2.0"
    assert done.message["id"] == "r-1"
    assert done.message["error"]["code"] == INVALID_PARAMS
    assert fragment in done.message["error"]["message"]


@pytest.mark.spec(f"{VERSIONING}#protocol-version-negotiation")
@pytest.mark.parametrize("version", ["1900-01-01", "2025-11-25"], ids=["unknown", "handshake-version"])
@pytest.mark.parametrize("over_http", [False, True], ids=["no-headers", "http"])
def test_a_stateless_request_naming_a_version_the_server_does_not_serve_statelessly_is_rejected(
        version: str, over_http: bool) -> None:
    request = stateless_request(5, **{META_VERSION: version})
    done = rejected(classify(request, server, mirrored(version=version) if over_http else None))
    assert isinstance(done.error, UnsupportedProtocolVersion)
    assert done.message == {"jsonrpc": "2.0", "id": 5, "error": {
        "code": UNSUPPORTED_PROTOCOL_VERSION, "message": "Unsupported protocol version",
        "data": {"supported": list(SUPPORTED_VERSIONS), "requested": version}}}


@pytest.mark.spec(f"{TRANSPORT}#server-validation")
@pytest.mark.parametrize(("given", "fragment"), [
    (headers(mcp_protocol_version="2026-07-29", mcp_method="tools/list"),
     "MCP-Protocol-Version header value '2026-07-29' does not match body value '2026-07-28'"),
    (headers(mcp_protocol_version=VERSION), "the Mcp-Method header is missing"),
    (mirrored(method="tools/call"), "Mcp-Method header value 'tools/call' does not match body value 'tools/list'"),
], ids=["version", "no-method", "method"])
def test_with_http_headers_a_stateless_request_whose_headers_do_not_match_its_body_is_rejected(
        given: Headers, fragment: str) -> None:
    done = rejected(classify(stateless_request(9), server, given))
    assert isinstance(done.error, HeaderMismatch)
    assert done.message["id"] == 9
    assert done.message["error"]["code"] == HEADER_MISMATCH
    assert fragment in done.message["error"]["message"]


@pytest.mark.spec(f"{TRANSPORT}#server-validation")
def test_with_http_headers_a_request_with_meta_but_no_version_header_is_a_header_mismatch() -> None:
    done = rejected(classify(stateless_request(9), server, headers(mcp_method="tools/list")))
    assert isinstance(done.error, HeaderMismatch)
    assert "the MCP-Protocol-Version header is missing" in done.message["error"]["message"]


@pytest.mark.spec(f"{TRANSPORT}#server-validation")
def test_with_http_headers_the_required_meta_fields_are_checked_before_the_headers_match() -> None:
    request = stateless_request(9, **{META_CAPABILITIES: None})
    done = rejected(classify(request, server, mirrored(version="2026-07-29")))
    assert isinstance(done.error, InvalidMeta)
