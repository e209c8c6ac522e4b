"""Views: named subsets of a server's catalog, each for the callers of one team (``MCPServer.view``), what
gateways call virtual servers. One deployment, one URL: a caller holding one of a view's scopes, or in one of its
groups (the token's ``groups`` claim), sees that view's tools, prompts and resources only, and the union of them
when several views are theirs. What is outside their views is not listed, and using it answers as if it did not
exist (-32602). A caller whom no view names sees the whole catalog (each component still under its own scopes).

Patterns are shell-style (``github_*``, ``docs://*``), matched against the names and URIs as this server serves
them (a mounted child's under its prefix). The decision is ``wiremcp.access``'s, which asks ``shown`` here.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from wiremcp.errors import DefinitionError

ViewKind = Literal["tools", "prompts", "resources"]
"""What a view shows: tools and prompts by name, resources (templates, skills and their folders too) by URI."""

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True, slots=True)
class View:
    """One view: who gets it (``scopes``, ``groups``: any one of them) and what it shows."""

    name: str
    tools: tuple[str, ...]
    prompts: tuple[str, ...]
    resources: tuple[str, ...]
    scopes: frozenset[str]
    groups: frozenset[str]
    search: Any = None
    """The ``ToolSearch`` through which the view offers its tools (``wiremcp.tool_search``); None: listed."""

    def applies_to(self, principal: Any) -> bool:
        """Whether the view is ``principal``'s: one of its scopes granted, or one of its groups theirs."""
        if principal is None:
            return False
        granted = getattr(principal, "scopes", None) or ()
        claims = getattr(principal, "claims", None) or {}
        groups = claims.get("groups")
        member = {str(g) for g in groups} if isinstance(groups, list | tuple) else set()
        return bool(self.scopes.intersection(granted) or self.groups & member)

    def shows(self, kind: ViewKind, key: str) -> bool:
        """Whether the view shows the ``kind`` (``tools``, ``prompts``, ``resources``) named ``key``."""
        patterns: tuple[str, ...] = getattr(self, kind)
        return any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns)


def make(name: object, where: str, *, tools: object, prompts: object, resources: object, scopes: object,
         groups: object, search: Any = None) -> View:
    """A ``View`` from what ``MCPServer.view`` was given; a mistake is a ``DefinitionError`` naming it."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise DefinitionError(f"{where}: view name {name!r} must be 1 to 64 letters, digits, '_', '.' or '-'")
    made = View(name, _patterns(tools, "tools", name, where), _patterns(prompts, "prompts", name, where),
                _patterns(resources, "resources", name, where), frozenset(_patterns(scopes, "scopes", name, where)),
                frozenset(_patterns(groups, "groups", name, where)), search)
    if not made.scopes and not made.groups:
        raise DefinitionError(f"{where}: view {name} is for nobody: give the scopes or groups of the callers it is for")
    if not (made.tools or made.prompts or made.resources):
        raise DefinitionError(f"{where}: view {name} shows nothing: give the tools, prompts or resources it shows")
    return made


def _patterns(given: object, field: str, name: str, where: str) -> tuple[str, ...]:
    if isinstance(given, str):
        raise DefinitionError(f"{where}: view {name}: {field} takes a list, e.g. [{given!r}], not a string")
    if not isinstance(given, Iterable) or not all(isinstance(item, str) and item for item in given):
        raise DefinitionError(f"{where}: view {name}: {field} must be a list of non-empty strings")
    return tuple(given)


def theirs(views: Sequence[View], principal: Any) -> list[View] | None:
    """The views of ``principal``; None when none is theirs (they see the whole catalog)."""
    found = [view for view in views if view.applies_to(principal)]
    return found or None


def shown(views: Sequence[View] | None, kind: ViewKind, key: str) -> bool:
    """Whether one of ``views`` (None: no view applies) shows the ``kind`` named ``key``."""
    return views is None or any(view.shows(kind, key) for view in views)
