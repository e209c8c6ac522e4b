"""The answers a server gives when it will not serve a request right now, whatever the transport or the era:
each one's HTTP status, JSON-RPC code, message and headers, decided here and nowhere else. The transports
and the authentication layer write them (``wiremcp.transports.asgi.refuse``, and auth's own writer); a
test holds every transport to them.

All of them are 503 with a JSON-RPC -32603 error and ``Retry-After``: the request was well formed and may
be sent again, to this replica later or to another one now. ``closes`` says the connection should not be
reused (a replica that is shutting down).
"""

from __future__ import annotations

from dataclasses import dataclass

from wiremcp.errors import INTERNAL_ERROR

UNAVAILABLE = 503


@dataclass(frozen=True, slots=True)
class Refusal:
    """One kind of "not now": what goes out over HTTP."""

    message: str
    retry_after: int
    """Seconds, for ``Retry-After``: when trying again is worth it."""
    closes: bool = False
    """``Connection: close``: the client should come back on another connection (another replica)."""
    status: int = UNAVAILABLE
    code: int = INTERNAL_ERROR

    def headers(self, retry_after: int | None = None) -> list[tuple[bytes, bytes]]:
        """``Retry-After`` (this refusal's, or ``retry_after`` when the moment is known), and
        ``Connection: close`` where it applies."""
        out = [(b"retry-after", str(self.retry_after if retry_after is None else retry_after).encode())]
        if self.closes:
            out.append((b"connection", b"close"))
        return out


SHUTTING_DOWN = Refusal("Service Unavailable: this replica is shutting down", retry_after=1, closes=True)
"""A new session or stream while the replica drains (``wiremcp.transports.drain``)."""
TOO_MANY_SESSIONS = Refusal("Service Unavailable: too many sessions; try again later", retry_after=30)
"""A new session past ``WIREMCP_MAX_SESSIONS``, on any transport."""
STORE_UNAVAILABLE = Refusal("Service Unavailable: a shared store cannot be reached; try again shortly",
                            retry_after=1)
"""A shared store (Redis: sessions, events, tasks) did not answer, before or while the request was served."""
UPSTREAM_UNAVAILABLE = Refusal("Service Unavailable: an upstream server cannot be reached; try again shortly",
                               retry_after=1)
"""A gateway's remote child could not be reached, or did not answer in time (``wiremcp.transports.gateway``)."""
VERIFIER_UNAVAILABLE = Refusal("Service Unavailable: the authorization server cannot be reached to check the "
                               "token; try again shortly", retry_after=1)
"""The token could not be checked (the verifier says when it tries again: its ``Retry-After`` wins)."""

REFUSALS = {"shutting-down": SHUTTING_DOWN, "too-many-sessions": TOO_MANY_SESSIONS,
            "store-unavailable": STORE_UNAVAILABLE, "upstream-unavailable": UPSTREAM_UNAVAILABLE,
            "verifier-unavailable": VERIFIER_UNAVAILABLE}
"""Every refusal, by name (the Operations page's table gives a row to each)."""
