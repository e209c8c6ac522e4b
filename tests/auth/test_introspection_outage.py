"""``IntrospectionVerifier`` when the introspection endpoint fails, refuses connections or stalls.

The endpoint is the development AS's, on a loopback socket (``tests.support.upstream``), counting the
calls it sees; the verifier's clock is a ``FakeClock`` started at the real time (the AS stamps tokens
with it), so back-off intervals pass when the test says so. Every wait has a failure bound.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.support.http import FakeClock
from tests.support.upstream import RESOURCE, Upstream, guarded, refusing_url, rpc_error
from wiremcp.auth.introspection import IntrospectionVerifier
from wiremcp.auth.verifier import InvalidToken, VerifierUnavailable

SPEC = "2025-11-25/basic/authorization"
STALL = 1.0
"""The verifier's introspection timeout in the tests where the endpoint stalls."""
BOUND = 3 * STALL


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(time.time())


def introspection(up: Upstream, clock: FakeClock, url: str | None = None, **options: Any) -> IntrospectionVerifier:
    client = up.das.register_client(grant_types=["client_credentials"], name="resource server")
    assert client.client_secret is not None
    return IntrospectionVerifier(endpoint=url or up.url("/introspect"), client_id=client.client_id,
                                 client_secret=client.client_secret, audience=RESOURCE, issuer=up.das.issuer,
                                 clock=clock, **options)


def token(up: Upstream, subject: str = "alice") -> str:
    out: str = up.das.issue(subject=subject, client_id="app", scope="mcp:tools", audience=RESOURCE)
    return out


async def outcomes(verifier: IntrospectionVerifier, tokens: list[str]) -> list[object]:
    return await asyncio.wait_for(asyncio.gather(*(verifier.verify(t) for t in tokens), return_exceptions=True),
                                  BOUND)


def retry_afters(results: list[object]) -> list[float]:
    assert all(isinstance(r, VerifierUnavailable) for r in results), results
    return [r.retry_after for r in results if isinstance(r, VerifierUnavailable)]


@pytest.mark.parametrize("failure", [401, 500, "refused"])
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_a_failing_introspection_endpoint_is_called_once_per_back_off_whatever_the_tokens(
        failure: int | str, up: Upstream, clock: FakeClock) -> None:
    """A failure makes every token without a cached answer wait out the back-off (1 s, then 2 s, ...);
    after it, one request probes the endpoint and the others fail fast until it lands."""
    if isinstance(failure, int):
        up.mode = failure
        verifier = introspection(up, clock)
    else:
        verifier = introspection(up, clock, url=refusing_url("/introspect"))
    tokens = [token(up, f"user-{i}") for i in range(100)]
    assert retry_afters(await outcomes(verifier, tokens[:1])) == [1.0]
    assert retry_afters(await outcomes(verifier, tokens[1:])) == [1.0] * 99  # none of them calls
    assert verifier.calls == 1
    clock.advance(1)
    probe, *others = retry_afters(await outcomes(verifier, tokens[:10]))
    assert (probe, others) == (2.0, [0.0] * 9)  # the probe failed; the others did not wait for it
    assert verifier.calls == 2
    assert up.hits["/introspect"] == (2 if isinstance(failure, int) else 0)
    await verifier.aclose()


async def test_a_successful_probe_ends_the_back_off(up: Upstream, clock: FakeClock) -> None:
    up.mode = 500
    verifier = introspection(up, clock)
    tokens = [token(up, f"user-{i}") for i in range(10)]
    retry_afters(await outcomes(verifier, tokens[:1]))
    up.mode = "ok"
    retry_afters(await outcomes(verifier, tokens[:1]))  # backing off: the recovery is not seen yet
    clock.advance(1)
    assert (await verifier.verify(tokens[0])).subject == "user-0"
    principals = await outcomes(verifier, tokens[1:])
    assert [getattr(p, "subject", p) for p in principals] == [f"user-{i}" for i in range(1, 10)]
    assert up.hits["/introspect"] == verifier.calls == 11
    await verifier.aclose()


@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_ten_concurrent_requests_to_a_stalled_introspection_endpoint_are_answered_within_one_timeout(
        up: Upstream, clock: FakeClock) -> None:
    up.mode = "stall"
    verifier = introspection(up, clock, timeout=STALL)
    same = token(up)
    assert retry_afters(await outcomes(verifier, [same] * 10)) == [1.0] * 10
    await asyncio.wait_for(up.arrived.wait(), BOUND)
    assert up.hits["/introspect"] == verifier.calls == 1
    # Backing off now: other tokens do not even wait.
    assert retry_afters(await outcomes(verifier, [token(up, f"u{i}") for i in range(10)])) == [1.0] * 10
    assert up.hits["/introspect"] == 1
    await verifier.aclose()


async def test_cached_answers_are_used_while_the_endpoint_fails_but_never_beyond_their_lifetime(
        up: Upstream, clock: FakeClock) -> None:
    verifier = introspection(up, clock)
    known, unknown = token(up, "alice"), token(up, "bob")
    assert (await verifier.verify(known)).subject == "alice"
    with pytest.raises(InvalidToken, match="not active"):
        await verifier.verify("opaque-and-unknown")
    up.mode = 500
    retry_afters(await outcomes(verifier, [unknown]))
    assert (await verifier.verify(known)).subject == "alice"
    with pytest.raises(InvalidToken, match="not active"):  # a refusal cached before the outage still counts
        await verifier.verify("opaque-and-unknown")
    clock.advance(61)  # past cache_ttl: the answer must be asked for again, and cannot be
    retry_afters(await outcomes(verifier, [known]))
    assert up.hits["/introspect"] == 4
    await verifier.aclose()


@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_an_unreachable_introspection_endpoint_gets_503_through_the_app_and_a_bad_token_401(
        up: Upstream, clock: FakeClock) -> None:
    async with guarded(introspection(up, clock, url=refusing_url("/introspect"))) as app:
        answer = await app.call(token(up))
        assert (answer.status, *rpc_error(answer)) == (503, -32603, "1")
        assert "www-authenticate" not in answer.headers
        assert app.reasons == ["unavailable"]
    async with guarded(introspection(up, clock)) as app:
        assert (await app.call("opaque-and-unknown")).status == 401
        assert (await app.call(token(up))).status == 200
        assert app.reasons == ["invalid_token"]
        assert app.recorder.names() == ["whoami"]
