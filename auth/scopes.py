"""Scope checks (the rules live in the core, ``app.scopes``, which the dispatcher applies per component)."""

from app.scopes import covers, missing, parse

__all__ = ["covers", "missing", "parse"]
