"""What the OAuth server issues: authorization codes, access tokens and refresh tokens, all from one ``Grant``.

- A **code** is good once, for 60 seconds, for the client, redirect URI and PKCE challenge it was issued with. It
  is kept by its digest and taken from the store atomically: of two redemptions, one gets it. Redeemed, it leaves
  a mark; a second redemption finds the mark and revokes every token the first one got (OAuth 2.1, 4.1.3).
- An **access token** is a JWT (RFC 9068, ``at+jwt``, ES256) for one resource: the MCP endpoint named by the
  ``resource`` parameter (RFC 8707) is its audience. It lives ``access_ttl`` seconds (5 minutes by default).
- A **refresh token** belongs to a *family*: every token refreshed from one code's tokens. Each refresh rotates
  it: the family keeps only the digest of its newest token, and one presented twice (a stolen copy, or the
  original after the thief used it) revokes the whole family, access tokens included (OAuth 2.1, 4.3.1).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from joserfc import jwt

from wiremcp.auth.oauth.keys import SigningKeys
from wiremcp.auth.oauth.sealing import digest
from wiremcp.grant_store import GrantStore
from wiremcp.types import JSONObject

CODE_TTL = 60.0
"""How long a code is good for."""
LIVE_CACHE_SECONDS = 2.0
"""How long a replica takes a family it found live for live: another replica's revocation is seen within this."""


class GrantError(Exception):
    """An OAuth error of the token endpoint: ``error`` is the RFC 6749 code, the message its description."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


@dataclass(frozen=True, slots=True)
class Grant:
    """What a user allowed a client: who, to whom, which scopes, for which resource."""

    client_id: str
    subject: str
    scopes: tuple[str, ...]
    resource: str
    claims: JSONObject = field(default_factory=dict)
    """The user's claims carried into access tokens (email, name, groups), as the operator's rule kept them."""

    def to_record(self) -> JSONObject:
        record = asdict(self)
        record["scopes"] = list(self.scopes)
        return record

    @classmethod
    def from_record(cls, record: JSONObject) -> Grant:
        return cls(str(record["client_id"]), str(record["subject"]), tuple(record["scopes"]),
                   str(record["resource"]), dict(record.get("claims") or {}))


@dataclass(frozen=True, slots=True)
class Issued:
    """A token response: what ``/oauth/token`` answers."""

    access_token: str
    expires_in: int
    refresh_token: str
    scope: str

    def to_response(self) -> JSONObject:
        return {"access_token": self.access_token, "token_type": "Bearer", "expires_in": self.expires_in,
                "refresh_token": self.refresh_token, "scope": self.scope}


class Tokens:
    """Issues, redeems, rotates and revokes, keeping everything in the shared store."""

    def __init__(self, store: GrantStore, keys: SigningKeys, *, issuer: str, access_ttl: float = 300.0,
                 refresh_ttl: float = 30 * 86400.0, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.keys = keys
        self.issuer = issuer
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl
        """A family unused this long ends (each refresh starts the time again)."""
        self._clock = clock
        self._live: dict[str, float] = {}
        """Families found live, and when: trusted for ``LIVE_CACHE_SECONDS`` (a revocation made here drops its
        family at once; one made by another replica is seen within that time)."""

    # -- codes --------------------------------------------------------------------------------------------
    async def code(self, grant: Grant, *, redirect_uri: str, code_challenge: str) -> str:
        code = secrets.token_urlsafe(32)
        await self.store.put("code", digest(code), {"grant": grant.to_record(), "redirect_uri": redirect_uri,
                                                    "code_challenge": code_challenge,
                                                    "family": secrets.token_urlsafe(16)}, CODE_TTL)
        return code

    async def redeem(self, code: str, *, client_id: str, redirect_uri: str | None,
                     check_verifier: Callable[[str], bool]) -> Issued:
        """The tokens for ``code``, once. ``check_verifier(code_challenge)`` checks the PKCE verifier."""
        record = await self.store.take("code", digest(code))
        if record is None:
            spent = await self.store.get("spent", digest(code))
            if spent is not None:
                await self.revoke_family(str(spent["family"]))
                raise GrantError("invalid_grant", "the code was already used: the tokens issued for it are revoked")
            raise GrantError("invalid_grant", "the code is unknown or has expired")
        grant = Grant.from_record(record["grant"])
        family = str(record["family"])
        await self.store.put("spent", digest(code), {"family": family}, self.refresh_ttl)
        if grant.client_id != client_id:
            raise GrantError("invalid_grant", "the code was issued to another client")
        if redirect_uri != record["redirect_uri"]:
            raise GrantError("invalid_grant", "redirect_uri is not the one the code was issued for")
        if not check_verifier(str(record["code_challenge"])):
            raise GrantError("invalid_grant", "code_verifier does not match the code_challenge")
        refresh = self._refresh_token(family)
        await self.store.put("family", family, {"grant": grant.to_record(), "current": digest(refresh),
                                                "revoked": False}, self.refresh_ttl)
        return await self._issued(grant, family, refresh)

    # -- refresh tokens -----------------------------------------------------------------------------------
    async def refresh(self, token: str, *, client_id: str, scopes: tuple[str, ...] | None = None) -> Issued:
        """New tokens for a refresh token, which is rotated; a narrower ``scopes`` may be asked for."""
        family, _, _ = token.partition(".")
        record = await self.store.get("family", family) if family else None
        if record is None:
            raise GrantError("invalid_grant", "the refresh token is unknown or has expired")
        if record.get("revoked"):
            raise GrantError("invalid_grant", "the refresh token has been revoked")
        if not secrets.compare_digest(str(record["current"]), digest(token)):
            await self.revoke_family(family)
            raise GrantError("invalid_grant", "the refresh token was already used: its tokens are revoked")
        grant = Grant.from_record(record["grant"])
        if grant.client_id != client_id:
            raise GrantError("invalid_grant", "the refresh token was issued to another client")
        if scopes is not None:
            wider = sorted(set(scopes) - set(grant.scopes))
            if wider:
                raise GrantError("invalid_scope", f"scopes not granted before: {' '.join(wider)}")
            grant = Grant(grant.client_id, grant.subject, scopes, grant.resource, grant.claims)
        fresh = self._refresh_token(family)
        rotated = {**record, "current": digest(fresh)}
        if not await self.store.replace("family", family, record, rotated, self.refresh_ttl):
            await self.revoke_family(family)  # another refresh of the same token won the race: a reuse
            raise GrantError("invalid_grant", "the refresh token was already used: its tokens are revoked")
        return await self._issued(grant, family, fresh)

    async def revoke_family(self, family: str) -> None:
        """Every token of a family, refresh and access, refused from now on."""
        self._live.pop(family, None)
        record = await self.store.get("family", family) or {}
        await self.store.put("family", family, {**record, "revoked": True}, self.refresh_ttl)

    async def family_revoked(self, family: str) -> bool:
        record = await self.store.get("family", family)
        return record is None or bool(record.get("revoked"))

    async def family_live(self, family: str) -> bool:
        """Whether the access tokens of ``family`` still count: read from the store at most every
        ``LIVE_CACHE_SECONDS`` per family (a request's check costs no store read in between)."""
        now = self._clock()
        checked = self._live.get(family)
        if checked is not None and now - checked < LIVE_CACHE_SECONDS:
            return True
        if await self.family_revoked(family):
            self._live.pop(family, None)
            return False
        if len(self._live) > 10_000:
            self._live = {f: t for f, t in self._live.items() if now - t < LIVE_CACHE_SECONDS}
        self._live[family] = now
        return True

    def family_of_refresh_token(self, token: str) -> str:
        return token.partition(".")[0]

    # -- access tokens ------------------------------------------------------------------------------------
    async def _issued(self, grant: Grant, family: str, refresh: str) -> Issued:
        now = int(self._clock())
        key = await self.keys.signing()
        claims: dict[str, Any] = {**{k: v for k, v in grant.claims.items() if k not in _REGISTERED},
                                  "iss": self.issuer, "sub": grant.subject, "aud": grant.resource,
                                  "client_id": grant.client_id, "scope": " ".join(grant.scopes), "iat": now,
                                  "exp": now + int(self.access_ttl), "jti": secrets.token_urlsafe(16), "fam": family}
        token = jwt.encode({"alg": "ES256", "typ": "at+jwt", "kid": key.kid}, claims, key.key)
        return Issued(token, int(self.access_ttl), refresh, " ".join(grant.scopes))

    def _refresh_token(self, family: str) -> str:
        return f"{family}.{secrets.token_urlsafe(32)}"


_REGISTERED = frozenset({"iss", "sub", "aud", "exp", "iat", "nbf", "jti", "client_id", "scope", "fam", "azp"})
"""Claims the server sets itself: a user's claim of the same name never replaces them."""
