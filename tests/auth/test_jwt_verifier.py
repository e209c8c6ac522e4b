"""``JWKSVerifier``: JWT access tokens checked against the development AS's real JWKS endpoint.

The AS app is reached through httpx without a socket (the end-to-end tests use real sockets);
time is an injected clock, so expiry and refresh intervals are exact and nothing sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from joserfc import jwk, jwt
from starlette.responses import JSONResponse

from examples.dev_auth_server import DevAuthServer
from tests.support.http import FakeClock
from tests.support.tokens import alg_none_token, foreign_key_token, forge, hs256_with_public_key_token
from wiremcp.auth.jwt_verifier import JWKSVerifier, same_resource
from wiremcp.auth.verifier import InvalidToken, VerifierUnavailable
from wiremcp.principal import Principal
from wiremcp.transports.asgi import Receive, Scope, SendASGI

SPEC = "2025-11-25/basic/authorization"
ISSUER = "https://as.example.test"
RESOURCE = "https://mcp.example.test/mcp"
NOW = 1_750_000_000.0


class FlakyAS:
    """The dev AS app, which can be taken down (503 on every request); counts JWKS attempts."""

    def __init__(self, das: DevAuthServer) -> None:
        self.app = das.app()
        self.down = False
        self.attempts = 0

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if scope["type"] == "http" and scope["path"] == "/jwks":
            self.attempts += 1
        if self.down and scope["type"] == "http":
            await JSONResponse({"error": "down"}, 503)(scope, receive, send)
            return
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def das() -> DevAuthServer:
    return DevAuthServer(issuer=ISSUER)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
def flaky(das: DevAuthServer) -> Iterator[FlakyAS]:
    original = das.key
    yield FlakyAS(das)
    das.key = original  # a test may rotate the key


@pytest.fixture
async def verifier(flaky: FlakyAS, clock: FakeClock) -> AsyncIterator[JWKSVerifier]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=flaky), base_url=ISSUER) as client:
        yield JWKSVerifier(jwks_url=ISSUER + "/jwks", issuer=ISSUER, audience=RESOURCE, client=client, clock=clock)


def claims(**overrides: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"iss": ISSUER, "sub": "alice", "aud": RESOURCE, "scope": "mcp:tools mcp:read",
                           "client_id": "app-1", "iat": int(NOW), "nbf": int(NOW), "exp": int(NOW) + 600}
    out.update(overrides)
    return {k: v for k, v in out.items() if v is not None}


def sign(das: DevAuthServer, body: dict[str, Any], key: jwk.RSAKey | None = None) -> str:
    key = key or das.key
    token: str = jwt.encode({"alg": "RS256", "kid": key.kid, "typ": "at+jwt"}, body, key)
    return token


async def refused(verifier: JWKSVerifier, token: str, reason: str) -> None:
    with pytest.raises(InvalidToken, match=reason):
        await verifier.verify(token)


# -- what a good token gives ---------------------------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_a_valid_token_becomes_a_principal(das: DevAuthServer, verifier: JWKSVerifier) -> None:
    principal = await verifier.verify(sign(das, claims()))
    assert principal == Principal(ISSUER, "alice", "app-1", frozenset({"mcp:tools", "mcp:read"}), NOW + 600)
    assert principal.key == f"{ISSUER}|alice"
    assert principal.claims["aud"] == RESOURCE


async def test_scp_lists_and_azp_are_read_too(das: DevAuthServer, verifier: JWKSVerifier) -> None:
    principal = await verifier.verify(sign(das, claims(scope="a", scp=["b", "c"], client_id=None, azp="app-2")))
    assert principal.scopes == frozenset({"a", "b", "c"})
    assert principal.client_id == "app-2"


async def test_a_token_minted_by_the_dev_as_verifies(das: DevAuthServer, flaky: FlakyAS, clock: FakeClock) -> None:
    token = das.issue(subject="bob", client_id="c", scope="mcp:tools", audience=RESOURCE)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=flaky), base_url=ISSUER) as client:
        verifier = JWKSVerifier(jwks_url=ISSUER + "/jwks", issuer=ISSUER, audience=RESOURCE, client=client)
        assert (await verifier.verify(token)).key == f"{ISSUER}|bob"


# -- time ------------------------------------------------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_expiry_allows_the_leeway_and_not_a_second_more(das: DevAuthServer, verifier: JWKSVerifier,
                                                              clock: FakeClock) -> None:
    token = sign(das, claims(exp=int(NOW) + 100))
    clock.advance(100 + 30 - 1)
    assert (await verifier.verify(token)).subject == "alice"
    clock.advance(1)
    await refused(verifier, token, "claims are not acceptable")


@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_not_before_allows_the_leeway_only(das: DevAuthServer, verifier: JWKSVerifier) -> None:
    assert (await verifier.verify(sign(das, claims(nbf=int(NOW) + 30)))).subject == "alice"
    await refused(verifier, sign(das, claims(nbf=int(NOW) + 31)), "claims are not acceptable")
    await refused(verifier, sign(das, claims(iat=int(NOW) + 3600)), "claims are not acceptable")


@pytest.mark.parametrize("missing", ["exp", "sub", "iss"])
async def test_essential_claims_are_required(missing: str, das: DevAuthServer, verifier: JWKSVerifier) -> None:
    await refused(verifier, sign(das, claims(**{missing: None})), "claims are not acceptable")


# -- issuer and audience -----------------------------------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_another_issuer_is_refused_even_with_the_right_key(das: DevAuthServer, verifier: JWKSVerifier) -> None:
    await refused(verifier, sign(das, claims(iss="https://evil.example.test")), "claims are not acceptable")
    await refused(verifier, sign(das, claims(iss=ISSUER + "/")), "claims are not acceptable")


@pytest.mark.parametrize("audience", [
    RESOURCE, [RESOURCE], ["https://other.example.test", RESOURCE], "HTTPS://MCP.EXAMPLE.TEST/mcp",
    "https://Mcp.Example.Test/mcp", RESOURCE + "/"])
@pytest.mark.spec(f"{SPEC}#canonical-server-uri")
async def test_the_audience_may_differ_in_case_of_scheme_and_host_only(audience: Any, das: DevAuthServer,
                                                                       verifier: JWKSVerifier) -> None:
    assert (await verifier.verify(sign(das, claims(aud=audience)))).subject == "alice"


@pytest.mark.parametrize("audience", [
    None, "https://mcp.example.test/MCP", "https://mcp.example.test/mcp/other", "https://mcp.example.test",
    "https://mcp.example.test:8443/mcp", "http://mcp.example.test/mcp", "https://other.example.test/mcp",
    ["https://other.example.test/mcp"], [], 42, [42]])
@pytest.mark.spec(f"{SPEC}#token-audience-binding-and-validation")
async def test_a_token_for_another_resource_is_refused(audience: Any, das: DevAuthServer,
                                                       verifier: JWKSVerifier) -> None:
    await refused(verifier, sign(das, claims(aud=audience)), "aud")


def test_same_resource() -> None:
    assert same_resource("HTTPS://Example.COM/Path", "https://example.com/Path/")
    assert not same_resource("https://example.com/Path", "https://example.com/path")
    assert not same_resource("https://example.com/mcp", "https://example.com/mcp2")


# -- signatures and algorithms --------------------------------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_forged_signatures_are_refused(das: DevAuthServer, verifier: JWKSVerifier) -> None:
    body = claims()
    await refused(verifier, alg_none_token(das, RESOURCE), "does not verify")
    await refused(verifier, hs256_with_public_key_token(das, RESOURCE), "does not verify")
    await refused(verifier, foreign_key_token(das, RESOURCE, kid=str(das.key.kid)), "does not verify")
    await refused(verifier, foreign_key_token(das, RESOURCE), "does not verify")
    genuine = sign(das, body)
    head, payload, signature = genuine.split(".")
    tampered = forge({"alg": "RS256", "kid": das.key.kid}, {**body, "sub": "root"})
    await refused(verifier, f"{tampered.rsplit('.', 1)[0]}.{signature}", "does not verify")
    await refused(verifier, f"{head}.{payload}", "does not verify")
    await refused(verifier, "a.b.c", "does not verify")
    await refused(verifier, "", "does not verify")


@pytest.mark.parametrize("algorithms", [("HS256",), ("RS256", "none"), ("HS512", "ES256")])
def test_only_asymmetric_algorithms_may_be_allowed(algorithms: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="only asymmetric"):
        JWKSVerifier(jwks_url=ISSUER + "/jwks", issuer=ISSUER, audience=RESOURCE, algorithms=algorithms)


async def test_an_algorithm_outside_the_allow_list_is_refused(das: DevAuthServer, flaky: FlakyAS) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=flaky), base_url=ISSUER) as client:
        verifier = JWKSVerifier(jwks_url=ISSUER + "/jwks", issuer=ISSUER, audience=RESOURCE,
                                algorithms=("ES256",), client=client, clock=FakeClock(NOW))
        await refused(verifier, sign(das, claims()), "does not verify")


# -- the key cache ---------------------------------------------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_concurrent_first_requests_fetch_the_keys_once(das: DevAuthServer, verifier: JWKSVerifier,
                                                            flaky: FlakyAS) -> None:
    token = sign(das, claims())
    principals = await asyncio.gather(*(verifier.verify(token) for _ in range(50)))
    assert {p.key for p in principals} == {f"{ISSUER}|alice"}
    assert (verifier.fetches, flaky.attempts) == (1, 1)


@pytest.mark.spec(f"{SPEC}#token-theft")
async def test_unknown_kids_refresh_the_keys_at_most_once_per_interval(das: DevAuthServer, verifier: JWKSVerifier,
                                                                       flaky: FlakyAS, clock: FakeClock) -> None:
    good = sign(das, claims(exp=int(NOW) + 3600))
    await verifier.verify(good)
    assert flaky.attempts == 1
    forged = [foreign_key_token(das, RESOURCE, kid=f"kid-{i}") for i in range(6)]
    for token in forged[:3]:  # right after a fetch: no refresh at all
        await refused(verifier, token, "does not verify")
    assert flaky.attempts == 1
    clock.advance(60)
    results = await asyncio.gather(*(verifier.verify(t) for t in forged[3:]), return_exceptions=True)
    assert all(isinstance(r, InvalidToken) for r in results)
    assert flaky.attempts == 2  # one refresh for the lot
    assert (await verifier.verify(good)).subject == "alice"
    assert flaky.attempts == 2


async def test_a_rotated_key_is_picked_up_by_the_refresh(das: DevAuthServer, verifier: JWKSVerifier,
                                                         flaky: FlakyAS, clock: FakeClock) -> None:
    await verifier.verify(sign(das, claims(exp=int(NOW) + 3600)))
    das.key = jwk.RSAKey.generate_key(2048, parameters={"kid": "rotated", "alg": "RS256", "use": "sig"},
                                      private=True)
    rotated = sign(das, claims(exp=int(NOW) + 3600))
    await refused(verifier, rotated, "does not verify")  # too soon after the last fetch to refresh
    clock.advance(61)
    assert (await verifier.verify(rotated)).subject == "alice"
    assert flaky.attempts == 2


async def test_the_keys_are_fetched_again_after_cache_ttl(das: DevAuthServer, verifier: JWKSVerifier,
                                                          flaky: FlakyAS, clock: FakeClock) -> None:
    token = sign(das, claims(exp=int(NOW) + 7200))
    await verifier.verify(token)
    clock.advance(3600)
    await verifier.verify(token)
    assert flaky.attempts == 1
    clock.advance(1)
    await verifier.verify(token)  # served with the stale keys; the refresh runs in the background
    await verifier.settled()
    assert (flaky.attempts, verifier.fetches) == (2, 2)


async def test_without_keys_tokens_are_unavailable_not_refused_until_a_fetch_succeeds(
        das: DevAuthServer, verifier: JWKSVerifier, flaky: FlakyAS, clock: FakeClock) -> None:
    flaky.down = True
    with pytest.raises(VerifierUnavailable, match="JWKS could not be fetched: HTTP 503") as failed:
        await verifier.verify(sign(das, claims()))
    assert failed.value.retry_after == 1.0
    flaky.down = False
    with pytest.raises(VerifierUnavailable):  # backing off: not even the AS being back is noticed yet
        await verifier.verify(sign(das, claims()))
    assert flaky.attempts == 1
    clock.advance(1)
    assert (await verifier.verify(sign(das, claims()))).subject == "alice"
    assert (flaky.attempts, verifier.fetches) == (2, 1)


@pytest.mark.spec(f"{SPEC}#token-theft")
async def test_an_unreachable_as_neither_loses_the_keys_nor_gets_flooded(das: DevAuthServer, verifier: JWKSVerifier,
                                                                         flaky: FlakyAS, clock: FakeClock) -> None:
    good = sign(das, claims(exp=int(NOW) + 7200))
    await verifier.verify(good)
    flaky.down = True
    clock.advance(61)
    for i in range(5):  # forged kids while the AS fails: one refresh attempt per interval, not one each
        await refused(verifier, foreign_key_token(das, RESOURCE, kid=f"flood-{i}"), "does not verify")
    assert flaky.attempts == 2
    assert (await verifier.verify(good)).subject == "alice"  # the cached keys still work
    clock.advance(3600)  # stale keys, AS still down: kept, and retried in the background once per back-off
    for _ in range(5):
        assert (await verifier.verify(good)).subject == "alice"
    await verifier.settled()
    assert flaky.attempts == 3
    flaky.down = False
    clock.advance(61)
    await verifier.verify(good)
    await verifier.settled()
    assert flaky.attempts == 4
    assert verifier.fetches == 2


async def test_aclose_leaves_a_client_it_was_given_open(flaky: FlakyAS) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=flaky), base_url=ISSUER) as client:
        verifier = JWKSVerifier(jwks_url=ISSUER + "/jwks", issuer=ISSUER, audience=RESOURCE, client=client)
        await verifier.aclose()
        assert not client.is_closed
    own = JWKSVerifier(jwks_url=ISSUER + "/jwks", issuer=ISSUER, audience=RESOURCE)
    await own.aclose()
