"""``wiremcp.envelope``: what a stateless request's ``_meta`` declares, checked in the spec's order (the
required fields, -32602; then the version, -32022; then the log level, -32602), and the state it gives."""

from __future__ import annotations

from typing import Any

import pytest

from wiremcp.envelope import envelope, require_fields
from wiremcp.errors import (
    INVALID_PARAMS,
    UNSUPPORTED_PROTOCOL_VERSION,
    BadRequest,
    InvalidMeta,
    MCPError,
    UnsupportedProtocolVersion,
)
from wiremcp.protocol import (
    HANDSHAKE_VERSIONS,
    LOG_LEVELS,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_VERSION,
    SUPPORTED_VERSIONS,
)
from wiremcp.state import SessionState

VERSION = "2026-07-28"
META = "2026-07-28/basic/index#_meta"
NO_META = ("Invalid params: _meta with io.modelcontextprotocol/protocolVersion and "
           "io.modelcontextprotocol/clientCapabilities is required")
NO_VERSION = f"Invalid params: _meta[{META_VERSION!r}] is required"
NO_CAPABILITIES = f"Invalid params: _meta[{META_CAPABILITIES!r}] is required (an object; {{}} for none)"


def params(**changes: Any) -> dict[str, Any]:
    """Request params with a complete ``_meta``; a change to None drops the key."""
    meta: dict[str, Any] = {META_VERSION: VERSION, META_CAPABILITIES: {"roots": {}},
                            META_CLIENT_INFO: {"name": "c", "version": "1"}}
    meta.update(changes)
    return {"cursor": "x", "_meta": {k: v for k, v in meta.items() if v is not None}}


def refused(given: dict[str, Any]) -> MCPError:
    with pytest.raises(MCPError) as raised:
        envelope(given)
    return raised.value


# -- require_fields ---------------------------------------------------------------------------------------
@pytest.mark.spec(META)
def test_require_fields_returns_the_meta_itself() -> None:
    given = params()
    assert require_fields(given) is given["_meta"]


@pytest.mark.spec(META)
def test_require_fields_ignores_the_version_value_and_the_optional_fields() -> None:
    given = params(**{META_VERSION: "1900-01-01", META_CLIENT_INFO: None})
    assert require_fields(given) == {META_VERSION: "1900-01-01", META_CAPABILITIES: {"roots": {}}}


@pytest.mark.spec(META)
@pytest.mark.parametrize("given", [{}, {"_meta": None}, {"_meta": "2026-07-28"}, {"_meta": [META_VERSION]}],
                         ids=["absent", "null", "a-string", "a-list"])
def test_a_missing_meta_is_invalid_params(given: dict[str, Any]) -> None:
    with pytest.raises(InvalidMeta) as raised:
        require_fields(given)
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message == NO_META


@pytest.mark.spec(META)
@pytest.mark.parametrize("version", [None, "", 20260728, ["2026-07-28"]], ids=["absent", "empty", "a-number", "a-list"])
def test_a_missing_or_invalid_version_is_invalid_params(version: Any) -> None:
    with pytest.raises(InvalidMeta) as raised:
        require_fields(params(**{META_VERSION: version}))
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message == NO_VERSION


@pytest.mark.spec(META)
@pytest.mark.parametrize("capabilities", [None, [], "roots", True], ids=["absent", "a-list", "a-string", "true"])
def test_missing_or_invalid_capabilities_are_invalid_params(capabilities: Any) -> None:
    with pytest.raises(InvalidMeta) as raised:
        require_fields(params(**{META_CAPABILITIES: capabilities}))
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message == NO_CAPABILITIES


@pytest.mark.spec(META)
def test_the_version_field_is_checked_before_the_capabilities() -> None:
    error = refused(params(**{META_VERSION: None, META_CAPABILITIES: None}))
    assert error.message == NO_VERSION


# -- envelope ---------------------------------------------------------------------------------------------
@pytest.mark.spec(META)
def test_envelope_returns_the_state_the_request_declares() -> None:
    state = envelope(params(**{META_LOG_LEVEL: "warning"}))
    assert state == SessionState(protocol_version=VERSION, client_capabilities={"roots": {}},
                                 client_info={"name": "c", "version": "1"}, log_level="warning",
                                 initialized=True, ready=True)
    assert state.id is None
    assert state.server_capabilities == []
    assert state.subscriptions == set()
    assert state.owner is None


@pytest.mark.spec(META)
@pytest.mark.parametrize("info", [None, "c/1", ["c", "1"]], ids=["absent", "a-string", "a-list"])
def test_client_info_that_is_not_an_object_is_left_out(info: Any) -> None:
    assert envelope(params(**{META_CLIENT_INFO: info})).client_info == {}


@pytest.mark.spec(META)
def test_empty_capabilities_declare_none() -> None:
    assert envelope(params(**{META_CAPABILITIES: {}})).client_capabilities == {}


@pytest.mark.spec("2026-07-28/server/utilities/logging#per-request-log-level")
@pytest.mark.parametrize("level", [None, *LOG_LEVELS])
def test_every_log_level_or_none_is_taken(level: str | None) -> None:
    assert envelope(params(**{META_LOG_LEVEL: level})).log_level == level


@pytest.mark.spec("2026-07-28/server/utilities/logging#per-request-log-level")
@pytest.mark.parametrize("level", ["verbose", "INFO", "", 3], ids=["unknown", "upper-case", "empty", "a-number"])
def test_an_unknown_log_level_is_invalid_params(level: Any) -> None:
    error = refused(params(**{META_LOG_LEVEL: level}))
    assert isinstance(error, InvalidMeta)
    assert error.code == INVALID_PARAMS
    assert error.message == f"Invalid params: unknown log level {level!r}"


@pytest.mark.spec("2026-07-28/server/utilities/logging#per-request-log-level")
@pytest.mark.parametrize("level", [["debug"], {"level": "debug"}], ids=["a-list", "an-object"])
def test_a_log_level_that_is_not_a_string_is_invalid_params(level: Any) -> None:
    error = refused(params(**{META_LOG_LEVEL: level}))
    assert error.code == INVALID_PARAMS


@pytest.mark.spec("2026-07-28/basic/versioning#protocol-version-negotiation")
@pytest.mark.parametrize("version", ["1900-01-01", "2026-07-29", *HANDSHAKE_VERSIONS])
def test_a_version_not_served_statelessly_is_unsupported(version: str) -> None:
    error = refused(params(**{META_VERSION: version}))
    assert isinstance(error, UnsupportedProtocolVersion)
    assert isinstance(error, BadRequest)
    assert error.code == UNSUPPORTED_PROTOCOL_VERSION
    assert error.message == "Unsupported protocol version"
    assert error.data == {"supported": list(SUPPORTED_VERSIONS), "requested": version}
    assert error.to_error() == {"code": UNSUPPORTED_PROTOCOL_VERSION, "message": "Unsupported protocol version",
                                "data": {"supported": list(SUPPORTED_VERSIONS), "requested": version}}


@pytest.mark.spec(META)
def test_the_required_fields_are_checked_before_the_version() -> None:
    error = refused(params(**{META_VERSION: "1900-01-01", META_CAPABILITIES: None}))
    assert error.code == INVALID_PARAMS
    assert error.message == NO_CAPABILITIES


@pytest.mark.spec("2026-07-28/basic/versioning#protocol-version-negotiation")
def test_the_version_is_checked_before_the_log_level() -> None:
    error = refused(params(**{META_VERSION: "1900-01-01", META_LOG_LEVEL: "verbose"}))
    assert error.code == UNSUPPORTED_PROTOCOL_VERSION
