"""Who is calling, as authentication (``auth/``, or your own middleware) left it in the ASGI scope.

An HTTP request's caller is read from its scope once, at the top of the request (``caller``), and the
``Caller`` is handed down from there: to the session checks, the inlet (``wiremcp.inlet``) and what serves
the request.
"""

from __future__ import annotations

from typing import cast

from wiremcp.inlet import Caller
from wiremcp.principal import SCOPE_KEY, Principal
from wiremcp.transports.asgi import Scope

_ANONYMOUS: dict[str | None, Caller] = {}
"""The callers without a principal, by address, made once each (most requests of a deployment without
authentication come from a few addresses: a proxy's); forgotten all at once past ``_ANONYMOUS_KEPT``."""
_ANONYMOUS_KEPT = 1024


def caller(scope: Scope) -> Caller:
    """The caller of this HTTP request: its verified principal (None without authentication), the client's
    address (the ASGI ``client`` host: behind a proxy, what the server was told to trust) and the identity a
    session made by the request is bound to (``Principal.key``; None without authentication)."""
    client = scope.get("client")
    peer = str(client[0]) if client else None
    principal = cast("Principal | None", scope.get(SCOPE_KEY))
    if principal is not None:
        return Caller(principal, peer)
    known = _ANONYMOUS.get(peer)
    if known is None:
        if len(_ANONYMOUS) >= _ANONYMOUS_KEPT:
            _ANONYMOUS.clear()
        known = _ANONYMOUS[peer] = Caller(None, peer)
    return known
