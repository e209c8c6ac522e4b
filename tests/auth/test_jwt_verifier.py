"""``wiremcp.auth.jwt_verifier``: ``JWKSVerifier``, JWT access tokens checked against the development AS's
real JWKS endpoint, and the verifier when that endpoint fails, refuses connections or stalls.

- The AS app reached through httpx without a socket (the end-to-end tests use real sockets): what a good
  token gives, time, issuer and audience, signatures and algorithms, the key cache.
- Outages: the endpoint is real (a loopback socket, ``tests.support.upstream``, whose tokens name
  ``UPSTREAM_RESOURCE``) and counts the fetches it sees. A stalled endpoint holds requests until released;
  the verifier's fetch timeout is then small and every wait has a bound of ``BOUND`` (ten timeouts), a
  failure bound, never a measurement: the fetches the endpoint counts show that requests share one.

Time is an injected clock (``FakeClock``), so expiry, refresh and back-off intervals pass when the test
says so, and nothing sleeps.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from joserfc import jwk, jwt
from starlette.responses import JSONResponse

from examples.dev_auth_server import DevAuthServer
from tests.support.http import FakeClock
from tests.support.tokens import alg_none_token, foreign_key_token, forge, hs256_with_public_key_token
from tests.support.upstream import RESOURCE as UPSTREAM_RESOURCE
from tests.support.upstream import Upstream, guarded, mint, refusing_url, rotate, rpc_error
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


# == the JWKS endpoint failing, refusing connections or stalling ========================================

STALL = 1.0
"""The verifier's fetch timeout in the tests where the endpoint stalls."""
BOUND = 10 * STALL
"""Failure bound for each wait, never a measurement: generous, for loaded machines. That stalled
requests share one call and wait one timeout, not one each, is shown by the calls the endpoint counts."""
KEY = jwk.RSAKey.generate_key(2048, parameters={"kid": "k1", "alg": "RS256", "use": "sig"}, private=True)


def jwks(up: Upstream, clock: FakeClock, url: str | None = None, **options: Any) -> JWKSVerifier:
    return JWKSVerifier(jwks_url=url or up.url("/jwks"), issuer=up.das.issuer, audience=UPSTREAM_RESOURCE,
                        clock=clock, **options)


def good(up: Upstream, clock: FakeClock, key: jwk.RSAKey | None = None) -> str:
    return mint(key or up.das.key, issuer=up.das.issuer, now=clock())


async def unavailable(verifier: JWKSVerifier, token: str, count: int) -> list[float]:
    """``count`` concurrent verifications that must all fail as unavailable; their ``retry_after``s."""
    results = await asyncio.gather(*(verifier.verify(token) for _ in range(count)), return_exceptions=True)
    assert all(isinstance(r, VerifierUnavailable) for r in results), results
    return [r.retry_after for r in results if isinstance(r, VerifierUnavailable)]


# -- garbage costs nothing --------------------------------------------------------------------------------------
def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hs256(data: bytes) -> bytes:
    return hmac.new(b"secret", data, hashlib.sha256).digest()


CLAIMS = {"iss": "x", "sub": "mallory", "aud": UPSTREAM_RESOURCE, "exp": int(NOW) + 600}
GARBAGE = [
    pytest.param("x.y.z", id="x.y.z"),
    pytest.param("not-a-jwt", id="one-segment"),
    pytest.param("a.b", id="two-segments"),
    pytest.param("a.b.c.d.e", id="five-segments"),
    pytest.param("..", id="empty-segments"),
    pytest.param(f"{_b64(b'not json')}.{_b64(b'{}')}.c2ln", id="header-not-json"),
    pytest.param(f"{_b64(b'[1]')}.{_b64(b'{}')}.c2ln", id="header-not-an-object"),
    pytest.param(f"{_b64(json.dumps({'alg': 'RS256'}).encode())}.{_b64(b'nope')}.c2ln", id="claims-not-json"),
    pytest.param(f"{_b64(json.dumps({'alg': 'RS256'}).encode())}.e30=.c2ln", id="padded-base64"),
    pytest.param(forge({"alg": "none", "kid": "k1"}, CLAIMS), id="alg-none"),
    pytest.param(forge({"alg": "HS256", "kid": "k1"}, CLAIMS, _hs256), id="alg-hs256"),
    pytest.param(forge({"kid": "k1"}, CLAIMS, _hs256), id="no-alg"),
    pytest.param(forge({"alg": "RS256", "kid": 7}, CLAIMS, _hs256), id="kid-not-a-string"),
    pytest.param(forge({"alg": "RS256", "kid": "k1"}, CLAIMS), id="empty-signature"),
]


@pytest.mark.parametrize("token", GARBAGE)
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_a_malformed_token_is_refused_without_fetching_the_jwks(token: str, up: Upstream,
                                                                     clock: FakeClock) -> None:
    verifier = jwks(up, clock)
    for _ in range(20):
        with pytest.raises(InvalidToken, match="does not verify"):
            await verifier.verify(token)
    assert (up.hits["/jwks"], verifier.attempts) == (0, 0)
    await verifier.aclose()


# -- a failing endpoint: one fetch per back-off interval ---------------------------------------------------------
@pytest.mark.parametrize("failure", [404, 500, "refused"])
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_a_failing_jwks_endpoint_is_fetched_once_per_back_off_interval(failure: int | str, up: Upstream,
                                                                             clock: FakeClock) -> None:
    """Backing off 1, 2, 4 s, ... up to refresh_interval (6 s here), however many requests arrive."""
    if isinstance(failure, int):
        up.mode = failure
        verifier = jwks(up, clock, refresh_interval=6)
    else:
        verifier = jwks(up, clock, refresh_interval=6, url=refusing_url("/jwks"))
    token = good(up, clock)
    for attempt, backoff in enumerate([1.0, 2.0, 4.0, 6.0, 6.0], start=1):
        assert await unavailable(verifier, token, 100) == [backoff] * 100  # one fetch shared by the burst
        assert await unavailable(verifier, token, 100) == [backoff] * 100  # then none while backing off
        clock.advance(backoff - 0.5)
        assert await unavailable(verifier, token, 100) == [0.5] * 100
        assert verifier.attempts == attempt
        clock.advance(0.5)
    assert up.hits["/jwks"] == (5 if isinstance(failure, int) else 0)
    assert verifier.fetches == 0
    await verifier.aclose()


async def test_the_keys_are_used_once_the_endpoint_recovers_and_the_back_off_resets(up: Upstream,
                                                                                    clock: FakeClock) -> None:
    up.mode = 500
    verifier = jwks(up, clock)
    token = good(up, clock)
    await unavailable(verifier, token, 1)
    clock.advance(1)
    await unavailable(verifier, token, 1)
    up.mode = "ok"
    assert await unavailable(verifier, token, 1) == [2.0]  # still backing off: the recovery is not seen yet
    clock.advance(2)
    principals = await asyncio.gather(*(verifier.verify(token) for _ in range(10)))
    assert {p.subject for p in principals} == {"alice"}
    assert (up.hits["/jwks"], verifier.attempts, verifier.fetches) == (3, 3, 1)
    await verifier.aclose()


# -- a stalled endpoint: one fetch, a bounded wait -----------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_ten_concurrent_requests_share_one_fetch_of_a_stalled_jwks_endpoint(up: Upstream,
                                                                                 clock: FakeClock) -> None:
    up.mode = "stall"
    verifier = jwks(up, clock, timeout=STALL)
    token = good(up, clock)
    retry_afters = await asyncio.wait_for(unavailable(verifier, token, 10), BOUND)
    assert retry_afters == [1.0] * 10
    await asyncio.wait_for(up.arrived.wait(), BOUND)
    assert (up.hits["/jwks"], verifier.attempts) == (1, 1)
    # Backing off now: the next ones do not even wait.
    assert await asyncio.wait_for(unavailable(verifier, token, 10), BOUND) == [1.0] * 10
    assert up.hits["/jwks"] == 1
    await verifier.aclose()


async def test_a_request_that_goes_away_does_not_cancel_the_shared_fetch(up: Upstream, clock: FakeClock) -> None:
    up.mode = "stall"
    verifier = jwks(up, clock, timeout=30.0)  # the fetch ends when the test releases it
    token = good(up, clock)
    first = asyncio.ensure_future(verifier.verify(token))
    await asyncio.wait_for(up.arrived.wait(), BOUND)
    others = [asyncio.ensure_future(verifier.verify(token)) for _ in range(2)]
    await asyncio.sleep(0)  # let them join the fetch in flight (a scheduling step, not a wait for time)
    first.cancel()
    up.release.set()
    principals = await asyncio.wait_for(asyncio.gather(*others), BOUND)
    assert [p.subject for p in principals] == ["alice", "alice"]
    assert first.cancelled()
    assert (up.hits["/jwks"], verifier.fetches) == (1, 1)
    await verifier.aclose()


# -- cached keys: stale-while-revalidate -----------------------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_stale_keys_keep_serving_known_kids_while_the_refresh_stalls(up: Upstream, clock: FakeClock) -> None:
    verifier = jwks(up, clock, timeout=30.0)  # the refresh ends when the test releases it
    known = mint(up.das.key, issuer=up.das.issuer, now=clock(), ttl=7200)
    assert (await verifier.verify(known)).subject == "alice"
    clock.advance(3601)  # the keys are stale, and the AS has rotated its key and stalls
    up.mode = "stall"
    rotated = good(up, clock, rotate(up.das))
    principals = await asyncio.wait_for(asyncio.gather(*(verifier.verify(known) for _ in range(10))), BOUND)
    assert {p.subject for p in principals} == {"alice"}  # answered with the stale keys, the refresh in flight
    await asyncio.wait_for(up.arrived.wait(), BOUND)
    assert (up.hits["/jwks"], verifier.fetches) == (2, 1)
    # A token signed with the new key needs the refresh: it joins it, and verifies once it lands.
    waiting = asyncio.ensure_future(verifier.verify(rotated))
    up.release.set()
    assert (await asyncio.wait_for(waiting, BOUND)).subject == "alice"
    assert (up.hits["/jwks"], verifier.fetches) == (2, 2)
    await verifier.aclose()


async def test_an_unknown_kid_waits_at_most_one_fetch_timeout_for_a_stalled_refresh(up: Upstream,
                                                                                   clock: FakeClock) -> None:
    verifier = jwks(up, clock, timeout=STALL)
    known = good(up, clock)
    await verifier.verify(known)
    clock.advance(61)  # a refresh is allowed again
    up.mode = "stall"
    foreign = mint(KEY, issuer=up.das.issuer, now=clock())
    results = await asyncio.wait_for(asyncio.gather(*(verifier.verify(foreign) for _ in range(10)),
                                                    return_exceptions=True), BOUND)
    # The keys this server has do not include the token's: refused (a forgery looks exactly like this).
    assert all(isinstance(r, InvalidToken) for r in results), results
    assert (await verifier.verify(known)).subject == "alice"
    assert (up.hits["/jwks"], verifier.attempts, verifier.fetches) == (2, 2, 1)
    await verifier.aclose()


# -- through the MCP app ----------------------------------------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_a_failing_jwks_endpoint_gets_503_with_retry_after_and_few_fetches_for_100_requests(
        up: Upstream, clock: FakeClock) -> None:
    """100 requests over 12.5 s while the JWKS answers 500: fetches at 0, 1, 3 and 7 s (back-off 1, 2, 4, 8 s).
    Each request gets 503, JSON-RPC -32603 and a Retry-After (no challenge: the token is not at fault)."""
    up.mode = 500
    verifier = jwks(up, clock)
    token = good(up, clock)
    async with guarded(verifier) as app:
        answers = []
        for i in range(100):
            answers.append(await app.call(token, rid=i))
            clock.advance(0.125)
        assert [a.status for a in answers] == [503] * 100
        assert all(rpc_error(a)[0] == -32603 for a in answers)
        assert {rpc_error(a)[1] for a in answers} <= {str(seconds) for seconds in range(1, 9)}
        assert all("www-authenticate" not in a.headers for a in answers)
        assert up.hits["/jwks"] == 4
        assert app.reasons == ["unavailable"] * 100
        # The AS is back: once the back-off is over, the same token gets through.
        up.mode = "ok"
        clock.advance(8)
        assert (await app.call(good(up, clock))).status == 200
        assert up.hits["/jwks"] == 5
        assert app.recorder.names() == ["whoami"]


@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_ten_concurrent_requests_to_a_stalled_jwks_endpoint_get_503_within_one_fetch_timeout(
        up: Upstream, clock: FakeClock) -> None:
    up.mode = "stall"
    token = good(up, clock)
    async with guarded(jwks(up, clock, timeout=STALL)) as app:
        answers = await asyncio.wait_for(asyncio.gather(*(app.call(token, rid=i) for i in range(10))), BOUND)
        assert [(a.status, *rpc_error(a)) for a in answers] == [(503, -32603, "1")] * 10
        await asyncio.wait_for(up.arrived.wait(), BOUND)
        assert up.hits["/jwks"] == 1
        assert app.reasons == ["unavailable"] * 10
        assert app.recorder.calls == []


async def test_malformed_tokens_get_401_through_the_app_without_a_fetch(up: Upstream, clock: FakeClock) -> None:
    async with guarded(jwks(up, clock)) as app:
        for token in ("x.y.z", "not-a-jwt", "x.y.z%"):
            for rid in range(20):
                answer = await app.call(token, rid)
                assert answer.status == 401
                assert 'error="invalid_token"' in answer.headers["www-authenticate"]
        assert up.hits["/jwks"] == 0
        assert app.reasons == ["invalid_token"] * 40 + ["malformed"] * 20
