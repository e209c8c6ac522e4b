"""Verify JWT access tokens against the authorization server's JWKS.

Keys are fetched with httpx and cached; a token signed with an unknown ``kid`` triggers one
refresh, at most once per ``refresh_interval`` (so a flood of forged ``kid`` values cannot turn
into a flood of JWKS requests). Only asymmetric algorithms from an allow-list are accepted: never
``none``, never an HMAC algorithm (which would let a public key act as a shared secret).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

import httpx
from joserfc import jwk, jwt
from joserfc.errors import InvalidKeyIdError, JoseError

from auth.principal import Principal
from auth.scopes import parse
from auth.verifier import InvalidToken, TokenVerifier

log = logging.getLogger("mcpwire.auth")

ASYMMETRIC = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
DEFAULT_ALGORITHMS = ("RS256", "ES256", "PS256", "EdDSA")


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


class JWKSVerifier(TokenVerifier):
    def __init__(self, *, jwks_url: str, issuer: str, audience: str, algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
                 leeway: float = 30.0, refresh_interval: float = 60.0, cache_ttl: float = 3600.0,
                 client: httpx.AsyncClient | None = None, clock: Callable[[], float] = time.time) -> None:
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
        self._client = client or httpx.AsyncClient(timeout=10.0)
        self._own_client = client is None
        self._clock = clock
        self._keys: jwk.KeySet | None = None
        self._fetched_at = 0.0
        self._tried_at = float("-inf")  # the last fetch attempt, successful or not
        self._lock = asyncio.Lock()
        self.fetches = 0

    async def _key_set(self, *, refresh: bool = False) -> jwk.KeySet:
        async with self._lock:
            now = self._clock()
            stale = now - self._fetched_at > self.cache_ttl
            # Attempts, failed ones included, are rate-limited: an AS that is down must not turn stale keys
            # or a flood of unknown kids into one JWKS request per token.
            may_refresh = now - self._tried_at >= self.refresh_interval
            if self._keys is None or ((stale or refresh) and may_refresh):
                self._tried_at = now
                try:
                    response = await self._client.get(self.jwks_url)
                    response.raise_for_status()
                    self._keys = jwk.KeySet.import_key_set(response.json())
                    self._fetched_at = now
                    self.fetches += 1
                except (httpx.HTTPError, ValueError, JoseError) as exc:
                    if self._keys is None:
                        raise InvalidToken(f"the JWKS could not be fetched: {exc}") from None
                    log.warning("JWKS refresh failed (%s); keeping the cached keys", exc)
            assert self._keys is not None
            return self._keys

    async def verify(self, token: str) -> Principal:
        keys = await self._key_set()
        try:
            try:
                decoded = jwt.decode(token, keys, algorithms=self.algorithms)
            except InvalidKeyIdError:
                decoded = jwt.decode(token, await self._key_set(refresh=True), algorithms=self.algorithms)
        except (JoseError, ValueError) as exc:
            raise InvalidToken(f"the token does not verify: {exc}") from None
        claims = decoded.claims
        now = self._clock()
        registry = jwt.JWTClaimsRegistry(now=int(now), leeway=int(self.leeway),
                                         iss={"essential": True, "value": self.issuer},
                                         exp={"essential": True}, sub={"essential": True})
        try:
            registry.validate(claims)
        except JoseError as exc:
            raise InvalidToken(f"the token's claims are not acceptable: {exc}") from None
        if not audience_matches(claims.get("aud"), self.audience):
            raise InvalidToken("the token was not issued for this resource (audience)")
        scopes = parse(claims.get("scope")) | parse(claims.get("scp"))
        client_id = claims.get("client_id") or claims.get("azp")
        return Principal(issuer=str(claims["iss"]), subject=str(claims["sub"]),
                         client_id=str(client_id) if client_id else None, scopes=scopes,
                         expires_at=float(claims["exp"]), claims=dict(claims))

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()
