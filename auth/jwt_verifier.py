"""Verify JWT access tokens against the authorization server's JWKS.

Only asymmetric algorithms from an allow-list are accepted: never ``none``, never an HMAC algorithm
(which would let a public key act as a shared secret). A token that is not a compact JWS with a
decodable JSON header naming an allowed algorithm is refused before any network I/O.

Keys are fetched with httpx and cached. There is at most one fetch in flight, in a task of its own
that every request needing it waits for (a request that goes away does not cancel it for the
others), and it never takes longer than ``timeout``, so no request waits longer than that.

- Cached keys that are older than ``cache_ttl`` are refreshed in the background; requests keep being
  served with them meanwhile (stale-while-revalidate), and keep them if the refresh fails.
- A token signed with an unknown ``kid`` waits for one refresh, at most once per ``refresh_interval``
  (so a flood of forged ``kid`` values cannot turn into a flood of JWKS requests).
- A failed fetch is not retried for ``backoff`` seconds, doubling with every consecutive failure up to
  ``refresh_interval``, however many requests arrive. Without keys, requests meanwhile fail with
  ``VerifierUnavailable`` (503 with ``Retry-After``), not ``InvalidToken``: the token is not at fault.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from joserfc import jwk, jwt
from joserfc.errors import InvalidKeyIdError, JoseError

from wiremcp.auth.verifier import Backoff, InvalidToken, RemoteVerifier, VerifierUnavailable, describe
from wiremcp.principal import Principal
from wiremcp.scopes import parse

log = logging.getLogger("wiremcp.auth")

ASYMMETRIC = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
DEFAULT_ALGORITHMS = ("RS256", "ES256", "PS256", "EdDSA")
_B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def same_resource(a: str, b: str) -> bool:
    """Resource URLs compare with scheme and host case-insensitive, and no trailing slash."""
    def norm(url: str) -> str:
        scheme, sep, rest = url.partition("://")
        host, slash, path = rest.partition("/")
        return f"{scheme.lower()}{sep}{host.lower()}{slash}{path}".rstrip("/")

    return norm(a) == norm(b)


def audience_matches(claim: object, resource: str) -> bool:
    """Whether an ``aud`` claim (a string or a list of them) names ``resource``."""
    audiences = [claim] if isinstance(claim, str) else claim if isinstance(claim, list) else []
    return any(isinstance(a, str) and same_resource(a, resource) for a in audiences)


def principal_of(claims: dict[str, Any], *, issuer: str, audience: str, now: float, leeway: float) -> Principal:
    """The caller a verified JWT's claims name: checked for its issuer, its expiry, its subject and its audience
    (this resource), else ``InvalidToken``."""
    registry = jwt.JWTClaimsRegistry(now=int(now), leeway=int(leeway), iss={"essential": True, "value": issuer},
                                     exp={"essential": True}, sub={"essential": True})
    try:
        registry.validate(claims)
    except JoseError as exc:
        raise InvalidToken(f"the token's claims are not acceptable: {exc}") from None
    if not audience_matches(claims.get("aud"), audience):
        raise InvalidToken("the token was not issued for this resource (audience)")
    scopes = parse(claims.get("scope")) | parse(claims.get("scp"))
    client_id = claims.get("client_id") or claims.get("azp")
    return Principal(issuer=str(claims["iss"]), subject=str(claims["sub"]),
                     client_id=str(client_id) if client_id else None, scopes=scopes,
                     expires_at=float(claims["exp"]), claims=dict(claims))


def _json_object(segment: str) -> dict[str, Any] | None:
    try:
        value = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except ValueError:  # bad base64 (binascii.Error), bad UTF-8, bad JSON: all ValueErrors
        return None
    return value if isinstance(value, dict) else None


def jws_header(token: str, algorithms: Sequence[str]) -> dict[str, Any]:
    """The protected header of a compact JWS whose ``alg`` is allowed, or ``InvalidToken``: the checks a
    token must pass before it may cost a JWKS fetch."""
    parts = token.split(".")
    if len(parts) != 3 or not all(part and set(part) <= _B64URL for part in parts):
        raise InvalidToken("the token does not verify: it is not a compact JWS")
    header, payload = _json_object(parts[0]), _json_object(parts[1])
    if header is None or payload is None:
        raise InvalidToken("the token does not verify: its header or claims are not JSON objects")
    if header.get("alg") not in algorithms:
        raise InvalidToken("the token does not verify: its algorithm is not allowed")
    if not isinstance(header.get("kid", ""), str):
        raise InvalidToken("the token does not verify: its kid is not a string")
    return header


class JWKSVerifier(RemoteVerifier):
    def __init__(self, *, jwks_url: str, issuer: str, audience: str, algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
                 leeway: float = 30.0, refresh_interval: float = 60.0, cache_ttl: float = 3600.0,
                 timeout: float = 10.0, backoff: float = 1.0, client: httpx.AsyncClient | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        unsafe = set(algorithms) - ASYMMETRIC
        if unsafe:
            raise ValueError(f"refusing algorithms {sorted(unsafe)}: only asymmetric signatures are accepted")
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.audience = audience
        self.algorithms = list(algorithms)
        self.leeway = leeway
        self.refresh_interval = refresh_interval
        self.cache_ttl = cache_ttl
        super().__init__(timeout=timeout, client=client, clock=clock)
        self._keys: jwk.KeySet | None = None
        self._fetched_at = 0.0
        self._retry = Backoff(first=backoff, cap=refresh_interval)
        self._flight: asyncio.Task[None] | None = None
        self._failure = "no fetch yet"
        self.attempts = 0
        """JWKS requests made."""
        self.fetches = 0
        """JWKS requests that gave keys."""

    # -- the key cache ------------------------------------------------------------------------------------
    def _start(self) -> asyncio.Task[None]:
        if self._flight is None:
            self._flight = asyncio.ensure_future(self._fetch())
        return self._flight

    async def _fetch(self) -> None:
        """One JWKS request; its outcome lands in the verifier's state (it never raises)."""
        self.attempts += 1
        self._retry.begin()
        try:
            try:
                async with asyncio.timeout(self.timeout):
                    response = await self._client.get(self.jwks_url)
                    response.raise_for_status()
                    keys = jwk.KeySet.import_key_set(response.json())
            except asyncio.CancelledError:
                self._retry.abandoned()
                raise
            except Exception as exc:  # whatever went wrong, the key source failed: logged, then backed off
                self._failure = describe(exc)
                wait = self._retry.failed(self._clock())
                kept = "keeping the cached keys" if self._keys is not None else "no keys yet"
                log.warning("JWKS fetch from %s failed (%s); %s; next attempt in %.1f s", self.jwks_url,
                            self._failure, kept, wait)
                return
            now = self._clock()
            self._keys, self._fetched_at = keys, now
            self._retry.succeeded(now, hold=self.refresh_interval)
            self.fetches += 1
        finally:
            self._flight = None

    async def _join(self) -> None:
        """Wait for the fetch in flight (starting one): shielded, so a waiter that goes away leaves it running."""
        await asyncio.shield(self._start())

    def _unavailable(self) -> VerifierUnavailable:
        return VerifierUnavailable(f"the JWKS could not be fetched: {self._failure}",
                                   retry_after=self._retry.retry_after(self._clock()))

    async def _key_set(self) -> jwk.KeySet:
        """The keys, fetched first if there are none yet (joining a fetch in flight, or starting one unless
        backing off); stale ones are served while a background refresh runs."""
        keys = self._keys
        if keys is not None:
            now = self._clock()
            if self._flight is None and now - self._fetched_at > self.cache_ttl and self._retry.ready(now):
                self._start()  # stale-while-revalidate: not awaited
            return keys
        if self._flight is None and not self._retry.ready(self._clock()):
            raise self._unavailable()
        await self._join()
        keys = self._keys
        if keys is None:
            raise self._unavailable()
        return keys

    async def _refreshed(self) -> jwk.KeySet | None:
        """New keys for an unknown ``kid``: None when no refresh may happen now or it failed."""
        if self._flight is None and not self._retry.ready(self._clock()):
            return None
        before = self.fetches
        await self._join()
        return self._keys if self.fetches > before else None

    async def settled(self) -> None:
        """Wait for the fetch in flight, if any (a background refresh, in tests or before shutdown)."""
        if self._flight is not None:
            await asyncio.shield(self._flight)

    # -- tokens ------------------------------------------------------------------------------------------
    async def verify(self, token: str) -> Principal:
        jws_header(token, self.algorithms)  # garbage is refused before it can cost a fetch
        keys = await self._key_set()
        try:
            try:
                decoded = jwt.decode(token, keys, algorithms=self.algorithms)
            except InvalidKeyIdError:
                fresh = await self._refreshed()
                if fresh is None:
                    raise
                decoded = jwt.decode(token, fresh, algorithms=self.algorithms)
        except (JoseError, ValueError) as exc:
            raise InvalidToken(f"the token does not verify: {exc}") from None
        return principal_of(decoded.claims, issuer=self.issuer, audience=self.audience, now=self._clock(),
                            leeway=self.leeway)

    async def aclose(self) -> None:
        flight = self._flight
        if flight is not None:
            flight.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flight
            self._flight = None
        await super().aclose()
