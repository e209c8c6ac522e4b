"""The ``TokenVerifier`` interface, its two failures, and a static verifier for development and tests.

A verifier either returns a ``Principal``, refuses the token (``InvalidToken``: 401 ``invalid_token``),
or cannot decide right now because the authorization server's keys or introspection endpoint cannot
be reached (``VerifierUnavailable``: 503 with ``Retry-After``; a 401 would send the client back into
its OAuth flow for a server-side outage). ``Backoff`` is how the network verifiers space their
attempts at an upstream that keeps failing; ``RemoteVerifier`` what they share.
"""

from __future__ import annotations

import hmac
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping

import httpx

from wiremcp.principal import Principal

B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
"""RFC 6750 §2.1: the only shape a bearer token may have."""


class InvalidToken(Exception):
    """The token is not acceptable (malformed, expired, revoked, wrong issuer or audience, ...).

    The message is for logs; clients only ever see ``error="invalid_token"``."""


class VerifierUnavailable(Exception):
    """The token cannot be checked right now: the authorization server's JWKS or introspection endpoint
    failed, timed out, or is being backed off from. Not the token's fault, so not an ``InvalidToken``.

    ``retry_after``: seconds until the verifier tries the upstream again (0 when it may try at once)."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = max(0.0, retry_after)


class Backoff:
    """When an upstream that failed may be tried again: ``first`` seconds after a failure, doubling with
    each consecutive failure up to ``cap``; while it is failing, one attempt at a time (a probe), so a
    burst of requests after the back-off makes one request upstream, not one each. ``hold`` after a
    success delays the next attempt too (the JWKS is not fetched again for ``refresh_interval``)."""

    def __init__(self, *, first: float, cap: float) -> None:
        self.first = first
        self.cap = max(first, cap)
        self.failures = 0
        self.next_attempt = float("-inf")
        self.probing = False

    def ready(self, now: float) -> bool:
        return now >= self.next_attempt and not self.probing

    def begin(self) -> None:
        """An attempt starts: while failing, it is the only one until it lands."""
        self.probing = self.failures > 0

    def failed(self, now: float) -> float:
        """Record a failure; returns the seconds until the next attempt."""
        self.failures += 1
        self.probing = False
        self.next_attempt = now + min(self.cap, self.first * 2 ** min(self.failures - 1, 32))
        return self.next_attempt - now

    def succeeded(self, now: float, *, hold: float = 0.0) -> None:
        self.failures = 0
        self.probing = False
        self.next_attempt = now + hold

    def abandoned(self) -> None:
        """An attempt was cancelled (shutdown) without an outcome."""
        self.probing = False

    def retry_after(self, now: float) -> float:
        return max(0.0, self.next_attempt - now)


def describe(exc: BaseException) -> str:
    """A one-line reason for a failed upstream call, for logs (never a token)."""
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class TokenVerifier(ABC):
    """Turns a bearer token into a ``Principal``, or raises ``InvalidToken`` (or ``VerifierUnavailable``)."""

    @abstractmethod
    async def verify(self, token: str) -> Principal: ...

    async def aclose(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release what the verifier holds (HTTP clients, a fetch in flight)."""


class RemoteVerifier(TokenVerifier):
    """A verifier that asks the authorization server over HTTP (its keys, its introspection endpoint): the
    HTTP client, owned unless one is given, and how long one call may take, all of it (connecting, waiting,
    reading): also the longest a request waits for one."""

    def __init__(self, *, timeout: float, client: httpx.AsyncClient | None, clock: Callable[[], float]) -> None:
        self.timeout = timeout
        self._client = client or httpx.AsyncClient(timeout=timeout)
        self._own_client = client is None
        self._clock = clock

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()


class StaticTokenVerifier(TokenVerifier):
    """Fixed tokens, each standing for a principal: for development and tests, never production."""

    def __init__(self, tokens: Mapping[str, Principal]) -> None:
        self._tokens = dict(tokens)

    @classmethod
    def from_pairs(cls, pairs: Iterable[str], *, issuer: str = "static") -> StaticTokenVerifier:
        """``token=subject[:scope scope...]`` strings (the ``WIREMCP_AUTH_STATIC_TOKENS`` format)."""
        tokens: dict[str, Principal] = {}
        for pair in pairs:
            token, _, rest = pair.partition("=")
            subject, _, scopes = rest.partition(":")
            if not token or not subject:
                raise ValueError("static tokens are written token=subject[:scope scope ...]")
            if not B64TOKEN.fullmatch(token):
                # The middleware refuses such a token before any verifier sees it: it could never be used.
                raise ValueError("a static token may only use letters, digits and -._~+/ (RFC 6750 b64token)")
            tokens[token] = Principal(issuer, subject, scopes=frozenset(scopes.split()))
        return cls(tokens)

    async def verify(self, token: str) -> Principal:
        for known, principal in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                if principal.expires_at is not None and principal.expires_at < time.time():
                    raise InvalidToken("the token has expired")
                return principal
        raise InvalidToken("unknown token")
