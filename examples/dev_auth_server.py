"""A DEVELOPMENT authorization server, so the whole OAuth flow runs locally and in tests.

**Not a production identity provider**: it approves every authorization request as the user
``dev-user`` without asking anyone, keeps everything in memory, and makes a new signing key at
every start. It implements what an MCP client and server need to see: RFC 8414 metadata,
dynamic client registration (RFC 7591), the authorization code grant with PKCE S256 only,
client credentials, refresh tokens, the ``resource`` parameter (RFC 8707, which becomes the
token's audience), ``iss`` in authorization responses (RFC 9207), a JWKS, token introspection
(RFC 7662) and revocation (RFC 7009).

    python -m examples.dev_auth_server --port 9000

Its form endpoints (``/token``, ``/introspect``, ``/revoke``) read ``application/x-www-form-urlencoded``,
the one encoding OAuth uses, with ``urllib.parse``: the base install serves them (Starlette's
form parser would need ``python-multipart``).
"""

from __future__ import annotations

import argparse
import base64
import hmac
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwk, jwt
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

TOKEN_TTL = 3600
CODE_TTL = 300
FORM = "application/x-www-form-urlencoded"


class BadForm(Exception):
    """A request body that is not an OAuth form: answered ``invalid_request``."""


async def read_form(request: Request) -> dict[str, str]:
    """The parameters of an ``application/x-www-form-urlencoded`` body (UTF-8, RFC 6749 appendix B);
    a parameter may appear once (RFC 6749 section 3.2)."""
    if request.headers.get("content-type", "").partition(";")[0].strip().lower() != FORM:
        raise BadForm(f"the body must be {FORM}")
    try:
        pairs = parse_qsl((await request.body()).decode("ascii"), keep_blank_values=True,
                          encoding="utf-8", errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadForm("the body is not a valid form") from exc
    form = dict(pairs)
    if len(form) != len(pairs):
        raise BadForm("a parameter appears more than once")
    return form


def invalid_request(error: BadForm) -> Response:
    return JSONResponse({"error": "invalid_request", "error_description": str(error)}, 400)


@dataclass
class Client:
    client_id: str
    client_secret: str | None
    redirect_uris: list[str]
    grant_types: list[str]
    auth_method: str
    name: str = ""


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    scope: str
    resource: str | None
    expires_at: float


@dataclass
class DevAuthServer:
    issuer: str
    scopes: tuple[str, ...] = ("mcp:tools", "mcp:read", "mcp:write")
    user: str = "dev-user"
    key: jwk.RSAKey = field(default_factory=lambda: jwk.RSAKey.generate_key(
        2048, parameters={"kid": secrets.token_hex(8), "alg": "RS256", "use": "sig"}, private=True))
    clients: dict[str, Client] = field(default_factory=dict)
    codes: dict[str, Grant] = field(default_factory=dict)
    refresh_tokens: dict[str, tuple[str, str, str, str | None]] = field(default_factory=dict)
    revoked: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(default_factory=lambda: {"jwks": 0, "introspect": 0, "token": 0})

    # -- helpers ------------------------------------------------------------------------------------
    def register_client(self, *, redirect_uris: list[str] | None = None, secret: bool = True,
                        grant_types: list[str] | None = None, name: str = "") -> Client:
        client = Client(client_id="dev-" + secrets.token_urlsafe(12),
                        client_secret=secrets.token_urlsafe(24) if secret else None,
                        redirect_uris=redirect_uris or [],
                        grant_types=grant_types or ["authorization_code", "refresh_token"],
                        auth_method="client_secret_basic" if secret else "none", name=name)
        self.clients[client.client_id] = client
        return client

    def issue(self, *, subject: str, client_id: str, scope: str, audience: str | None,
              ttl: int = TOKEN_TTL, not_before: int | None = None) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {"iss": self.issuer, "sub": subject, "client_id": client_id, "scope": scope,
                                  "iat": now, "nbf": not_before if not_before is not None else now,
                                  "exp": now + ttl, "jti": secrets.token_hex(12)}
        if audience:
            claims["aud"] = audience
        return jwt.encode({"alg": "RS256", "kid": self.key.kid, "typ": "at+jwt"}, claims, self.key)

    def _authenticate(self, request: Request, form: dict[str, str]) -> Client | None:
        header = request.headers.get("authorization", "")
        client_id, secret = form.get("client_id"), form.get("client_secret")
        if header.lower().startswith("basic "):
            try:
                client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return None
        client = self.clients.get(client_id or "")
        if client is None:
            return None
        if client.client_secret is None:
            return client
        return client if secret and hmac.compare_digest(secret, client.client_secret) else None

    def _scope(self, requested: str | None) -> str:
        wanted = (requested or " ".join(self.scopes)).split()
        return " ".join(s for s in wanted if s in self.scopes)

    def _claims(self, token: str) -> dict[str, Any] | None:
        try:
            decoded = jwt.decode(token, self.key, algorithms=["RS256"])
        except Exception:
            return None
        claims = dict(decoded.claims)
        if claims.get("jti") in self.revoked or claims.get("exp", 0) < time.time():
            return None
        return claims

    # -- endpoints ----------------------------------------------------------------------------------
    async def metadata(self, request: Request) -> Response:
        return JSONResponse({
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "jwks_uri": f"{self.issuer}/jwks",
            "introspection_endpoint": f"{self.issuer}/introspect",
            "revocation_endpoint": f"{self.issuer}/revoke",
            "scopes_supported": list(self.scopes),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "client_credentials", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "authorization_response_iss_parameter_supported": True,
        })

    async def jwks(self, request: Request) -> Response:
        self.counts["jwks"] += 1
        return JSONResponse({"keys": [self.key.as_dict(private=False)]})

    async def register(self, request: Request) -> Response:
        body = await request.json()
        uris = body.get("redirect_uris") or []
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            return JSONResponse({"error": "invalid_redirect_uri"}, 400)
        method = body.get("token_endpoint_auth_method", "client_secret_basic")
        client = self.register_client(redirect_uris=uris, secret=method != "none",
                                      grant_types=body.get("grant_types"), name=str(body.get("client_name", "")))
        out: dict[str, Any] = {**body, "client_id": client.client_id, "client_id_issued_at": int(time.time()),
                               "token_endpoint_auth_method": client.auth_method, "grant_types": client.grant_types}
        if client.client_secret:
            out["client_secret"] = client.client_secret
            out["client_secret_expires_at"] = 0
        return JSONResponse(out, 201)

    async def authorize(self, request: Request) -> Response:
        q = request.query_params
        client = self.clients.get(q.get("client_id", ""))
        redirect_uri = q.get("redirect_uri", "")
        if client is None or redirect_uri not in client.redirect_uris:
            return JSONResponse({"error": "invalid_request", "error_description": "unknown client or redirect_uri"}, 400)
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            params = {"error": "invalid_request", "error_description": "PKCE with S256 is required",
                      "iss": self.issuer}
            if q.get("state"):
                params["state"] = q["state"]
            return RedirectResponse(f"{redirect_uri}?{urlencode(params)}", 302)
        code = secrets.token_urlsafe(24)
        self.codes[code] = Grant(client.client_id, redirect_uri, q["code_challenge"], self._scope(q.get("scope")),
                                 q.get("resource"), time.time() + CODE_TTL)
        params = {"code": code, "iss": self.issuer}
        if q.get("state"):
            params["state"] = q["state"]
        return RedirectResponse(f"{redirect_uri}?{urlencode(params)}", 302)

    async def token(self, request: Request) -> Response:
        self.counts["token"] += 1
        try:
            form = await read_form(request)
        except BadForm as error:
            return invalid_request(error)
        client = self._authenticate(request, form)
        if client is None:
            return JSONResponse({"error": "invalid_client"}, 401)
        kind = form.get("grant_type")
        if kind == "authorization_code":
            grant = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            if (grant is None or grant.client_id != client.client_id or grant.expires_at < time.time()
                    or grant.redirect_uri != form.get("redirect_uri")
                    or not hmac.compare_digest(create_s256_code_challenge(verifier), grant.challenge)):
                return JSONResponse({"error": "invalid_grant"}, 400)
            resource = form.get("resource") or grant.resource
            return self._tokens(self.user, client.client_id, grant.scope, resource, refresh=True)
        if kind == "client_credentials":
            return self._tokens(client.client_id, client.client_id, self._scope(form.get("scope")),
                                form.get("resource"), refresh=False)
        if kind == "refresh_token":
            held = self.refresh_tokens.get(form.get("refresh_token", ""))
            if held is None or held[1] != client.client_id:
                return JSONResponse({"error": "invalid_grant"}, 400)
            subject, client_id, scope, resource = held
            return self._tokens(subject, client_id, scope, form.get("resource") or resource, refresh=True)
        return JSONResponse({"error": "unsupported_grant_type"}, 400)

    def _tokens(self, subject: str, client_id: str, scope: str, resource: str | None, *, refresh: bool) -> Response:
        body: dict[str, Any] = {"access_token": self.issue(subject=subject, client_id=client_id, scope=scope,
                                                           audience=resource),
                                "token_type": "Bearer", "expires_in": TOKEN_TTL, "scope": scope}
        if refresh:
            refresh_token = secrets.token_urlsafe(32)
            self.refresh_tokens[refresh_token] = (subject, client_id, scope, resource)
            body["refresh_token"] = refresh_token
        return JSONResponse(body, headers={"cache-control": "no-store"})

    async def introspect(self, request: Request) -> Response:
        self.counts["introspect"] += 1
        try:
            form = await read_form(request)
        except BadForm as error:
            return invalid_request(error)
        if self._authenticate(request, form) is None:
            return JSONResponse({"error": "invalid_client"}, 401)
        claims = self._claims(form.get("token", ""))
        if claims is None:
            return JSONResponse({"active": False})
        return JSONResponse({"active": True, "token_type": "Bearer", **claims})

    async def revoke(self, request: Request) -> Response:
        try:
            form = await read_form(request)
        except BadForm as error:
            return invalid_request(error)
        if self._authenticate(request, form) is None:
            return JSONResponse({"error": "invalid_client"}, 401)
        token = form.get("token", "")
        self.refresh_tokens.pop(token, None)
        claims = self._claims(token)
        if claims is not None:
            self.revoked.add(str(claims.get("jti")))
        return Response(status_code=200)

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/.well-known/oauth-authorization-server", self.metadata),
            Route("/jwks", self.jwks),
            Route("/register", self.register, methods=["POST"]),
            Route("/authorize", self.authorize),
            Route("/token", self.token, methods=["POST"]),
            Route("/introspect", self.introspect, methods=["POST"]),
            Route("/revoke", self.revoke, methods=["POST"]),
        ])


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="A development OAuth authorization server (NOT for production).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args()
    server = DevAuthServer(issuer=f"http://{args.host}:{args.port}")
    uvicorn.run(server.app(), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
