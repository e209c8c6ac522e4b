"""Who a request comes from, as established by a verified bearer token."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Principal:
    issuer: str
    subject: str
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    expires_at: float | None = None
    claims: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> str:
        """The identity sessions, ``requestState`` and handles are bound to: issuer and subject.

        It survives token refreshes (a new token for the same subject is the same principal)."""
        return f"{self.issuer}|{self.subject}"
