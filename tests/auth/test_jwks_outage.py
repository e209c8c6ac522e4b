"""``JWKSVerifier`` when the authorization server's JWKS endpoint fails, refuses connections or stalls.

The endpoint is real (a loopback socket, ``tests.support.upstream``) and counts the fetches it sees; the
verifier's clock is a ``FakeClock``, so back-off intervals pass when the test says so and nothing
sleeps. A stalled endpoint holds requests until released; the verifier's fetch timeout is then small
and every wait has a bound of ``BOUND`` (three timeouts), a failure bound, never a measurement.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from typing import Any

import pytest
from joserfc import jwk

from tests.support.http import FakeClock
from tests.support.tokens import forge
from tests.support.upstream import RESOURCE, Upstream, guarded, mint, refusing_url, rotate, rpc_error
from wiremcp.auth.jwt_verifier import JWKSVerifier
from wiremcp.auth.verifier import InvalidToken, VerifierUnavailable

SPEC = "2025-11-25/basic/authorization"
NOW = 1_750_000_000.0
STALL = 1.0
"""The verifier's fetch timeout in the tests where the endpoint stalls."""
BOUND = 3 * STALL
KEY = jwk.RSAKey.generate_key(2048, parameters={"kid": "k1", "alg": "RS256", "use": "sig"}, private=True)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


def jwks(up: Upstream, clock: FakeClock, url: str | None = None, **options: Any) -> JWKSVerifier:
    return JWKSVerifier(jwks_url=url or up.url("/jwks"), issuer=up.das.issuer, audience=RESOURCE, clock=clock,
                        **options)


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


CLAIMS = {"iss": "x", "sub": "mallory", "aud": RESOURCE, "exp": int(NOW) + 600}
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
