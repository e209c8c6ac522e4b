"""Who is calling, as authentication (``auth/``) left it in the ASGI scope, and the step-up challenge."""

from __future__ import annotations

from wiremcp.answer import Answer
from wiremcp.principal import CHALLENGE_KEY, SCOPE_KEY
from wiremcp.transports.asgi import Scope


def principal_key(scope: Scope) -> str | None:
    """The identity a session is bound to (issuer and subject), or None without authentication."""
    principal = scope.get(SCOPE_KEY)
    key = getattr(principal, "key", None)
    return str(key) if key is not None else None


def challenge_headers(scope: Scope, answer: Answer | None) -> list[tuple[bytes, bytes]]:
    """A 403 for missing scopes carries the step-up challenge (all the scopes needed, at once)."""
    build = scope.get(CHALLENGE_KEY)
    if answer is None or answer.status != 403 or build is None:
        return []
    value = build(error="insufficient_scope", scopes=answer.scopes or (),
                  description="the token lacks scopes this request needs")
    return [(b"www-authenticate", str(value).encode("latin-1"))]
