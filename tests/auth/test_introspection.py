"""``wiremcp.auth.introspection``: ``IntrospectionVerifier``, opaque-token checks with the development AS's
RFC 7662 endpoint, and the verifier when that endpoint fails, refuses connections or stalls.

- The AS app reached through httpx without a socket; a gate in front of it holds introspection requests
  so concurrency is exact: answers, caching, single flight, what an answer must carry.
- Outages: the endpoint is the development AS's on a loopback socket (``tests.support.upstream``, whose
  tokens name ``UPSTREAM_RESOURCE``), counting the calls it sees. Every wait has a failure bound.

Time is an injected clock: a ``FakeClock`` started at the real time (the AS stamps tokens with it), so
cache lifetimes and back-off intervals pass when the test says so.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import wiremcp.auth.introspection
from examples.dev_auth_server import Client, DevAuthServer
from tests.support.http import FakeClock
from tests.support.upstream import RESOURCE as UPSTREAM_RESOURCE
from tests.support.upstream import Upstream, guarded, refusing_url, rpc_error
from wiremcp.auth.introspection import IntrospectionVerifier
from wiremcp.auth.verifier import InvalidToken, VerifierUnavailable
from wiremcp.transports.asgi import Receive, Scope, SendASGI

SPEC = "2025-11-25/basic/authorization"
ISSUER = "https://as.example.test"
RESOURCE = "https://mcp.example.test/mcp"


class Gate:
    """The AS app, with introspection requests counted and, while ``closed``, held until opened."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.open = asyncio.Event()
        self.open.set()
        self.arrived = asyncio.Event()
        self.down = False

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if scope["type"] == "http" and scope["path"] == "/introspect":
            self.arrived.set()
            await self.open.wait()
            if self.down:
                await JSONResponse({"error": "down"}, 503)(scope, receive, send)
                return
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def das() -> DevAuthServer:
    return DevAuthServer(issuer=ISSUER)


@pytest.fixture
def client(das: DevAuthServer) -> Client:
    """The MCP server's own credentials at the AS."""
    das.counts["introspect"] = 0
    return das.register_client(grant_types=["client_credentials"], name="resource server")


@pytest.fixture
def gate(das: DevAuthServer) -> Gate:
    return Gate(das.app())


@pytest.fixture
def clock() -> FakeClock:
    """Started at the real time (the AS stamps tokens with it), moving only when a test says so."""
    return FakeClock(time.time())


@pytest.fixture
async def http(gate: Gate) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url=ISSUER) as out:
        yield out


def make(client: Client, http: httpx.AsyncClient, clock: FakeClock, **options: Any) -> IntrospectionVerifier:
    assert client.client_secret is not None
    settings: dict[str, Any] = {"audience": RESOURCE, "issuer": ISSUER, **options}
    return IntrospectionVerifier(endpoint=ISSUER + "/introspect", client_id=client.client_id,
                                 client_secret=client.client_secret, client=http, clock=clock, **settings)


@pytest.fixture
def verifier(client: Client, http: httpx.AsyncClient, clock: FakeClock) -> IntrospectionVerifier:
    return make(client, http, clock)


def token(das: DevAuthServer, subject: str = "alice", *, audience: str | None = RESOURCE, ttl: int = 3600) -> str:
    out: str = das.issue(subject=subject, client_id="app-1", scope="mcp:tools mcp:read", audience=audience, ttl=ttl)
    return out


# -- answers ------------------------------------------------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_an_active_token_becomes_a_principal(das: DevAuthServer, verifier: IntrospectionVerifier) -> None:
    principal = await verifier.verify(token(das))
    assert (principal.issuer, principal.subject, principal.client_id) == (ISSUER, "alice", "app-1")
    assert principal.scopes == frozenset({"mcp:tools", "mcp:read"})
    assert principal.expires_at is not None
    assert principal.expires_at == pytest.approx(time.time() + 3600, abs=5)
    assert principal.key == f"{ISSUER}|alice"


@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_revoked_and_unknown_tokens_are_refused(das: DevAuthServer, client: Client,
                                                     verifier: IntrospectionVerifier, http: httpx.AsyncClient) -> None:
    revoked = token(das)
    assert client.client_secret is not None
    answer = await http.post("/revoke", data={"token": revoked}, auth=(client.client_id, client.client_secret))
    assert answer.status_code == 200
    with pytest.raises(InvalidToken, match="not active"):
        await verifier.verify(revoked)
    with pytest.raises(InvalidToken, match="not active"):
        await verifier.verify("opaque-garbage")
    with pytest.raises(InvalidToken, match="not active"):
        await verifier.verify(token(das, ttl=-10))  # the AS says an expired token is inactive


@pytest.mark.parametrize("audience", [None, "https://mcp.example.test/other", "https://evil.example.test/mcp"])
@pytest.mark.spec(f"{SPEC}#token-audience-binding-and-validation")
async def test_a_token_for_another_resource_is_refused(audience: str | None, das: DevAuthServer,
                                                       verifier: IntrospectionVerifier) -> None:
    with pytest.raises(InvalidToken):
        await verifier.verify(token(das, audience=audience))


async def test_uppercase_scheme_and_host_in_the_audience_are_accepted(das: DevAuthServer,
                                                                      verifier: IntrospectionVerifier) -> None:
    assert (await verifier.verify(token(das, audience="HTTPS://MCP.Example.test/mcp"))).subject == "alice"


async def test_another_issuer_is_refused(das: DevAuthServer, client: Client, http: httpx.AsyncClient,
                                         clock: FakeClock) -> None:
    verifier = make(client, http, clock, issuer="https://other-as.example.test")
    with pytest.raises(InvalidToken):
        await verifier.verify(token(das))


async def test_a_wrong_client_secret_fails_closed_as_unavailable(das: DevAuthServer, client: Client,
                                                                 http: httpx.AsyncClient, clock: FakeClock) -> None:
    """The AS refusing the server's own credentials is the server's problem, not the token's: no request
    gets through, and none is told to go and get another token (503, not 401)."""
    verifier = IntrospectionVerifier(endpoint=ISSUER + "/introspect", client_id=client.client_id,
                                     client_secret="wrong", audience=RESOURCE, client=http, clock=clock)
    with pytest.raises(VerifierUnavailable, match="introspection failed: HTTP 401"):
        await verifier.verify(token(das))


# -- caching ---------------------------------------------------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_answers_are_cached_for_cache_ttl(das: DevAuthServer, verifier: IntrospectionVerifier,
                                                clock: FakeClock) -> None:
    good = token(das)
    for _ in range(5):
        await verifier.verify(good)
    assert (verifier.calls, das.counts["introspect"]) == (1, 1)
    clock.advance(59)
    await verifier.verify(good)
    assert verifier.calls == 1
    clock.advance(2)
    await verifier.verify(good)
    assert verifier.calls == 2


async def test_refusals_are_cached_briefly(das: DevAuthServer, verifier: IntrospectionVerifier, clock: FakeClock) -> None:
    for _ in range(3):
        with pytest.raises(InvalidToken):
            await verifier.verify("unknown")
    assert verifier.calls == 1
    clock.advance(5.5)
    with pytest.raises(InvalidToken):
        await verifier.verify("unknown")
    assert verifier.calls == 2


async def test_the_cache_never_outlives_the_token(das: DevAuthServer, verifier: IntrospectionVerifier,
                                                  clock: FakeClock) -> None:
    short = token(das, ttl=20)
    await verifier.verify(short)
    assert verifier.calls == 1
    clock.advance(10)
    await verifier.verify(short)  # cached: cache_ttl is 60 s, but the entry lives only as long as the token
    assert verifier.calls == 1
    clock.advance(11)
    with pytest.raises(InvalidToken, match="expired"):
        await verifier.verify(short)
    assert verifier.calls == 2


async def test_the_cache_is_bounded(das: DevAuthServer, verifier: IntrospectionVerifier,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wiremcp.auth.introspection, "MAX_CACHED", 3)
    tokens = [token(das, f"user-{i}") for i in range(4)]
    for t in tokens:
        await verifier.verify(t)
    await verifier.verify(tokens[-1])
    assert verifier.calls == 4
    await verifier.verify(tokens[0])  # the oldest entry was dropped
    assert verifier.calls == 5


# -- single flight -------------------------------------------------------------------------------------------------------
@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_concurrent_requests_with_one_token_introspect_once(das: DevAuthServer, verifier: IntrospectionVerifier,
                                                                  gate: Gate) -> None:
    gate.open.clear()
    good = token(das)
    waiting = [asyncio.ensure_future(verifier.verify(good)) for _ in range(100)]
    await gate.arrived.wait()
    gate.open.set()
    principals = await asyncio.gather(*waiting)
    assert {p.key for p in principals} == {f"{ISSUER}|alice"}
    assert (verifier.calls, das.counts["introspect"]) == (1, 1)


async def test_a_failed_introspection_fails_every_waiter_and_is_not_cached(
        das: DevAuthServer, verifier: IntrospectionVerifier, gate: Gate, clock: FakeClock) -> None:
    gate.open.clear()
    gate.down = True
    good = token(das)
    waiting = [asyncio.ensure_future(verifier.verify(good)) for _ in range(10)]
    await gate.arrived.wait()
    gate.open.set()
    results = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(r, VerifierUnavailable) for r in results), results
    assert verifier.calls == 1
    gate.down = False
    clock.advance(1)  # past the back-off
    assert (await verifier.verify(good)).subject == "alice"
    assert verifier.calls == 2


async def test_a_cancelled_first_request_does_not_cancel_the_others(das: DevAuthServer,
                                                                    verifier: IntrospectionVerifier,
                                                                    gate: Gate) -> None:
    """The request that started the introspection goes away (its client disconnected): the requests
    that wait for the same answer still get it."""
    gate.open.clear()
    good = token(das)
    first = asyncio.ensure_future(verifier.verify(good))
    await gate.arrived.wait()
    second = asyncio.ensure_future(verifier.verify(good))
    await asyncio.sleep(0)  # let the second one join the flight (a scheduling step, not a wait for time)
    first.cancel()
    gate.open.set()
    assert (await second).subject == "alice"
    assert first.cancelled()
    assert verifier.calls == 1


# -- what an introspection answer must carry --------------------------------------------------------------------------------
def introspection_endpoint(answer: dict[str, Any]) -> Starlette:
    async def introspect(request: Request) -> Response:
        return JSONResponse(answer)

    return Starlette(routes=[Route("/introspect", introspect, methods=["POST"])])


@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_an_active_answer_without_a_subject_is_refused(clock: FakeClock) -> None:
    """Sessions and requestState are bound to issuer and subject: two tokens without a subject must not
    become the same principal."""
    answer = {"active": True, "iss": ISSUER, "aud": RESOURCE, "client_id": "some-client", "scope": "mcp:tools",
              "exp": int(time.time()) + 600}
    transport = httpx.ASGITransport(app=introspection_endpoint(answer))
    async with httpx.AsyncClient(transport=transport, base_url=ISSUER) as http:
        verifier = IntrospectionVerifier(endpoint=ISSUER + "/introspect", client_id="rs", client_secret="s",
                                         audience=RESOURCE, issuer=ISSUER, client=http, clock=clock)
        with pytest.raises(InvalidToken):
            await verifier.verify("opaque-1")
        with pytest.raises(InvalidToken):
            await verifier.verify("opaque-2")
        services = IntrospectionVerifier(endpoint=ISSUER + "/introspect", client_id="rs", client_secret="s",
                                         audience=RESOURCE, issuer=ISSUER, client=http, clock=clock,
                                         service_tokens=True)
        principal = await services.verify("opaque-3")  # a service's own token: its client's
        assert (principal.subject, principal.client_id) == ("some-client", "some-client")


@pytest.mark.parametrize("answer", [
    [], "active", {"active": "true", "sub": "a"}, {"active": 1, "sub": "a"}, {"sub": "a"}])
async def test_anything_but_active_true_is_inactive(answer: Any, clock: FakeClock) -> None:
    transport = httpx.ASGITransport(app=introspection_endpoint(answer))
    async with httpx.AsyncClient(transport=transport, base_url=ISSUER) as http:
        verifier = IntrospectionVerifier(endpoint=ISSUER + "/introspect", client_id="rs", client_secret="s",
                                         client=http, clock=clock)
        with pytest.raises(InvalidToken, match="not active"):
            await verifier.verify("opaque")


# == the introspection endpoint failing, refusing connections or stalling ===============================

STALL = 1.0
"""The verifier's introspection timeout in the tests where the endpoint stalls."""
BOUND = 10 * STALL
"""Failure bound for each wait, never a measurement: generous, for loaded machines. That stalled
requests share one call and wait one timeout, not one each, is shown by the calls the endpoint counts."""


def introspection(up: Upstream, clock: FakeClock, url: str | None = None, **options: Any) -> IntrospectionVerifier:
    client = up.das.register_client(grant_types=["client_credentials"], name="resource server")
    assert client.client_secret is not None
    return IntrospectionVerifier(endpoint=url or up.url("/introspect"), client_id=client.client_id,
                                 client_secret=client.client_secret, audience=UPSTREAM_RESOURCE, issuer=up.das.issuer,
                                 clock=clock, **options)


def upstream_token(up: Upstream, subject: str = "alice") -> str:
    out: str = up.das.issue(subject=subject, client_id="app", scope="mcp:tools", audience=UPSTREAM_RESOURCE)
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
    tokens = [upstream_token(up, f"user-{i}") for i in range(100)]
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
    tokens = [upstream_token(up, f"user-{i}") for i in range(10)]
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
    same = upstream_token(up)
    assert retry_afters(await outcomes(verifier, [same] * 10)) == [1.0] * 10
    await asyncio.wait_for(up.arrived.wait(), BOUND)
    assert up.hits["/introspect"] == verifier.calls == 1
    # Backing off now: other tokens do not even wait.
    assert retry_afters(await outcomes(verifier, [upstream_token(up, f"u{i}") for i in range(10)])) == [1.0] * 10
    assert up.hits["/introspect"] == 1
    await verifier.aclose()


async def test_cached_answers_are_used_while_the_endpoint_fails_but_never_beyond_their_lifetime(
        up: Upstream, clock: FakeClock) -> None:
    verifier = introspection(up, clock)
    known, unknown = upstream_token(up, "alice"), upstream_token(up, "bob")
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
        answer = await app.call(upstream_token(up))
        assert (answer.status, *rpc_error(answer)) == (503, -32603, "1")
        assert "www-authenticate" not in answer.headers
        assert app.reasons == ["unavailable"]
    async with guarded(introspection(up, clock)) as app:
        assert (await app.call("opaque-and-unknown")).status == 401
        assert (await app.call(upstream_token(up))).status == 200
        assert app.reasons == ["invalid_token"]
        assert app.recorder.names() == ["whoami"]
