"""Rules for who may sign in and with which scopes, written as data (what the settings can say): email domains
allowed, and the scopes each of the provider's groups grants. A rule in code is any function from the provider's
claims to an ``Identity`` (or None: refused)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from wiremcp.auth.oauth.server import KEPT_CLAIMS, Identity
from wiremcp.types import JSONObject


def group_scopes(pairs: Iterable[str]) -> dict[str, frozenset[str]]:
    """``group=scope scope`` pairs (the ``WIREMCP_OAUTH_GROUP_SCOPES`` format) as a mapping; a pair without ``=``
    or a group is a ``ValueError``."""
    mapping: dict[str, frozenset[str]] = {}
    for pair in pairs:
        group, equals, scopes = pair.partition("=")
        if not equals or not group.strip():
            raise ValueError(f"a group's scopes are written group=scope scope, got {pair!r}")
        mapping[group.strip()] = mapping.get(group.strip(), frozenset()) | frozenset(scopes.split())
    return mapping


def rule(*, allowed_email_domains: Sequence[str] = (), scopes_by_group: Mapping[str, frozenset[str]] | None = None,
         ) -> Callable[[JSONObject], Identity | None]:
    """Users whose email is in ``allowed_email_domains`` (any user when empty), each with the scopes of their groups
    (``scopes_by_group``; None: every scope the server supports)."""
    domains = frozenset(d.lower().lstrip("@") for d in allowed_email_domains)

    def identity(claims: JSONObject) -> Identity | None:
        if domains:
            email = claims.get("email")
            if not isinstance(email, str) or email.rpartition("@")[2].lower() not in domains:
                return None
            if claims.get("email_verified") is False:  # the provider says it is not theirs (yet)
                return None
        scopes: frozenset[str] | None = None
        if scopes_by_group is not None:
            groups = claims.get("groups")
            names = [groups] if isinstance(groups, str) else groups if isinstance(groups, list) else []
            scopes = frozenset().union(*(scopes_by_group.get(str(g), frozenset()) for g in names))
        return Identity(str(claims["sub"]), scopes, {k: claims[k] for k in KEPT_CLAIMS if k in claims})

    return identity
