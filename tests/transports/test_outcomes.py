"""``wiremcp.transports.outcomes``: the HTTP status of an outcome of the core in each era, and the step-up
challenge a 403 for missing scopes carries."""

from __future__ import annotations

from typing import Any

import pytest

from wiremcp import MissingClientCapability, jsonrpc
from wiremcp.errors import (
    INTERNAL_ERROR,
    HeaderMismatch,
    InsufficientScope,
    InvalidMeta,
    InvalidParams,
    InvalidRequest,
    MCPError,
    MethodNotFound,
    ResourceNotFound,
    UnsupportedProtocolVersion,
)
from wiremcp.inbound import NotOnePerPost
from wiremcp.outcome import Outcome
from wiremcp.principal import CHALLENGE_KEY
from wiremcp.transports.asgi import Scope
from wiremcp.transports.outcomes import http_status, outcome_headers

TRANSPORT = "2026-07-28/basic/transports/streamable-http"
AUTH = "2026-07-28/basic/authorization"


def failed(error: MCPError) -> Outcome:
    return Outcome.failed(1, error)


RESULT = Outcome(jsonrpc.result(1, {"content": []}))
INTERNAL = Outcome(jsonrpc.error(1, INTERNAL_ERROR, "Internal error"), internal=True)
SCOPES = failed(InsufficientScope(["files:read", "files:write"]))

BAD_REQUESTS = {
    "invalid-meta": failed(InvalidMeta("Invalid params: _meta is required")),
    "header-mismatch": failed(HeaderMismatch("the Mcp-Method header is missing")),
    "unsupported-version": failed(UnsupportedProtocolVersion("1900-01-01", ("2026-07-28",))),
    "missing-capability": failed(MissingClientCapability({"sampling": {}})),
    "not-one-per-post": Outcome.failed(None, NotOnePerPost()),
}
OTHER_ERRORS = {
    "invalid-params": failed(InvalidParams("Invalid params: bad")),
    "invalid-request": failed(InvalidRequest("Invalid Request: bad")),
    "resource-not-found": failed(ResourceNotFound("a://b")),
    "an-internal-error-code-raised-on-purpose": failed(MCPError(INTERNAL_ERROR, "Completion failed")),
    "application-defined": failed(MCPError(1234, "custom")),
}
EVERY = {"result": RESULT, "internal": INTERNAL, "insufficient-scope": SCOPES,
         "method-not-found": failed(MethodNotFound("nope/nope")), **BAD_REQUESTS, **OTHER_ERRORS}


# -- the handshake era ------------------------------------------------------------------------------------
@pytest.mark.spec("2025-11-25/basic/transports#sending-messages-to-the-server")
@pytest.mark.parametrize("done", [v for k, v in EVERY.items() if k != "insufficient-scope"],
                         ids=[k for k in EVERY if k != "insufficient-scope"])
def test_the_handshake_era_answers_every_outcome_with_200(done: Outcome) -> None:
    assert http_status(done, stateless=False) == 200


@pytest.mark.spec("2025-11-25/basic/authorization#runtime-insufficient-scope-errors")
def test_the_handshake_era_answers_missing_scopes_with_403() -> None:
    assert http_status(SCOPES, stateless=False) == 403


# -- the stateless era ------------------------------------------------------------------------------------
def test_the_stateless_era_answers_a_result_with_200() -> None:
    assert http_status(RESULT, stateless=True) == 200


@pytest.mark.spec(f"{TRANSPORT}#server-validation")
@pytest.mark.spec("2026-07-28/basic/index#_meta")
@pytest.mark.parametrize("done", BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_the_stateless_era_answers_a_bad_request_with_400(done: Outcome) -> None:
    assert http_status(done, stateless=True) == 400


@pytest.mark.spec(f"{TRANSPORT}#protocol-version-header")
def test_the_stateless_era_answers_an_unknown_method_with_404() -> None:
    assert http_status(failed(MethodNotFound("nope/nope")), stateless=True) == 404


@pytest.mark.spec(f"{TRANSPORT}#protocol-version-header")
def test_a_method_not_found_code_is_404_whatever_raised_it() -> None:
    assert http_status(failed(MCPError(-32601, "Method not found: x")), stateless=True) == 404


@pytest.mark.spec(f"{AUTH}#runtime-insufficient-scope-errors")
def test_the_stateless_era_answers_missing_scopes_with_403() -> None:
    assert http_status(SCOPES, stateless=True) == 403


def test_the_stateless_era_answers_an_internal_error_with_500() -> None:
    assert http_status(INTERNAL, stateless=True) == 500


@pytest.mark.parametrize("done", OTHER_ERRORS.values(), ids=OTHER_ERRORS.keys())
def test_the_stateless_era_answers_other_errors_with_200(done: Outcome) -> None:
    assert http_status(done, stateless=True) == 200


# -- the step-up challenge --------------------------------------------------------------------------------
class Challenges:
    """A ``WWW-Authenticate`` builder as the auth middleware leaves one in the scope."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, *, error: str, scopes: list[str], description: str) -> str:
        self.calls.append({"error": error, "scopes": scopes, "description": description})
        return f'Bearer error="{error}", scope="{" ".join(scopes)}"'


def scope_with(build: Challenges | None) -> Scope:
    scope: Scope = {"type": "http", "headers": []}
    if build is not None:
        scope[CHALLENGE_KEY] = build
    return scope


@pytest.mark.spec(f"{AUTH}#runtime-insufficient-scope-errors")
def test_a_403_for_missing_scopes_carries_a_challenge_naming_every_scope_at_once() -> None:
    build = Challenges()
    assert outcome_headers(scope_with(build), SCOPES) == [
        (b"www-authenticate", b'Bearer error="insufficient_scope", scope="files:read files:write"')]
    assert build.calls == [{"error": "insufficient_scope", "scopes": ["files:read", "files:write"],
                            "description": "the token lacks scopes this request needs"}]


@pytest.mark.spec(f"{AUTH}#runtime-insufficient-scope-errors")
@pytest.mark.parametrize("done", [None, *(v for k, v in EVERY.items() if k != "insufficient-scope")],
                         ids=["cancelled", *(k for k in EVERY if k != "insufficient-scope")])
def test_no_other_outcome_carries_a_challenge(done: Outcome | None) -> None:
    build = Challenges()
    assert outcome_headers(scope_with(build), done) == []
    assert build.calls == []


def test_without_a_challenge_builder_a_403_carries_no_challenge() -> None:
    assert outcome_headers(scope_with(None), SCOPES) == []
