"""Who is calling, as authentication (``auth/``, or your own middleware) left it in the ASGI scope."""

from __future__ import annotations

from typing import cast

from wiremcp.principal import SCOPE_KEY, Principal, key_of
from wiremcp.transports.asgi import Scope


def caller(scope: Scope) -> Principal | None:
    """The verified principal of this HTTP request; None without authentication."""
    return cast("Principal | None", scope.get(SCOPE_KEY))


def peer(scope: Scope) -> str | None:
    """The client's address (the ASGI ``client`` host: behind a proxy, what the server was told to trust)."""
    client = scope.get("client")
    return str(client[0]) if client else None


def owner_key(scope: Scope) -> str | None:
    """The identity a session made by this request is bound to (``Principal.key``); None without
    authentication."""
    return key_of(caller(scope))
