"""Who a request comes from, as authentication established it: the one ``Principal`` type of the project.

An authentication middleware (``wiremcp.auth.BearerAuth``, or your own) verifies a credential and leaves
a ``Principal`` in the ASGI scope under ``SCOPE_KEY``, and a builder of ``WWW-Authenticate`` step-up
challenges under ``CHALLENGE_KEY``; the HTTP transport reads them there. Sessions, tasks, ``requestState``
and handles are bound to ``Principal.key``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCOPE_KEY = "wiremcp.principal"
"""Where an authentication middleware leaves the verified principal in the ASGI scope."""
CHALLENGE_KEY = "wiremcp.challenge"
"""Where it leaves the builder of ``WWW-Authenticate`` challenges (``(error=, scopes=, description=) -> str``)."""


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


def key_of(principal: Principal | None) -> str | None:
    """Whom sessions, tasks and ``requestState`` are bound to for a caller: its ``key``; None without
    authentication."""
    return principal.key if principal is not None else None
