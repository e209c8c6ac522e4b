"""Scope checks (the rules live in the core, ``wiremcp.scopes``, which the dispatcher applies per component)."""

from wiremcp.scopes import covers, missing, parse

__all__ = ["covers", "missing", "parse"]
