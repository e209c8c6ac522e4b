"""``wiremcp.outcome``: how a request ended, as the core hands it to the transport."""

from __future__ import annotations

import pytest

from wiremcp import jsonrpc
from wiremcp.errors import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    InvalidParams,
    MCPError,
    MethodNotFound,
    UnsupportedProtocolVersion,
)
from wiremcp.outcome import Outcome
from wiremcp.types import RequestId


@pytest.mark.spec("2025-11-25/basic/index#error-responses")
@pytest.mark.parametrize("request_id", [1, "abc", None], ids=["int", "str", "none"])
def test_failed_builds_the_json_rpc_error_with_the_request_id_and_keeps_the_error(
        request_id: RequestId | None) -> None:
    error = MethodNotFound("nope/nope")
    done = Outcome.failed(request_id, error)
    assert done.message == {"jsonrpc": "2.0", "id": request_id,
                            "error": {"code": METHOD_NOT_FOUND, "message": "Method not found: nope/nope"}}
    assert done.error is error
    assert done.internal is False


@pytest.mark.spec("2025-11-25/basic/index#error-responses")
def test_failed_carries_the_errors_data() -> None:
    error = UnsupportedProtocolVersion("1900-01-01", ("2026-07-28",))
    done = Outcome.failed(3, error)
    assert done.message["error"] == {"code": UNSUPPORTED_PROTOCOL_VERSION, "message": "Unsupported protocol version",
                                     "data": {"supported": ["2026-07-28"], "requested": "1900-01-01"}}
    assert done.error is error


def test_failed_is_the_same_message_as_a_json_rpc_error() -> None:
    done = Outcome.failed("r", InvalidParams("bad", {"field": "x"}))
    assert done.message == jsonrpc.error("r", INVALID_PARAMS, "bad", {"field": "x"})


def test_failed_keeps_any_subclass_of_mcp_error() -> None:
    class Custom(MCPError):
        pass

    error = Custom(-1, "custom")
    assert Outcome.failed(1, error).error is error


def test_a_result_outcome_has_no_error_and_is_not_internal() -> None:
    done = Outcome(jsonrpc.result(1, {"tools": []}))
    assert done.message == {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
    assert done.error is None
    assert done.internal is False
