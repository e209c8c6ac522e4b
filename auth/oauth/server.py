"""``OAuthServer``: the authorization server wiremcp runs in front of an identity provider, so that MCP clients can
sign users in with the company's provider even when it lets no client register (Google, GitHub, Entra ID, ...).

MCP clients find it through the resource's metadata (RFC 9728 ``authorization_servers``) and its own (RFC 8414,
``/.well-known/oauth-authorization-server``), register (a Client ID Metadata Document, or Dynamic Client
Registration), and send the user to ``/oauth/authorize``. The user signs in at the provider, consents once per
client on this server's page, and the client gets this server's tokens, for this resource only; the provider's
tokens stay here, sealed, for tools that call the provider's APIs as the user (``upstream_token``).

Everything it keeps is in a ``GrantStore`` (the runtime's backend's: in memory, or Redis shared by every replica),
so a sign-in may start on one replica and end on another, and survives a restart.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from wiremcp.auth.metadata import ProtectedResource
from wiremcp.auth.middleware import BearerAuth
from wiremcp.auth.oauth import authorization, token_endpoint
from wiremcp.auth.oauth.clients import Client, Registrations
from wiremcp.auth.oauth.keys import SealedElsewhere, SigningKeys
from wiremcp.auth.oauth.metadata_cache import StoreMetadataCache
from wiremcp.auth.oauth.metadata_fetcher import MetadataFetcher
from wiremcp.auth.oauth.pages import error_page
from wiremcp.auth.oauth.sealing import Seal, digest
from wiremcp.auth.oauth.tokens import Tokens
from wiremcp.auth.oauth.upstream import Discovery, Upstream, UpstreamTokens
from wiremcp.auth.oauth.verifier import OAuthVerifier
from wiremcp.auth.verifier import TokenVerifier
from wiremcp.context import Context
from wiremcp.grant_store import GrantStore
from wiremcp.principal import Principal
from wiremcp.types import JSONObject
from wiremcp.unavailable import StoreUnavailable

log = logging.getLogger("wiremcp.oauth")

PREFIX = "/oauth"
METADATA = "/.well-known/oauth-authorization-server"
UPSTREAM_PURPOSE = "upstream tokens"
CORS = {"access-control-allow-origin": "*"}
"""What the endpoints a client calls itself answer a browser-based client (no cookies are involved there)."""
KEPT_CLAIMS = ("email", "email_verified", "name", "preferred_username", "login", "groups")
"""The user's claims an access token carries by default (what tools and audit lines may want)."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a signed-in user is here: the subject of our tokens, the scopes they may be granted (None: every scope
    the server supports) and the claims our tokens carry."""

    subject: str
    scopes: frozenset[str] | None = None
    claims: Mapping[str, Any] = field(default_factory=dict)


IdentityRule = Callable[[JSONObject], "Identity | None"]
"""The operator's rule: the provider's claims in, an ``Identity`` out, or None to refuse the user."""


SERVERS: dict[str, OAuthServer] = {}
"""The OAuth servers of this process by issuer: how ``upstream_token`` finds the one that signed a caller in."""


async def upstream_token(caller: Context | Principal | None) -> str:
    """The identity provider's access token of the user who calls (a tool's ``ctx``, or its principal), refreshed
    first if it has expired, for calling the provider's API as them: from whichever OAuth server of this process
    signed them in. ``LookupError`` when none did, or the user must sign in again."""
    principal = caller.principal if isinstance(caller, Context) else caller
    server = SERVERS.get(principal.issuer) if principal is not None else None
    if server is None:
        raise LookupError("the caller was not signed in by an OAuth server of this process")
    return await server.upstream_token(principal)


def default_identity(claims: JSONObject) -> Identity:
    """Every user the provider signs in, with every scope, carrying the usual claims."""
    return Identity(str(claims["sub"]), None, {k: claims[k] for k in KEPT_CLAIMS if k in claims})


class OAuthServer:
    """The authorization server: its settings, its parts, and its endpoints as one ASGI app (``app``)."""

    def __init__(self, *, issuer: str, resource: str, upstream: Upstream | Discovery, store: GrantStore | None = None,
                 secret: Seal | str | None = None, scopes: Sequence[str] = (),
                 identity: IdentityRule = default_identity, client_metadata: bool | MetadataFetcher = True,
                 dynamic_registration: bool = True, preregistered: Sequence[Client] = (),
                 access_ttl: float = 300.0, refresh_ttl: float = 30 * 86400.0, consent_ttl: float = 180 * 86400.0,
                 http: httpx.AsyncClient | None = None, clock: Callable[[], float] = time.time) -> None:
        self.issuer = checked_url("issuer", issuer).rstrip("/")
        self.resource = checked_url("resource", resource)
        self.upstream = upstream
        self.scopes = tuple(scopes)
        self.identity = identity
        self.consent_ttl = consent_ttl
        self.http = http
        self.seal = Seal.from_string(secret) if isinstance(secret, str) else secret or Seal.generated()
        if secret is None:
            log.warning("no OAuth secret given (WIREMCP_OAUTH_SECRET): this process made its own, so sign-ins, "
                        "tokens and keys do not survive a restart and are not shared with other replicas")
        self._store = store
        self._given_store = store
        self._dynamic = dynamic_registration
        self._preregistered = {c.client_id: c for c in preregistered}
        self._client_metadata = client_metadata
        self._access_ttl, self._refresh_ttl, self._clock = access_ttl, refresh_ttl, clock
        self._parts: tuple[Registrations, Tokens, OAuthVerifier] | None = None
        base = urlsplit(self.issuer).path
        self.paths = {name: f"{base}{PREFIX}/{name}" for name in _ENDPOINTS}
        self.metadata_paths = {METADATA + base, METADATA} if base else {METADATA}
        self._routes: dict[str, Callable[[OAuthServer, Request], Any]] = {
            self.paths[name]: handler for name, handler in _ENDPOINTS.items()}
        self._client_paths = frozenset(self.paths[name] for name in CLIENT_ENDPOINTS)
        """The endpoints clients call themselves (not a person's browser), open to browser-based clients."""
        self._handled = frozenset(self.metadata_paths | set(self._routes))
        """Every path this server answers: what ``wrap`` sends here (decided once, not per request)."""
        SERVERS[self.issuer] = self

    async def provider(self) -> Upstream:
        """The identity provider (read from its discovery document first, if it is given by one)."""
        return self.upstream if isinstance(self.upstream, Upstream) else await self.upstream.resolve(self.http)

    # -- parts, made once the store is known ----------------------------------------------------------------
    def use_store(self, store: GrantStore) -> None:
        """Keep everything in ``store`` (a runtime's ``backend.grants``), unless a store was given already."""
        if self._store is None:
            self._store = store
        elif self._store is not store and self._parts is not None and self._given_store is None:
            raise RuntimeError("the OAuth server has served from its own in-memory store already: give it the "
                               "runtime's store (wrap the app) before it serves a request")

    @property
    def store(self) -> GrantStore:
        if self._store is None:
            from wiremcp.grant_store import InMemoryGrantStore

            self._store = InMemoryGrantStore()
        return self._store

    def _made(self) -> tuple[Registrations, Tokens, OAuthVerifier]:
        if self._parts is None:
            keys = SigningKeys(self.store, self.seal, verify_for=max(86400.0, 2 * self._access_ttl), clock=self._clock)
            tokens = Tokens(self.store, keys, issuer=self.issuer, access_ttl=self._access_ttl,
                            refresh_ttl=self._refresh_ttl, clock=self._clock)
            fetcher = self._client_metadata if isinstance(self._client_metadata, MetadataFetcher) else \
                MetadataFetcher() if self._client_metadata else None
            if fetcher is not None:  # every replica sharing the store shares the documents it fetched
                fetcher.use_cache(StoreMetadataCache(self.store))
            registrations = Registrations(self.store, fetcher, self._dynamic, self._preregistered)
            self._parts = (registrations, tokens, OAuthVerifier(tokens, audience=self.resource, clock=self._clock))
        return self._parts

    @property
    def registrations(self) -> Registrations:
        return self._made()[0]

    @property
    def tokens(self) -> Tokens:
        return self._made()[1]

    @property
    def verifier(self) -> OAuthVerifier:
        """What the resource server verifies this server's tokens with."""
        return self._made()[2]

    def url(self, name: str) -> str:
        origin = urlsplit(self.issuer)
        return f"{origin.scheme}://{origin.netloc}{self.paths[name]}"

    # -- what the resource server needs --------------------------------------------------------------------
    def protected_resource(self, path: str = "/mcp") -> ProtectedResource:
        return ProtectedResource(self.resource, (self.issuer,), self.scopes, path=path)

    def authenticate(self, required_scopes: Sequence[str] = (), path: str = "/mcp",
                     on_failure: Callable[[str], None] | None = None) -> Callable[[ASGIApp], ASGIApp]:
        """The ``authenticate=`` of ``MCPHttpApp``: bearer tokens of this server, for this resource."""
        resource = self.protected_resource(path)
        verifier = _Deferred(self)  # the store is known once the app is wrapped, which comes after this
        return lambda app: BearerAuth(app, verifier=verifier, resource=resource,
                                      required_scopes=required_scopes, on_failure=on_failure)

    def metadata(self) -> JSONObject:
        """RFC 8414 metadata."""
        document: JSONObject = {
            "issuer": self.issuer,
            "authorization_endpoint": self.url("authorize"),
            "token_endpoint": self.url("token"),
            "revocation_endpoint": self.url("revoke"),
            "introspection_endpoint": self.url("introspect"),
            "jwks_uri": self.url("jwks"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": bool(self._client_metadata),
        }
        if self.scopes:
            document["scopes_supported"] = list(self.scopes)
        if self._dynamic:
            document["registration_endpoint"] = self.url("register")
        return document

    # -- the user's upstream tokens, for tools --------------------------------------------------------------
    async def keep_upstream_tokens(self, subject: str, tokens: UpstreamTokens) -> None:
        sealed = self.seal.seal(orjson.dumps(tokens.to_record()), UPSTREAM_PURPOSE)
        await self.store.put("upstream", digest(subject), {"sealed": sealed}, self._refresh_ttl)

    async def upstream_token(self, principal: Principal | None) -> str:
        """The provider's access token of the user ``principal`` names (refreshed first when it has expired),
        for a tool that calls the provider's API as the user. ``LookupError`` when there is none: the caller was
        not signed in by this server, or must sign in again."""
        if principal is None or principal.issuer != self.issuer:
            raise LookupError("the caller was not signed in by this server")
        record = await self.store.get("upstream", digest(principal.subject))
        if record is None:
            raise LookupError("no provider tokens are kept for this user: they must sign in again")
        tokens = UpstreamTokens.from_record(orjson.loads(self.seal.open(str(record["sealed"]), UPSTREAM_PURPOSE)))
        if tokens.expires_at is not None and tokens.expires_at < self._clock() + 30:
            tokens = await (await self.provider()).refresh(tokens, self.http)
            await self.keep_upstream_tokens(principal.subject, tokens)
        return tokens.access_token

    # -- the endpoints --------------------------------------------------------------------------------------
    def wrap(self, app: ASGIApp) -> ASGIApp:
        """``app`` (an ``MCPHttpApp``, or any ASGI app) with this server's endpoints in front of it: its metadata and
        ``/oauth/*`` are answered here, everything else by ``app``. An ``MCPHttpApp``'s backend keeps this
        server's records, unless a store was given."""
        backend = getattr(app, "backend", None)
        if backend is not None and getattr(backend, "grants", None) is not None:
            self.use_store(backend.grants)

        async def routed(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["path"] in self._handled:
                await self.app(scope, receive, send)
            else:
                await app(scope, receive, send)

        return routed

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The endpoints as one ASGI app: the metadata, ``/oauth/*``; 404 for any other path."""
        if scope["type"] != "http":
            return
        path = scope["path"]
        request = Request(scope, receive)
        shared = path in self.metadata_paths or path in self._client_paths
        if shared and request.method == "OPTIONS":  # a browser-based client's preflight
            await Response(status_code=204, headers={**CORS, "access-control-allow-methods": "GET, POST, OPTIONS",
                                                     "access-control-allow-headers": "authorization, content-type",
                                                     "access-control-max-age": "600"})(scope, receive, send)
            return
        try:
            if path in self.metadata_paths:
                response: Response = JSONResponse(self.metadata(), headers={"cache-control": "max-age=300"})
            elif path in self._routes:
                response = await self._routes[path](self, request)
            else:
                response = Response(b"Not Found", 404, media_type="text/plain")
        except (StoreUnavailable, SealedElsewhere) as exc:
            if isinstance(exc, SealedElsewhere):
                log.error("%s", exc)
            response = _unavailable(not shared)
        if shared:
            response.headers.update(CORS)
        await response(scope, receive, send)


class _Deferred(TokenVerifier):
    """The server's verifier, looked up at each token: made once the server knows its store."""

    def __init__(self, server: OAuthServer) -> None:
        self.server = server

    async def verify(self, token: str) -> Principal:
        return await self.server.verifier.verify(token)


def _unavailable(for_a_person: bool) -> Response:
    """503: the store (or the keys in it) cannot be used now; nothing was half done, the request may be sent again."""
    headers = {"retry-after": "1", "cache-control": "no-store"}
    if for_a_person:
        page = error_page("Try again shortly", "This server cannot complete sign-ins right now.", 503)
        page.headers.update(headers)
        return page
    return JSONResponse({"error": "temporarily_unavailable", "error_description": "try again shortly"},
                        status_code=503, headers=headers)


async def _jwks(server: OAuthServer, request: Request) -> Response:
    return JSONResponse(await server.tokens.keys.jwks(), headers={"cache-control": "max-age=60"})


_ENDPOINTS: dict[str, Callable[[OAuthServer, Request], Any]] = {
    "authorize": authorization.authorize, "callback": authorization.callback, "consent": authorization.consent,
    "token": token_endpoint.token, "register": token_endpoint.register, "revoke": token_endpoint.revoke,
    "introspect": token_endpoint.introspect, "jwks": _jwks}
"""Each endpoint under ``/oauth/``, by name: its handler."""
CLIENT_ENDPOINTS = ("token", "register", "revoke", "introspect", "jwks")


def checked_url(name: str, value: str) -> str:
    parts = urlsplit(value)
    loopback = parts.hostname in ("127.0.0.1", "::1", "localhost")
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        raise ValueError(f"the OAuth {name} is an https URL (http only on a loopback address), got {value!r}")
    if parts.fragment or parts.query:
        raise ValueError(f"the OAuth {name} has no query or fragment, got {value!r}")
    return value
