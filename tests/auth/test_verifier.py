"""``wiremcp.auth.verifier``: the ``TokenVerifier`` interface's failures, ``Backoff`` (how the network
verifiers space their attempts at a failing upstream), ``describe`` (a failure's one-line reason), and
``StaticTokenVerifier`` (fixed tokens, for development and tests)."""

from __future__ import annotations

import httpx
import pytest

from wiremcp.auth.verifier import (
    Backoff,
    InvalidToken,
    RemoteVerifier,
    StaticTokenVerifier,
    TokenVerifier,
    VerifierUnavailable,
    describe,
)
from wiremcp.principal import Principal

SPEC = "2025-11-25/basic/authorization"
ISSUER = "https://as.example.test"


# -- failures ----------------------------------------------------------------------------------------------


def test_unavailable_never_asks_to_wait_a_negative_time() -> None:
    assert VerifierUnavailable("down", retry_after=-3.0).retry_after == 0.0
    assert VerifierUnavailable("down", retry_after=2.5).retry_after == 2.5


def test_describe_gives_one_line_without_the_details() -> None:
    request = httpx.Request("POST", "https://as.example.test/introspect")
    refused = httpx.HTTPStatusError("refused", request=request, response=httpx.Response(503, request=request))
    assert describe(refused) == "HTTP 503"
    assert describe(httpx.ConnectError("connection refused\nat line 2")) == "ConnectError: connection refused"
    assert describe(TimeoutError()) == "TimeoutError"


# -- Backoff -------------------------------------------------------------------------------------------------


def test_backoff_doubles_with_each_failure_up_to_the_cap() -> None:
    backoff = Backoff(first=1.0, cap=5.0)
    assert backoff.ready(0.0)
    waits = []
    now = 0.0
    for _ in range(5):
        backoff.begin()
        waits.append(backoff.failed(now))
        assert not backoff.ready(now + waits[-1] - 0.5)
        assert backoff.retry_after(now) == waits[-1]
        now += waits[-1]
        assert backoff.ready(now)
    assert waits == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_backoff_lets_one_probe_through_at_a_time_while_failing() -> None:
    backoff = Backoff(first=1.0, cap=60.0)
    backoff.begin()
    assert backoff.ready(0.0)  # no failure yet: any number of attempts
    backoff.failed(0.0)
    backoff.begin()  # the probe after the back-off
    assert not backoff.ready(10.0)  # the others wait for it to land
    backoff.abandoned()  # cancelled without an outcome: the next one may probe
    assert backoff.ready(10.0)
    backoff.begin()
    backoff.succeeded(10.0)
    assert backoff.failures == 0
    assert backoff.ready(10.0)
    assert backoff.retry_after(10.0) == 0.0


def test_backoff_holds_after_a_success_when_told_to() -> None:
    backoff = Backoff(first=1.0, cap=60.0)
    backoff.succeeded(100.0, hold=30.0)
    assert not backoff.ready(129.0)
    assert backoff.retry_after(100.0) == 30.0
    assert backoff.ready(130.0)


def test_the_cap_is_never_below_the_first_interval() -> None:
    backoff = Backoff(first=10.0, cap=1.0)
    assert backoff.failed(0.0) == 10.0


# -- StaticTokenVerifier ---------------------------------------------------------------------------------------


@pytest.mark.spec(f"{SPEC}#token-handling")
async def test_a_static_token_stands_for_its_principal_and_any_other_is_refused() -> None:
    alice = Principal(ISSUER, "alice", scopes=frozenset({"mcp:tools"}))
    verifier: TokenVerifier = StaticTokenVerifier({"alice-token": alice})
    assert await verifier.verify("alice-token") == alice
    for other in ("bob-token", "alice-toke", "alice-token2", ""):
        with pytest.raises(InvalidToken, match="unknown token"):
            await verifier.verify(other)
    await verifier.aclose()


async def test_expired_static_tokens_are_refused() -> None:
    verifier = StaticTokenVerifier({"old": Principal(ISSUER, "old", expires_at=1.0)})
    with pytest.raises(InvalidToken, match="expired"):
        await verifier.verify("old")


def test_static_token_pairs() -> None:
    verifier = StaticTokenVerifier.from_pairs(["t1=alice:a b", "t2=bob"], issuer=ISSUER)
    assert verifier._tokens["t1"] == Principal(ISSUER, "alice", scopes=frozenset({"a", "b"}))
    assert verifier._tokens["t2"] == Principal(ISSUER, "bob")
    for bad in (["t1"], ["=alice"], ["t1="]):
        with pytest.raises(ValueError, match="token=subject"):
            StaticTokenVerifier.from_pairs(bad)


@pytest.mark.parametrize("pair", ["t:1=alice", "t,1=alice", "tö=alice", "t 1=alice"])
def test_a_static_token_the_middleware_would_refuse_is_refused_at_startup(pair: str) -> None:
    with pytest.raises(ValueError, match="b64token"):
        StaticTokenVerifier.from_pairs([pair])


async def test_a_remote_verifier_closes_only_the_client_it_made() -> None:
    class Remote(RemoteVerifier):
        async def verify(self, token: str) -> Principal:
            raise InvalidToken("never")

    made = Remote(timeout=1.0, client=None, clock=lambda: 0.0)
    await made.aclose()
    assert made._client.is_closed
    given = httpx.AsyncClient()
    lent = Remote(timeout=1.0, client=given, clock=lambda: 0.0)
    await lent.aclose()
    assert not given.is_closed
    await given.aclose()
