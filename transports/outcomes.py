"""How an outcome of the core goes out over HTTP: its status, decided here and nowhere else, and the
step-up challenge of a 403.

The handshake era answers every JSON-RPC error with 200, except a caller that lacks scopes (403, so that
the client can step up). The stateless era gives errors the statuses 2026-07-28 names: 400 for a
malformed request (``BadRequest``: its ``_meta``, its mirrored headers, a missing client capability), 404
for an unknown method, 403 for missing scopes, 500 for an internal error.
"""

from __future__ import annotations

from wiremcp.errors import METHOD_NOT_FOUND, BadRequest, InsufficientScope
from wiremcp.outcome import Outcome
from wiremcp.principal import CHALLENGE_KEY
from wiremcp.transports.asgi import Scope


def http_status(done: Outcome, *, stateless: bool) -> int:
    error = done.error
    if isinstance(error, InsufficientScope):
        return 403
    if not stateless:
        return 200
    if done.internal:
        return 500
    if isinstance(error, BadRequest):
        return 400
    return 404 if error is not None and error.code == METHOD_NOT_FOUND else 200


def challenge_headers(scope: Scope, done: Outcome | None) -> list[tuple[bytes, bytes]]:
    """A 403 for missing scopes carries the step-up challenge (all the scopes needed, at once)."""
    build = scope.get(CHALLENGE_KEY)
    if done is None or not isinstance(done.error, InsufficientScope) or build is None:
        return []
    value = build(error="insufficient_scope", scopes=done.error.scopes,
                  description="the token lacks scopes this request needs")
    return [(b"www-authenticate", str(value).encode("latin-1"))]
