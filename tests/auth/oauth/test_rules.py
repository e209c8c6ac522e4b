"""The rules the settings can write: email domains allowed, scopes by group."""

from __future__ import annotations

import pytest

from wiremcp.auth.oauth.rules import group_scopes, rule


def test_group_scopes_are_read_from_pairs_and_a_pair_without_a_group_is_refused() -> None:
    assert group_scopes(["engineers=notes:read notes:write", "admins=admin", "engineers=deploy"]) == {
        "engineers": frozenset({"notes:read", "notes:write", "deploy"}), "admins": frozenset({"admin"})}
    with pytest.raises(ValueError, match="group=scope scope"):
        group_scopes(["engineers notes:read"])
    with pytest.raises(ValueError, match="group=scope scope"):
        group_scopes(["=notes:read"])


def test_only_users_of_the_allowed_domains_with_a_verified_address_may_sign_in() -> None:
    allowed = rule(allowed_email_domains=["Example.com"])
    ada = allowed({"sub": "1", "email": "ada@EXAMPLE.com", "name": "Ada", "password": "never kept"})
    assert ada is not None
    assert (ada.subject, ada.scopes, dict(ada.claims)) == ("1", None, {"email": "ada@EXAMPLE.com", "name": "Ada"})
    assert allowed({"sub": "2", "email": "eve@example.com.evil.org"}) is None
    assert allowed({"sub": "3"}) is None
    assert allowed({"sub": "4", "email": "bob@example.com", "email_verified": False}) is None
    assert rule()({"sub": "5"}) is not None


def test_a_user_gets_the_scopes_of_their_groups_only() -> None:
    by_group = rule(scopes_by_group=group_scopes(["engineers=notes:read notes:write", "admins=admin"]))
    engineer = by_group({"sub": "1", "groups": ["engineers", "other"]})
    nobody = by_group({"sub": "2"})
    single = by_group({"sub": "3", "groups": "admins"})
    assert [i.scopes if i else None for i in (engineer, nobody, single)] == [
        frozenset({"notes:read", "notes:write"}), frozenset(), frozenset({"admin"})]
