"""Forwarded headers, trusted only from the proxies the deployment names (``WIREMCP_TRUSTED_PROXIES``).

A client's address decides its rate-limit bucket and what audit lines and logs say of it, so it must not be
something the client writes: ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are read only on a connection
from a trusted proxy. The address is then the rightmost one in ``X-Forwarded-For`` that is not itself a
trusted proxy (each proxy appends who it heard from; what lies left of the first untrusted hop is whatever
that hop chose to write). With no proxy trusted, the default, the headers are ignored.

uvicorn has such a step of its own (``--proxy-headers``, on by default and trusting 127.0.0.1, before the
app sees the request), so ``wiremcp http`` turns it off. Under ``uvicorn wiremcp:asgi`` it is the command
line's: an address uvicorn took from a header (the socket's port, never 0, is then 0) while wiremcp trusts
no proxy is replaced by ``UNTRUSTED``, with a warning once, so that a local client cannot pick its own.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable

from wiremcp.transports.asgi import ASGIApp, Receive, Scope, SendASGI

log = logging.getLogger("wiremcp.transports.forwarded")

UNTRUSTED = "untrusted-proxy"
"""The address of a request whose address a step before wiremcp (uvicorn's ``--proxy-headers``) took from a
forwarded header that no ``WIREMCP_TRUSTED_PROXIES`` allows: every such request is counted as this one caller."""
SCHEMES = frozenset({"http", "https"})

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class TrustedProxies:
    """Addresses and networks (``10.0.0.0/8``, ``127.0.0.1``, ``::1``) whose forwarded headers are believed;
    ``*`` believes every peer (only where nothing but the proxy can reach the server)."""

    __slots__ = ("everyone", "networks")

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self.everyone = False
        self.networks: list[Network] = []
        for entry in entries:
            if entry == "*":
                self.everyone = True
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address, a network such as 10.0.0.0/8, or *") from None

    def __bool__(self) -> bool:
        return self.everyone or bool(self.networks)

    def __contains__(self, host: str) -> bool:
        if self.everyone:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in self.networks)

    def client_of(self, forwarded_for: list[str]) -> str | None:
        """The client named by an ``X-Forwarded-For`` chain (oldest hop first): the rightmost hop that is not a
        trusted proxy, else the leftmost; None for an empty chain."""
        for hop in reversed(forwarded_for):
            if hop not in self:
                return hop
        return forwarded_for[0] if forwarded_for else None


def _hops(values: list[bytes]) -> list[str]:
    hops: list[str] = []
    for value in values:
        for part in value.decode("latin-1").split(","):
            hop = part.strip()
            if hop.startswith("[") and "]" in hop:  # [v6]:port
                hop = hop[1:hop.index("]")]
            elif hop.count(":") == 1:  # v4:port
                hop = hop.partition(":")[0]
            if hop:
                hops.append(hop)
    return hops


class ForwardedHeaders:
    """ASGI middleware: the ``client`` and ``scheme`` of a request from a trusted proxy are the ones its
    ``X-Forwarded-For`` and ``X-Forwarded-Proto`` name; from anyone else they stay the connection's own."""

    def __init__(self, app: ASGIApp, trusted: TrustedProxies) -> None:
        self.app = app
        self.trusted = trusted
        self._believing = bool(trusted)
        self._warned = False

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        client = scope.get("client")
        if client and scope["type"] != "lifespan":
            if self._believing:
                if client[0] in self.trusted:
                    self._believe(scope)
            elif client[1] == 0 and any(name == b"x-forwarded-for" for name, _ in scope["headers"]):
                self._distrust(scope)
        await self.app(scope, receive, send)

    def _believe(self, scope: Scope) -> None:
        forwarded_for: list[bytes] = []
        proto: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"x-forwarded-for":
                forwarded_for.append(value)
            elif name == b"x-forwarded-proto":
                proto = value
        host = self.trusted.client_of(_hops(forwarded_for))
        if host is not None:
            scope["client"] = (host, 0)
        if proto is not None:
            scheme = proto.decode("latin-1").split(",")[-1].strip().lower()
            if scheme in SCHEMES:
                scope["scheme"] = scheme

    def _distrust(self, scope: Scope) -> None:
        if not self._warned:
            self._warned = True
            log.warning("a client address came from X-Forwarded-For before wiremcp saw the request (uvicorn's "
                        "--proxy-headers), but WIREMCP_TRUSTED_PROXIES names no proxy: such requests are counted "
                        "as %r. Run uvicorn with --no-proxy-headers, and name your proxies in "
                        "WIREMCP_TRUSTED_PROXIES", UNTRUSTED)
        scope["client"] = (UNTRUSTED, 0)
