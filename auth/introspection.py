"""Verify opaque access tokens with RFC 7662 token introspection.

The server authenticates to the introspection endpoint as a client (HTTP Basic). Answers
are cached by a hash of the token, never longer than the token lives nor ``cache_ttl``; a
token the authorization server calls inactive is refused (and that answer is cached briefly).

There is one introspection per token at a time, in a task of its own that every request with that
token waits for (a request that goes away does not cancel it for the others), and it never takes
longer than ``timeout``. An endpoint that fails (an error status, an answer that is not JSON, no
connection, a timeout) is not called again for ``backoff`` seconds, doubling with every consecutive
failure up to ``max_backoff``, whichever tokens arrive; then one request probes it while the others
keep failing fast. Meanwhile tokens without a cached answer fail with ``VerifierUnavailable``
(503 with ``Retry-After``), not ``InvalidToken``: the token is not at fault. Cached answers are
still used, never beyond their lifetime.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable

import httpx

from wiremcp.auth.jwt_verifier import audience_matches
from wiremcp.auth.verifier import Backoff, InvalidToken, RemoteVerifier, VerifierUnavailable, describe
from wiremcp.principal import Principal
from wiremcp.scopes import parse

log = logging.getLogger("wiremcp.auth")

MAX_CACHED = 10_000


class IntrospectionVerifier(RemoteVerifier):
    def __init__(self, *, endpoint: str, client_id: str, client_secret: str, audience: str | None = None,
                 issuer: str | None = None, cache_ttl: float = 60.0, negative_ttl: float = 5.0,
                 timeout: float = 10.0, backoff: float = 1.0, max_backoff: float = 60.0,
                 client: httpx.AsyncClient | None = None, clock: Callable[[], float] = time.time,
                 service_tokens: bool = False) -> None:
        self.endpoint = endpoint
        self.service_tokens = service_tokens
        """Accept an active token that names no subject as its client's (``client_id``): a service's own token,
        of the client credentials grant. Off by default: an authorization server that leaves ``sub`` out of its
        users' tokens would otherwise make every user of one client the same principal."""
        self._auth = (client_id, client_secret)
        self.audience = audience
        self.issuer = issuer
        self.cache_ttl = cache_ttl
        self.negative_ttl = negative_ttl
        super().__init__(timeout=timeout, client=client, clock=clock)
        self._cache: OrderedDict[str, tuple[float, Principal | None]] = OrderedDict()
        self._inflight: dict[str, asyncio.Future[Principal | None]] = {}
        self._retry = Backoff(first=backoff, cap=max_backoff)
        self._failure = ""
        self.calls = 0

    async def verify(self, token: str) -> Principal:
        digest = hashlib.sha256(token.encode()).hexdigest()
        now = self._clock()
        cached = self._cache.get(digest)
        if cached is not None and cached[0] > now:
            principal = cached[1]
        else:
            pending = self._inflight.get(digest)
            if pending is None:  # one introspection per token at a time, however many requests wait
                if not self._retry.ready(now):
                    raise VerifierUnavailable(f"introspection is failing ({self._failure}); backing off",
                                              retry_after=self._retry.retry_after(now))
                self._retry.begin()
                # In a task of its own: if the request that started it goes away, the others still get the answer.
                pending = asyncio.ensure_future(self._introspect(token))
                self._inflight[digest] = pending
                pending.add_done_callback(functools.partial(self._landed, digest))
            principal = await asyncio.shield(pending)  # bounded: the introspection ends within ``timeout``
            now = self._clock()
            until = min(principal.expires_at, now + self.cache_ttl) if principal and principal.expires_at \
                else now + (self.cache_ttl if principal else self.negative_ttl)
            self._cache[digest] = (until, principal)
            while len(self._cache) > MAX_CACHED:
                self._cache.popitem(last=False)
        if principal is None:
            raise InvalidToken("the authorization server says the token is not active")
        if principal.expires_at is not None and principal.expires_at < now:
            raise InvalidToken("the token has expired")
        return principal

    def _landed(self, digest: str, future: asyncio.Future[Principal | None]) -> None:
        self._inflight.pop(digest, None)
        if not future.cancelled():
            future.exception()  # retrieved, so a failure nobody waited for is not reported as never retrieved

    async def _introspect(self, token: str) -> Principal | None:
        self.calls += 1
        try:
            async with asyncio.timeout(self.timeout):
                response = await self._client.post(self.endpoint, data={"token": token,
                                                                        "token_type_hint": "access_token"},
                                                   auth=self._auth)
                response.raise_for_status()
                data = response.json()
        except asyncio.CancelledError:
            self._retry.abandoned()
            raise
        except (httpx.HTTPError, ValueError, TimeoutError) as exc:
            # Not the token's fault (an inactive token is an answer, not an error): the endpoint failed.
            self._failure = describe(exc)
            wait = self._retry.failed(self._clock())
            log.warning("token introspection at %s failed (%s); next attempt in %.1f s", self.endpoint,
                        self._failure, wait)
            raise VerifierUnavailable(f"introspection failed: {self._failure}", retry_after=wait) from None
        self._retry.succeeded(self._clock())
        if not isinstance(data, dict) or data.get("active") is not True:
            return None
        if self.issuer is not None and data.get("iss") not in (None, self.issuer):
            return None
        if self.audience is not None and not audience_matches(data.get("aud"), self.audience):
            return None
        # Sessions and requestState are bound to issuer and subject: a token without one is no principal, unless
        # service tokens are accepted, whose subject is their client (RFC 9068 has a JWT's ``sub`` be the client_id
        # for the client credentials grant).
        subject = data.get("sub") or (data.get("client_id") if self.service_tokens else None)
        if not subject:
            return None
        exp = data.get("exp")
        return Principal(issuer=str(data.get("iss") or self.issuer or ""), subject=str(subject),
                         client_id=data.get("client_id"), scopes=parse(data.get("scope")),
                         expires_at=float(exp) if isinstance(exp, int | float) else None, claims=data)

    async def aclose(self) -> None:
        pending = list(self._inflight.values())
        for future in pending:
            future.cancel()
        for future in pending:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await future
        await super().aclose()
