"""Shared pieces of the auth tests: the development authorization server on a real socket, a server
whose handlers record every call, forged tokens, and an adjustable clock.

Nothing here mocks a verifier: tokens are minted and signed by ``examples.dev_auth_server`` (or forged
the way an attacker would), and verifiers fetch its JWKS or call its introspection endpoint over HTTP.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from joserfc import jwk, jwt

from examples.dev_auth_server import DevAuthServer
from tests.support.http import ACCEPT_BOTH, serve_in_process
from wiremcp import Context, MCPServer
from wiremcp.principal import SCOPE_KEY, Principal
from wiremcp.protocol import META_CAPABILITIES, META_CLIENT_INFO, META_VERSION
from wiremcp.transports.asgi import ASGIApp, Receive, Scope, SendASGI, header

STATELESS = "2026-07-28"
LEGACY = "2025-11-25"
SCOPES = ("mcp:tools", "mcp:read", "mcp:write")
ADMIN_SCOPES = ["mcp:write", "admin:delete"]
"""What the ``wipe`` tool and the ``audit`` prompt need (``admin`` covers ``admin:delete``)."""


# -- the clock -------------------------------------------------------------------------------------------
class Clock:
    """Wall-clock time plus an offset the test moves (the dev AS stamps tokens with real time)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


# -- the development authorization server ------------------------------------------------------------------
@contextlib.asynccontextmanager
async def dev_auth_server(**options: Any) -> AsyncIterator[DevAuthServer]:
    """``DevAuthServer`` on a free loopback port, its issuer being its real URL."""
    das = DevAuthServer(issuer="http://placeholder", **options)
    async with serve_in_process(das.app()) as base:
        das.issuer = base
        yield das


def authorization_code(location: str) -> tuple[str, str | None, str | None]:
    """(code, state, iss) from the ``Location`` of an authorization response."""
    query = {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}
    assert "error" not in query, query
    return query["code"], query.get("state"), query.get("iss")


# -- forged tokens ---------------------------------------------------------------------------------------------
def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: Mapping[str, Any], claims: Mapping[str, Any], sign: Callable[[bytes], bytes] | None = None) -> str:
    """A compact JWS made by hand: ``sign`` gets the signing input (none: an empty signature)."""
    signing_input = f"{_b64(json.dumps(dict(header)).encode())}.{_b64(json.dumps(dict(claims)).encode())}"
    signature = sign(signing_input.encode()) if sign is not None else b""
    return f"{signing_input}.{_b64(signature)}"


def claims_for(das: DevAuthServer, audience: str, *, subject: str = "mallory", scope: str = "mcp:tools",
               **overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims: dict[str, Any] = {"iss": das.issuer, "sub": subject, "aud": audience, "scope": scope,
                              "iat": now, "nbf": now, "exp": now + 3600, "client_id": "forger"}
    claims.update(overrides)
    return claims


def alg_none_token(das: DevAuthServer, audience: str) -> str:
    return forge({"alg": "none", "kid": das.key.kid, "typ": "at+jwt"}, claims_for(das, audience))


def hs256_with_public_key_token(das: DevAuthServer, audience: str) -> str:
    """The classic key-confusion attack: HMAC with the RSA public key (PEM) as the shared secret."""
    pem = das.key.as_pem(private=False)
    return forge({"alg": "HS256", "kid": das.key.kid, "typ": "at+jwt"}, claims_for(das, audience),
                 lambda data: hmac.new(pem, data, hashlib.sha256).digest())


def foreign_key_token(das: DevAuthServer, audience: str, *, kid: str = "not-a-published-kid") -> str:
    """Well-formed and RS256-signed with the AS's claims, but by a key the AS never published."""
    impostor = jwk.RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256", "use": "sig"}, private=True)
    token: str = jwt.encode({"alg": "RS256", "kid": kid, "typ": "at+jwt"}, claims_for(das, audience), impostor)
    return token


# -- the MCP server under test ------------------------------------------------------------------------------------
@dataclass
class Recorder:
    """Every handler call, as (handler, principal key, granted scopes)."""

    calls: list[tuple[str, str | None, frozenset[str] | None]] = field(default_factory=list)

    def record(self, name: str, ctx: Context) -> None:
        principal = ctx.principal
        key = getattr(principal, "key", None)
        self.calls.append((name, str(key) if key is not None else None, getattr(principal, "scopes", None)))

    def names(self) -> list[str]:
        return [name for name, _, _ in self.calls]


_FORM = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}


def recording_server(recorder: Recorder, *, filter_lists_by_scope: bool = True) -> MCPServer:
    server = MCPServer("guarded", "1.0.0", filter_lists_by_scope=filter_lists_by_scope)

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Who the server thinks is calling."""
        recorder.record("whoami", ctx)
        return str(getattr(ctx.principal, "key", ctx.principal))

    @server.tool(scopes=list(ADMIN_SCOPES))
    async def wipe(ctx: Context) -> str:
        """Needs mcp:write and admin:delete."""
        recorder.record("wipe", ctx)
        return "wiped"

    @server.tool()
    async def book(city: str, ctx: Context) -> str:
        """Two rounds: ask for dates (MRTR in the stateless era)."""
        recorder.record("book", ctx)
        dates = await ctx.elicit(f"Which dates in {city}?", _FORM)
        return f"{city}: {(dates.content or {}).get('value')}"

    @server.prompt(scopes=list(ADMIN_SCOPES))
    async def audit() -> str:
        """An admin-only prompt."""
        return "audit everything"

    @server.prompt()
    async def hello() -> str:
        """Anyone may use it."""
        return "hello"

    return server


env_server = recording_server(Recorder())
"""What ``WIREMCP_SERVER=tests.support.tokens:env_server`` serves (a uvicorn process configured by environment)."""


class Late:
    """An ASGI app whose inner app is set once the socket's URL is known (the resource URL needs it)."""

    def __init__(self) -> None:
        self.app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        assert self.app is not None, "the app was not built yet"
        await self.app(scope, receive, send)


# -- raw requests ----------------------------------------------------------------------------------------------
def stateless_call(rid: int, name: str, arguments: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A stateless-era ``tools/call`` body."""
    params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {}),
                              "_meta": {META_VERSION: STATELESS, META_CAPABILITIES: {"elicitation": {}},
                                        META_CLIENT_INFO: {"name": "auth-tests", "version": "0"}}, **extra}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def stateless_request(rid: int, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {**(params or {}),
                            "_meta": {META_VERSION: STATELESS, META_CAPABILITIES: {},
                                      META_CLIENT_INFO: {"name": "auth-tests", "version": "0"}}}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": body}


def stateless_headers(body: Mapping[str, Any], token: str | None = None, **extra: str) -> dict[str, str]:
    headers = {"accept": ACCEPT_BOTH, "content-type": "application/json", "mcp-protocol-version": STATELESS,
               "mcp-method": str(body["method"])}
    name = body.get("params", {}).get("name")
    if name is not None:
        headers["mcp-name"] = str(name)
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    headers.update(extra)
    return headers


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def challenge_params(value: str) -> dict[str, str]:
    """The auth-params of a ``Bearer`` challenge (quoted strings, with escapes)."""
    assert value.startswith("Bearer "), value
    params: dict[str, str] = {}
    rest = value[len("Bearer "):]
    i = 0
    while i < len(rest):
        while i < len(rest) and rest[i] in " ,":
            i += 1
        if i >= len(rest):
            break
        eq = rest.index("=", i)
        name = rest[i:eq].strip()
        i = eq + 1
        assert rest[i] == '"', (value, name)
        i += 1
        out = []
        while rest[i] != '"':
            if rest[i] == "\\":
                i += 1
            out.append(rest[i])
            i += 1
        i += 1
        assert name not in params, (value, name)
        params[name] = "".join(out)
    return params


# -- a principal without a token (transport tests) -----------------------------------------------------------
SIGNED_IN_ISSUER = "https://as.example.test"
SUBJECT_HEADER = "x-test-subject"


def signed_in(app: ASGIApp) -> ASGIApp:
    """Stands in for authentication where ``auth.BearerAuth`` goes (``MCPHttpApp(authenticate=...)``): the
    principal the ``x-test-subject`` header names (issuer ``SIGNED_IN_ISSUER``) is left in the scope under
    ``SCOPE_KEY``, as a verified token's would be; without the header the request is anonymous."""

    async def authenticated(scope: Scope, receive: Receive, send: SendASGI) -> None:
        subject = header(scope, SUBJECT_HEADER.encode())
        if subject is not None:
            scope[SCOPE_KEY] = Principal(SIGNED_IN_ISSUER, subject)
        await app(scope, receive, send)

    return authenticated
