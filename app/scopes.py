"""Scopes, with hierarchies: a broader scope satisfies a narrower one (``files`` covers
``files:read``), as the spec asks servers to account for."""

from __future__ import annotations

from collections.abc import Iterable

SEPARATOR = ":"


def covers(granted: str, needed: str) -> bool:
    """Whether one granted scope satisfies one needed scope (equal, or a ``:``-prefix of it)."""
    return needed == granted or needed.startswith(granted + SEPARATOR)


def missing(granted: Iterable[str], needed: Iterable[str]) -> list[str]:
    """The needed scopes that the granted ones do not cover, in order."""
    have = list(granted)
    return [scope for scope in needed if not any(covers(g, scope) for g in have)]


def parse(value: object) -> frozenset[str]:
    """Scopes from a token's ``scope`` claim (space-separated) or ``scp`` list."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list | tuple):
        return frozenset(str(v) for v in value)
    return frozenset()


def allows(needed: Iterable[str], principal: object) -> bool:
    """Whether ``principal`` (anything with ``scopes``) holds what is needed.

    Without a principal (stdio, no auth configured) there is nothing to check; a principal that carries
    no scopes is refused (fail closed)."""
    needed = list(needed)
    if not needed or principal is None:
        return True
    granted = getattr(principal, "scopes", None)
    return granted is not None and not missing(granted, needed)


def authorize(needed: Iterable[str], principal: object) -> None:
    """Raise ``InsufficientScope`` unless ``principal`` holds what is needed (``allows``)."""
    needed = list(needed)
    if not allows(needed, principal):
        from wiremcp.errors import InsufficientScope

        raise InsufficientScope(list(needed))
