"""DNS-rebinding guard: ``Host`` must be on an allow-list, and a present ``Origin`` must be too.

Loopback names are allowed by default, which is right for a server bound to 127.0.0.1;
a real deployment lists its own host names (``WIREMCP_ALLOWED_HOSTS``) or turns the
check off with ``*``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Iterable

from wiremcp.errors import INVALID_REQUEST
from wiremcp.transports.asgi import ASGIApp, Receive, Scope, SendASGI, header, respond_error

LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
"""The ``Host`` values accepted by default: the loopback names, any port (``WIREMCP_ALLOWED_HOSTS``)."""
LOOPBACK_ORIGINS = tuple(f"{scheme}://{host}" for scheme in ("http", "https") for host in LOOPBACK_HOSTS)


def _split_host(value: str) -> tuple[str, str]:
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        host, rest = value[:end + 1], value[end + 1:]
        return host, rest[1:] if rest.startswith(":") else ""
    host, _, port = value.partition(":")
    return host, port


class _Patterns:
    def __init__(self, patterns: Iterable[str]) -> None:
        # Verdicts are kept per value: clients send the same few again and again.
        self.match = functools.lru_cache(maxsize=256)(self._match)
        self.any = False
        self.items: list[tuple[str, str, str]] = []  # (scheme, host, port) with "*" wildcards
        for raw in patterns:
            raw = raw.strip().lower()
            if not raw:
                continue
            if raw == "*":
                self.any = True
                continue
            scheme, sep, rest = raw.partition("://")
            if not sep:
                scheme, rest = "", raw
            host, port = _split_host(rest.rstrip("/"))
            self.items.append((scheme, host, port or "*"))

    def _match(self, value: str, with_scheme: bool) -> bool:
        if self.any:
            return True
        scheme = ""
        rest = value
        if with_scheme:
            scheme, sep, rest = value.lower().partition("://")
            if not sep:
                return False
        host, port = _split_host(rest.rstrip("/"))
        for p_scheme, p_host, p_port in self.items:
            if with_scheme and p_scheme != scheme:
                continue
            if p_host != host and p_host != "*" and not (
                    p_host.startswith("*.") and host.endswith(p_host[1:]) and len(host) > len(p_host) - 1):
                continue
            if p_port == "*" or p_port == port or (not port and p_port in ("80", "443")):
                return True
        return False


class HostOriginGuard:
    """ASGI middleware: 421 for a ``Host`` not allowed, 403 for an ``Origin`` not allowed."""

    def __init__(self, app: ASGIApp, *, allowed_hosts: Iterable[str] = LOOPBACK_HOSTS,
                 allowed_origins: Iterable[str] = LOOPBACK_ORIGINS) -> None:
        self.app = app
        self._hosts = _Patterns(allowed_hosts)
        self._origins = _Patterns(allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        await self.forward(scope, receive, send)

    def forward(self, scope: Scope, receive: Receive, send: SendASGI) -> Awaitable[None]:
        """The refusal, or what the app behind answers; handed back to be awaited (``MCPHttpApp`` awaits it),
        so that no frame of the guard's is resumed with the request's at each turn it waits."""
        if scope["type"] == "http":
            host = header(scope, b"host")
            if not self._hosts.match(host or "", with_scheme=False):  # no Host: allowed only by "*"
                return respond_error(send, 421, INVALID_REQUEST, "Misdirected Request: Host header not allowed")
            origin = header(scope, b"origin")
            if origin is not None and not self._origins.match(origin, with_scheme=True):
                return respond_error(send, 403, INVALID_REQUEST, "Forbidden: Origin not allowed")
        return self.app(scope, receive, send)
