"""The identity provider users sign in at: any OpenID Connect provider (found by its discovery document) or a plain
OAuth 2 provider (GitHub's shape: endpoints given, the user read from an API), and presets for the common ones.

The OAuth server is this provider's *client*, registered there once with one redirect URI (its ``/oauth/callback``).
It sends the user there with a ``state``, PKCE S256 and, for OpenID Connect, a ``nonce``; it exchanges the code
on the back channel, and reads who the user is: the ID token's claims (checked against the issuer, the client id
and the nonce: the token came straight from the provider's token endpoint over TLS, which OpenID Connect Core
3.1.3.7 accepts in place of its signature) and, where there is one, the userinfo endpoint's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

import httpx
import orjson

from wiremcp.auth.oauth.sealing import from_b64url
from wiremcp.types import JSONObject

TIMEOUT = 10.0
"""How long one call to the provider may take, all of it."""


class UpstreamError(Exception):
    """The provider refused, failed or answered something unusable; the text is safe to show the user."""


@dataclass(frozen=True, slots=True)
class UpstreamTokens:
    """What the provider's token endpoint gave for the user."""

    access_token: str
    refresh_token: str | None = None
    expires_at: float | None = None
    id_token: str | None = None
    scope: str | None = None

    def to_record(self) -> JSONObject:
        return {"access_token": self.access_token, "refresh_token": self.refresh_token,
                "expires_at": self.expires_at, "id_token": self.id_token, "scope": self.scope}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> UpstreamTokens:
        return cls(str(record["access_token"]), record.get("refresh_token"), record.get("expires_at"),
                   record.get("id_token"), record.get("scope"))


@dataclass(frozen=True, slots=True)
class Upstream:
    """An identity provider and this server's registration there."""

    client_id: str
    client_secret: str
    authorize_url: str
    token_url: str
    userinfo_url: str | None = None
    """OpenID Connect's userinfo, or a plain provider's user API (GitHub: ``https://api.github.com/user``)."""
    issuer: str | None = None
    """OpenID Connect: the provider's issuer (an ID token from another is refused). None: a plain OAuth 2
    provider, whose user is read from ``userinfo_url``."""
    scopes: tuple[str, ...] = ("openid", "email", "profile")
    subject_claim: str = "sub"
    """The claim that names the user for good (GitHub: ``id``; the login can change)."""
    name: str = "your identity provider"
    """How the consent page names the provider."""
    extra_authorize_params: Mapping[str, str] = field(default_factory=dict)

    @property
    def openid(self) -> bool:
        return self.issuer is not None

    @classmethod
    async def discover(cls, discovery_url: str, *, client_id: str, client_secret: str,
                       scopes: tuple[str, ...] = ("openid", "email", "profile"), name: str | None = None,
                       client: httpx.AsyncClient | None = None, **options: Any) -> Upstream:
        """An OpenID Connect provider from its discovery document (``.../.well-known/openid-configuration``)."""
        async with _client(client) as http:
            try:
                response = await http.get(discovery_url)
                response.raise_for_status()
                document = response.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise UpstreamError(f"the discovery document at {discovery_url} could not be read: "
                                    f"{type(exc).__name__}") from None
        missing = [k for k in ("issuer", "authorization_endpoint", "token_endpoint") if not document.get(k)]
        if missing:
            raise UpstreamError(f"the discovery document at {discovery_url} lacks {', '.join(missing)}")
        return cls(client_id=client_id, client_secret=client_secret, authorize_url=document["authorization_endpoint"],
                   token_url=document["token_endpoint"], userinfo_url=document.get("userinfo_endpoint"),
                   issuer=document["issuer"], scopes=scopes, name=name or document["issuer"], **options)

    def sign_in_url(self, *, redirect_uri: str, state: str, code_challenge: str, nonce: str) -> str:
        """Where the user's browser goes to sign in."""
        params = {"response_type": "code", "client_id": self.client_id, "redirect_uri": redirect_uri,
                  "state": state, "scope": " ".join(self.scopes), "code_challenge": code_challenge,
                  "code_challenge_method": "S256", **self.extra_authorize_params}
        if self.openid:
            params["nonce"] = nonce
        separator = "&" if "?" in self.authorize_url else "?"
        return f"{self.authorize_url}{separator}{urlencode(params)}"

    async def exchange(self, code: str, *, redirect_uri: str, code_verifier: str,
                       client: httpx.AsyncClient | None = None) -> UpstreamTokens:
        """The user's tokens for ``code`` (the back channel: the client authenticates with its secret)."""
        return await self._token_request({"grant_type": "authorization_code", "code": code,
                                          "redirect_uri": redirect_uri, "code_verifier": code_verifier}, client)

    async def refresh(self, tokens: UpstreamTokens, client: httpx.AsyncClient | None = None) -> UpstreamTokens:
        """New tokens from the refresh token (which the provider may or may not rotate)."""
        if not tokens.refresh_token:
            raise UpstreamError("the provider gave no refresh token: the user must sign in again")
        fresh = await self._token_request({"grant_type": "refresh_token", "refresh_token": tokens.refresh_token},
                                          client)
        return fresh if fresh.refresh_token else replace(fresh, refresh_token=tokens.refresh_token)

    async def _token_request(self, form: dict[str, str], client: httpx.AsyncClient | None) -> UpstreamTokens:
        async with _client(client) as http:
            try:
                response = await http.post(self.token_url, data=form, auth=(self.client_id, self.client_secret),
                                           headers={"accept": "application/json"})
                body = response.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise UpstreamError(f"the identity provider's token endpoint failed: {type(exc).__name__}") from None
        if response.status_code != 200 or not isinstance(body, dict) or "access_token" not in body:
            error = body.get("error") if isinstance(body, dict) else None
            raise UpstreamError(f"the identity provider refused the code ({error or response.status_code})")
        expires_in = body.get("expires_in")
        return UpstreamTokens(str(body["access_token"]), body.get("refresh_token"),
                              time.time() + float(expires_in) if isinstance(expires_in, (int, float)) else None,
                              body.get("id_token"), body.get("scope"))

    async def identity(self, tokens: UpstreamTokens, *, nonce: str, client: httpx.AsyncClient | None = None,
                       ) -> JSONObject:
        """The user's claims: the ID token's (checked) and the userinfo endpoint's; ``sub`` is always set, to the
        value of ``subject_claim``."""
        claims: JSONObject = {}
        if self.openid:
            if not tokens.id_token:
                raise UpstreamError("the identity provider gave no ID token")
            claims.update(self._id_token_claims(tokens.id_token, nonce))
        if self.userinfo_url:
            async with _client(client) as http:
                try:
                    response = await http.get(self.userinfo_url, headers={
                        "authorization": f"Bearer {tokens.access_token}", "accept": "application/json"})
                    response.raise_for_status()
                    info = response.json()
                except (httpx.HTTPError, ValueError) as exc:
                    raise UpstreamError(f"the identity provider's user endpoint failed: {type(exc).__name__}") from None
            if not isinstance(info, dict):
                raise UpstreamError("the identity provider's user endpoint answered no object")
            if self.openid and "sub" in info and str(info["sub"]) != str(claims.get("sub")):
                raise UpstreamError("the userinfo is another user's than the ID token's")
            claims = {**info, **claims}
        subject = claims.get(self.subject_claim)
        if subject in (None, ""):
            raise UpstreamError(f"the identity provider named no user (no {self.subject_claim!r} claim)")
        claims["sub"] = str(subject)
        return claims

    def _id_token_claims(self, id_token: str, nonce: str) -> JSONObject:
        payload = _payload(id_token)  # unverified signature: see the module's docstring
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if payload.get("iss") != self.issuer:
            raise UpstreamError("the ID token comes from another issuer")
        if self.client_id not in audiences:
            raise UpstreamError("the ID token was issued to another client")
        if payload.get("nonce") != nonce:
            raise UpstreamError("the ID token's nonce is not this sign-in's")
        expires = payload.get("exp")
        if not isinstance(expires, (int, float)) or expires < time.time() - 60:
            raise UpstreamError("the ID token has expired")
        return dict(payload)


def _payload(token: str) -> JSONObject:
    """A JWT's payload, read without checking its signature (the back channel vouches for it)."""
    try:
        parts = token.split(".")
        if len(parts) != 3:
            raise ValueError
        payload = orjson.loads(from_b64url(parts[1]))
    except ValueError:
        raise UpstreamError("the ID token is not a JWT") from None
    if not isinstance(payload, dict):
        raise UpstreamError("the ID token's payload is not an object")
    return payload


class _client:
    """The given HTTP client, or one of its own for the duration of a call."""

    def __init__(self, client: httpx.AsyncClient | None) -> None:
        self._given = client
        self._own: httpx.AsyncClient | None = None

    async def __aenter__(self) -> httpx.AsyncClient:
        if self._given is not None:
            return self._given
        self._own = httpx.AsyncClient(timeout=TIMEOUT)
        return self._own

    async def __aexit__(self, *exc: object) -> None:
        if self._own is not None:
            await self._own.aclose()


class Discovery:
    """An OpenID Connect provider read from its discovery document when it is first needed: a server starts
    without waiting for its provider, and a failed read is tried again at the next sign-in."""

    def __init__(self, url: str, *, client_id: str, client_secret: str,
                 scopes: tuple[str, ...] = ("openid", "email", "profile"), name: str | None = None,
                 **options: Any) -> None:
        self.url = url
        self._options = {"client_id": client_id, "client_secret": client_secret, "scopes": scopes, "name": name,
                         **options}
        self._found: Upstream | None = None

    async def resolve(self, client: httpx.AsyncClient | None = None) -> Upstream:
        if self._found is None:
            self._found = await Upstream.discover(self.url, client=client, **self._options)
        return self._found
