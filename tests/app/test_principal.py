"""``wiremcp.principal``: ``Principal``, who a request comes from as authentication established it: its
``key`` (issuer and subject, what sessions, tasks and ``requestState`` are bound to), and ``key_of``."""

from __future__ import annotations

import dataclasses

import pytest

from wiremcp.principal import CHALLENGE_KEY, SCOPE_KEY, Principal, key_of

ISSUER = "https://as.example.test"


def test_the_key_is_the_issuer_and_the_subject() -> None:
    alice = Principal(ISSUER, "alice", "app", frozenset({"mcp:tools"}), expires_at=1.0, claims={"jti": "1"})
    assert alice.key == "https://as.example.test|alice"
    assert key_of(alice) == alice.key
    assert key_of(None) is None  # without authentication there is nobody to bind to


def test_a_refreshed_token_is_the_same_key_and_another_issuer_is_not() -> None:
    first = Principal(ISSUER, "alice", scopes=frozenset({"mcp:tools"}), expires_at=100.0, claims={"jti": "1"})
    refreshed = Principal(ISSUER, "alice", scopes=frozenset({"mcp:tools", "mcp:read"}), expires_at=200.0,
                          claims={"jti": "2"})
    assert refreshed.key == first.key
    assert Principal("https://other.example.test", "alice").key != first.key


def test_principals_compare_without_their_claims_and_cannot_change() -> None:
    one = Principal(ISSUER, "alice", claims={"jti": "1"})
    assert one == Principal(ISSUER, "alice", claims={"jti": "2"})
    assert hash(one) == hash(Principal(ISSUER, "alice"))
    assert one.scopes == frozenset()
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.subject = "mallory"  # type: ignore[misc]


def test_the_asgi_scope_keys_are_the_projects_own() -> None:
    assert (SCOPE_KEY, CHALLENGE_KEY) == ("wiremcp.principal", "wiremcp.challenge")
