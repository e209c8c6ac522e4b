"""``wiremcp.transports.identity``: who is calling, as authentication left it in the ASGI scope, and the
identity a session made by that request is bound to."""

from __future__ import annotations

from wiremcp.principal import SCOPE_KEY, Principal
from wiremcp.transports.asgi import Scope
from wiremcp.transports.identity import caller

ALICE = Principal("https://as.example.test", "alice", "app", frozenset({"mcp:tools"}))


def test_the_caller_is_the_principal_authentication_left_in_the_scope() -> None:
    scope: Scope = {"type": "http", SCOPE_KEY: ALICE, "client": ("203.0.113.7", 5123)}
    who = caller(scope)
    assert who.principal is ALICE
    assert who.owner == "https://as.example.test|alice"
    assert who.peer == "203.0.113.7"


def test_without_authentication_there_is_no_caller_and_no_owner() -> None:
    scope: Scope = {"type": "http", "headers": []}
    who = caller(scope)
    assert who.principal is None
    assert who.owner is None
    assert who.peer is None


def test_the_owner_is_the_issuer_and_subject_whatever_the_token_carries() -> None:
    """What a session is bound to: another subject, or the same subject at another issuer, is another owner
    (refused the session); the same principal with another token (client, scopes, expiry) is the same one."""
    def owner(principal: Principal | None) -> str | None:
        return caller({"type": "http", SCOPE_KEY: principal}).owner

    assert owner(Principal("https://as.example.test", "bob", "app", frozenset({"mcp:tools"}))) != owner(ALICE)
    assert owner(Principal("https://other.example.test", "alice", "app", frozenset({"mcp:tools"}))) != owner(ALICE)
    assert owner(None) != owner(ALICE)
    refreshed = Principal("https://as.example.test", "alice", "another-app", frozenset(), expires_at=1e10)
    assert owner(refreshed) == owner(ALICE)
