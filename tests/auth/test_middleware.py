"""``wiremcp.auth.middleware``: ``BearerAuth`` at the ASGI level: what is refused, how (status and
``WWW-Authenticate``), what gets through (the principal in the scope), and where it sits in the HTTP app
(how the deployment turns it on from ``WIREMCP_AUTH_*`` is ``test_deployment.py``'s).

A static verifier stands in for the authorization server here (the JWKS and introspection verifiers
have their own tests, and the end-to-end tests run the real thing); the app behind the middleware
records every request that reaches it.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.support.http import asgi_request
from tests.support.tokens import challenge_params
from wiremcp import MCPServer
from wiremcp.auth.metadata import WELL_KNOWN, ProtectedResource
from wiremcp.auth.middleware import BearerAuth, Challenge
from wiremcp.auth.verifier import StaticTokenVerifier, TokenVerifier, VerifierUnavailable
from wiremcp.principal import CHALLENGE_KEY, SCOPE_KEY, Principal
from wiremcp.transports.asgi import Receive, Scope, SendASGI, respond
from wiremcp.transports.http_app import MCPHttpApp

SPEC = "2025-11-25/basic/authorization"
RESOURCE = "https://mcp.example.test/mcp"
ISSUER = "https://as.example.test"
METADATA_URL = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"
ALICE = Principal(ISSUER, "alice", "app", frozenset({"mcp:tools", "mcp:read"}))
BOB = Principal(ISSUER, "bob", "app", frozenset({"mcp:read"}))
ROOT = Principal(ISSUER, "root", "app", frozenset({"mcp"}))


class Inner:
    """The protected app: records the scopes of the requests that reach it."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = []

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        self.scopes.append(scope)
        if scope["type"] == "http":
            await respond(send, 200, b"inner", content_type=b"text/plain")


def guarded(inner: Inner, required: tuple[str, ...] = ("mcp:tools",),
            scopes_supported: tuple[str, ...] = ("mcp:tools", "mcp:read", "offline_access")) -> BearerAuth:
    resource = ProtectedResource(RESOURCE, (ISSUER,), scopes_supported)
    verifier = StaticTokenVerifier({"alice-token": ALICE, "bob-token": BOB, "root-token": ROOT})
    return BearerAuth(inner, verifier=verifier, resource=resource, required_scopes=required)


async def call(app: Any, headers: list[tuple[str, str]] | dict[str, str] | None = None, *, path: str = "/mcp",
               method: str = "POST", query: bytes = b"", root_path: str = "") -> tuple[int, dict[str, str], bytes]:
    """One request, with headers given as pairs (so a name may repeat)."""
    pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    scope: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                    "scheme": "https", "path": path, "raw_path": path.encode(), "root_path": root_path,
                    "query_string": query, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 443),
                    "headers": [(b"host", b"mcp.example.test")] + [(k.encode(), v.encode()) for k, v in pairs]}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = sent[0]
    return (start["status"], {k.decode(): v.decode() for k, v in start["headers"]},
            b"".join(m.get("body", b"") for m in sent[1:]))


# -- refused ---------------------------------------------------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#protected-resource-metadata-discovery-requirements")
async def test_no_token_gets_401_naming_the_metadata_and_the_scopes() -> None:
    inner = Inner()
    status, headers, body = await call(guarded(inner))
    assert status == 401
    # No error code without a token (RFC 6750 §3.1); offline_access never in a challenge.
    assert headers["www-authenticate"] == f'Bearer scope="mcp:tools", resource_metadata="{METADATA_URL}"'
    assert headers["content-type"] == "application/json"
    assert b'"code":-32600' in body
    assert inner.scopes == []


BAD = [
    pytest.param([("authorization", "Basic YWxpY2U6cHc=")], id="basic"),
    pytest.param([("authorization", "Bearer")], id="bearer-without-token"),
    pytest.param([("authorization", "Bearer ")], id="bearer-blank"),
    pytest.param([("authorization", "Bearer\talice-token")], id="tab-separated"),
    pytest.param([("authorization", "Bearer alice-token alice-token")], id="two-tokens"),
    pytest.param([("authorization", "Bearer alice-token"), ("authorization", "Bearer bob-token")],
                 id="two-headers"),
    pytest.param([("authorization", "Bearer alice-token"), ("authorization", "Bearer alice-token")],
                 id="two-identical-headers"),
    pytest.param([("authorization", "alice-token")], id="no-scheme"),
    pytest.param([("authorization", "Token alice-token")], id="another-scheme"),
    pytest.param([("authorization", "Bearer mallory-token")], id="unknown-token"),
    pytest.param([("authorization", "Bearer alice-token2")], id="near-miss"),
]


@pytest.mark.parametrize("headers", BAD)
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_a_malformed_or_unknown_token_gets_401_invalid_token(headers: list[tuple[str, str]]) -> None:
    inner = Inner()
    app = guarded(inner)
    status, response, _ = await call(app, headers)
    assert status == 401
    assert challenge_params(response["www-authenticate"]) == {
        "error": "invalid_token", "scope": "mcp:tools", "resource_metadata": METADATA_URL}
    assert inner.scopes == []
    assert app.failures == 1


async def test_every_refusal_is_reported_with_its_reason() -> None:
    reasons: list[str] = []
    app = guarded(Inner())
    app.on_failure = reasons.append
    await call(app)
    await call(app, {"authorization": "Token alice-token"})
    await call(app, {"authorization": "Bearer mallory-token"})
    await call(app, {"authorization": "Bearer bob-token"})
    await call(app, {"authorization": "Bearer alice-token"}, query=b"access_token=alice-token")
    assert (await call(app, {"authorization": "Bearer alice-token"}))[0] == 200
    assert reasons == ["missing_token", "malformed", "invalid_token", "insufficient_scope", "token_in_url"]


@pytest.mark.parametrize("query", [b"access_token=alice-token", b"x=1&access_token=alice-token",
                                   b"access_token=", b"access_token"])
@pytest.mark.spec(f"{SPEC}#token-requirements")
async def test_a_token_in_the_query_string_is_refused_even_with_a_good_header(query: bytes) -> None:
    inner = Inner()
    for headers in ({}, {"authorization": "Bearer alice-token"}):
        status, response, body = await call(guarded(inner), headers, query=query)
        assert status == 401
        assert challenge_params(response["www-authenticate"])["error"] == "invalid_token"
        assert b"Authorization header" in body
    assert inner.scopes == []


@pytest.mark.spec(f"{SPEC}#error-handling")
async def test_a_token_without_the_required_scopes_gets_403() -> None:
    inner = Inner()
    status, headers, _ = await call(guarded(inner, required=("mcp:tools", "mcp:read")), {"authorization": "Bearer bob-token"})
    assert status == 403
    # Every scope needed, in one challenge (not only the missing one).
    assert challenge_params(headers["www-authenticate"]) == {
        "error": "insufficient_scope", "scope": "mcp:tools mcp:read", "resource_metadata": METADATA_URL}
    assert inner.scopes == []


async def test_the_token_is_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    secret = "very-secret-token-value"
    with caplog.at_level(logging.DEBUG):
        await call(guarded(Inner()), {"authorization": f"Bearer {secret}"})
        await call(guarded(Inner()), {"authorization": f"Bearer {secret} {secret}"})
        await call(guarded(Inner()), query=f"access_token={secret}".encode())
    assert caplog.records  # refusals are logged, with their reason
    assert all(secret not in record.getMessage() for record in caplog.records)


class Counting(TokenVerifier):
    """Counts what reaches the verifier behind the middleware."""

    def __init__(self, inner: TokenVerifier) -> None:
        self.inner = inner
        self.seen: list[str] = []

    async def verify(self, token: str) -> Principal:
        self.seen.append(token)
        return await self.inner.verify(token)


class Unreachable(TokenVerifier):
    """A verifier whose authorization server cannot be reached right now."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = retry_after

    async def verify(self, token: str) -> Principal:
        raise VerifierUnavailable("the JWKS could not be fetched: ConnectError", retry_after=self.retry_after)


@pytest.mark.parametrize("token", ["alice-token,", 'alice"token', "alice=token", "=alice", "alice\\token",
                                   "alice;token", "alice%2Dtoken", "alice:token", "alicé-token", "(alice)"])
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_a_token_that_is_not_a_b64token_is_refused_before_the_verifier(token: str) -> None:
    inner = Inner()
    app = guarded(inner)
    verifier = Counting(app.verifier)
    app.verifier = verifier
    reasons: list[str] = []
    app.on_failure = reasons.append
    status, headers, body = await call(app, {"authorization": f"Bearer {token}"})
    assert status == 401
    assert challenge_params(headers["www-authenticate"])["error"] == "invalid_token"
    assert b'"code":-32600' in body
    assert (verifier.seen, reasons, inner.scopes) == ([], ["malformed"], [])


async def test_every_b64token_character_reaches_the_verifier() -> None:
    token = "AZaz09-._~+/alice=="
    inner = Inner()
    verifier = Counting(StaticTokenVerifier({token: ALICE}))
    resource = ProtectedResource(RESOURCE, (ISSUER,))
    status, _, _ = await call(BearerAuth(inner, verifier=verifier, resource=resource),
                              {"authorization": f"Bearer {token}"})
    assert (status, verifier.seen) == (200, [token])


@pytest.mark.parametrize(("retry_after", "header"), [(0.0, "1"), (0.2, "1"), (1.0, "1"), (7.2, "8"), (60.0, "60")])
@pytest.mark.spec(f"{SPEC}#error-handling")
async def test_an_unreachable_authorization_server_gets_503_with_retry_after(retry_after: float,
                                                                            header: str) -> None:
    """Not 401: the token is not at fault, and a 401 would send the client back into its OAuth flow."""
    inner = Inner()
    reasons: list[str] = []
    app = BearerAuth(inner, verifier=Unreachable(retry_after), resource=ProtectedResource(RESOURCE, (ISSUER,)),
                     required_scopes=("mcp:tools",), on_failure=reasons.append)
    status, headers, body = await call(app, {"authorization": "Bearer alice-token"})
    assert status == 503
    assert headers["retry-after"] == header
    assert "www-authenticate" not in headers
    assert headers["content-type"] == "application/json"
    assert b'"code":-32603' in body
    assert (reasons, app.failures, inner.scopes) == (["unavailable"], 1, [])


# -- let through --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["Bearer alice-token", "bearer alice-token", "BEARER alice-token",
                                   "Bearer   alice-token  ", "  Bearer alice-token"])
@pytest.mark.spec(f"{SPEC}#token-requirements")
async def test_a_valid_token_reaches_the_app_with_its_principal(value: str) -> None:
    inner = Inner()
    status, _, body = await call(guarded(inner), {"authorization": value})
    assert (status, body) == (200, b"inner")
    (scope,) = inner.scopes
    assert scope[SCOPE_KEY] is ALICE
    assert isinstance(scope[CHALLENGE_KEY], Challenge)


@pytest.mark.spec(f"{SPEC}#scope-challenge-handling")
async def test_a_broader_scope_covers_the_required_ones() -> None:
    inner = Inner()
    status, _, _ = await call(guarded(inner, required=("mcp:tools", "mcp:read")), {"authorization": "Bearer root-token"})
    assert status == 200
    assert inner.scopes[0][SCOPE_KEY] is ROOT


async def test_lifespan_and_other_scopes_pass_through() -> None:
    inner = Inner()
    app = guarded(inner)

    async def receive() -> dict[str, Any]:
        return {"type": "lifespan.startup"}

    async def send(message: Any) -> None:
        raise AssertionError("nothing to send")

    await app({"type": "lifespan"}, receive, send)
    assert [s["type"] for s in inner.scopes] == ["lifespan"]


# -- the metadata needs no token ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [WELL_KNOWN + "/mcp", WELL_KNOWN, WELL_KNOWN + "/mcp/", WELL_KNOWN + "/"])
@pytest.mark.spec(f"{SPEC}#authorization-server-location")
async def test_the_metadata_is_served_without_a_token(path: str) -> None:
    inner = Inner()
    for headers in ({}, {"authorization": "Bearer junk"}):
        status, response, body = await call(guarded(inner), headers, path=path, method="GET")
        assert status == 200
        assert response["content-type"] == "application/json"
        assert b'"resource":"https://mcp.example.test/mcp"' in body
    assert inner.scopes == []


async def test_the_metadata_is_found_under_a_root_path() -> None:
    status, _, _ = await call(guarded(Inner()), path="/api" + WELL_KNOWN + "/mcp", method="GET", root_path="/api")
    assert status == 200


async def test_other_well_known_paths_need_a_token() -> None:
    status, _, _ = await call(guarded(Inner()), path=WELL_KNOWN + "/other", method="GET")
    assert status == 401


# -- the challenge ------------------------------------------------------------------------------------------------------
def test_challenge_values_are_quoted_and_escaped() -> None:
    challenge = Challenge(ProtectedResource(RESOURCE, (ISSUER,)))
    value = challenge(error="insufficient_scope", scopes=["a", 'b"c', "offline_access", "d\\e"],
                      description='needs "more"')
    assert value == ('Bearer error="insufficient_scope", scope="a b\\"c d\\\\e", '
                     f'resource_metadata="{METADATA_URL}", error_description="needs \\"more\\""')
    assert challenge_params(value) == {"error": "insufficient_scope", "scope": 'a b"c d\\e',
                                       "resource_metadata": METADATA_URL, "error_description": 'needs "more"'}
    assert challenge() == f'Bearer resource_metadata="{METADATA_URL}"'


# -- in the HTTP app: after the Host/Origin guard -------------------------------------------------------------------------
async def test_the_dns_rebinding_guard_comes_before_authentication() -> None:
    inner_calls: list[str] = []
    server = MCPServer("g")

    def authenticate(app: Any) -> Any:
        inner_calls.append("built")
        return guarded_app(app)

    def guarded_app(app: Any) -> BearerAuth:
        resource = ProtectedResource("http://127.0.0.1/mcp", (ISSUER,))
        return BearerAuth(app, verifier=StaticTokenVerifier({}), resource=resource)

    app = MCPHttpApp(server, authenticate=authenticate)
    bad_host = await asgi_request(app, "POST", b"{}", {"host": "evil.example"})
    assert bad_host.status == 421
    assert "www-authenticate" not in bad_host.headers
    bad_origin = await asgi_request(app, "POST", b"{}", {"origin": "https://evil.example"})
    assert bad_origin.status == 403
    assert "www-authenticate" not in bad_origin.headers
    unauthenticated = await asgi_request(app, "POST", b"{}")
    assert unauthenticated.status == 401
    assert unauthenticated.headers["www-authenticate"].startswith("Bearer ")
    assert inner_calls == ["built"]
