"""``wiremcp.scopes``: the rules: hierarchies (a broader scope covers a narrower one), what is missing, how
scopes are read from a token, and ``authorize`` (how the gate applies them is ``test_access.py``'s)."""

from __future__ import annotations

from typing import Any

import pytest

from wiremcp.errors import INVALID_REQUEST, InsufficientScope
from wiremcp.principal import Principal
from wiremcp.scopes import authorize, covers, missing, parse

SPEC = "2025-11-25/basic/authorization"


# -- the rules ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("granted", "needed", "expected"), [
    ("files", "files", True),
    ("files", "files:read", True),
    ("files", "files:read:deep", True),
    ("files:read", "files", False),
    ("files:read", "files:write", False),
    ("file", "files:read", False),
    ("files:", "files:read", False),
    ("", "files", False),
])
@pytest.mark.spec(f"{SPEC}#scope-challenge-handling")
def test_a_broader_scope_covers_a_narrower_one(granted: str, needed: str, expected: bool) -> None:
    assert covers(granted, needed) is expected


def test_missing_keeps_the_order_of_what_is_needed() -> None:
    assert missing(["files"], ["files:read", "mail:send", "files:write", "calendar"]) == ["mail:send", "calendar"]
    assert missing([], ["a", "b"]) == ["a", "b"]
    assert missing(["a"], []) == []


@pytest.mark.parametrize(("value", "expected"), [
    ("a b  c", {"a", "b", "c"}), (["a", "b"], {"a", "b"}), (("a",), {"a"}), ("", set()), (None, set()),
    (42, set()), ({"a": 1}, set())])
def test_parse_reads_scope_strings_and_scp_lists(value: Any, expected: set[str]) -> None:
    assert parse(value) == frozenset(expected)


def test_authorize_names_every_scope_needed_not_only_the_missing_ones() -> None:
    principal = Principal("iss", "alice", scopes=frozenset({"files:read"}))
    with pytest.raises(InsufficientScope) as raised:
        authorize(["files:read", "files:write"], principal)
    assert raised.value.scopes == ["files:read", "files:write"]
    assert raised.value.code == INVALID_REQUEST
    assert raised.value.to_error()["data"] == {"requiredScopes": ["files:read", "files:write"]}
    authorize(["files:read"], principal)
    authorize([], principal)


def test_without_a_principal_nothing_is_checked() -> None:
    authorize(["admin"], None)  # stdio, or HTTP without auth


def test_a_principal_without_scopes_fails_closed() -> None:
    with pytest.raises(InsufficientScope) as raised:
        authorize(["admin"], "iss|alice")  # a bare key carries no scopes: refuse rather than wave through
    assert raised.value.scopes == ["admin"]
