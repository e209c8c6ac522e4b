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


def caller(scope: Scope) -> Caller:
    """The caller of this HTTP request: its verified principal (None without authentication), the client's
    address (the ASGI ``client`` host: behind a proxy, what the server was told to trust) and the identity a
    session made by the request is bound to (``Principal.key``; None without authentication)."""
    client = scope.get("client")
    return Caller(cast("Principal | None", scope.get(SCOPE_KEY)), str(client[0]) if client else None)
