"""The authorization server's endpoints (JWKS, introspection) on a real loopback socket, in a state the
test sets: serving, failing with a status, or stalled (holding every request until released); and a
URL that refuses connections. Plus the MCP app guarded by ``BearerAuth`` with a given verifier, for
requests made the way a client makes them.

Every request the endpoints see is counted per path, so tests assert how many fetches a burst caused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from joserfc import jwk, jwt
from starlette.responses import JSONResponse

from examples.dev_auth_server import DevAuthServer
from tests.support.http import ASGIAnswer, asgi_request, free_port, serve_in_process
from tests.support.tokens import Recorder, recording_server, stateless_call, stateless_headers
from wiremcp.auth.metadata import ProtectedResource
from wiremcp.auth.middleware import BearerAuth
from wiremcp.auth.verifier import TokenVerifier
from wiremcp.transports.asgi import Receive, Scope, SendASGI
from wiremcp.transports.http_app import MCPHttpApp

RESOURCE = "http://127.0.0.1/mcp"
"""The guarded app's resource (``asgi_request`` sends ``Host: 127.0.0.1``)."""
ENDPOINTS = ("/jwks", "/introspect")


class Upstream:
    """The dev AS's app, its JWKS and introspection endpoints in the state ``mode`` says: ``"ok"``, an HTTP
    status to fail with, or ``"stall"`` (each request waits for ``release``, then is served)."""

    def __init__(self, das: DevAuthServer) -> None:
        self.das = das
        self.app = das.app()
        self.mode: Literal["ok", "stall"] | int = "ok"
        self.hits: Counter[str] = Counter()
        self.arrived = asyncio.Event()
        """Set when a request reaches an endpoint (in any mode)."""
        self.release = asyncio.Event()
        self.base = ""

    def url(self, path: str) -> str:
        return self.base + path

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if scope["type"] == "http" and scope["path"] in ENDPOINTS:
            self.hits[scope["path"]] += 1
            self.arrived.set()
            if self.mode == "stall":
                # The body is read first: by the time the request is let go, its client may be gone.
                receive = await _buffered(receive)
                await self.release.wait()
            elif self.mode != "ok":
                await JSONResponse({"error": "unavailable"}, self.mode)(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _buffered(receive: Receive) -> Receive:
    """The request's body, read now and replayed to the app; later calls go to ``receive``."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    replayed = False

    async def replay() -> dict[str, Any]:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        return dict(await receive())

    return replay


@contextlib.asynccontextmanager
async def upstream() -> AsyncIterator[Upstream]:
    """A dev AS on a free loopback port, its issuer being its real URL; stalled requests are let go on
    the way out, so the server stops at once."""
    das = DevAuthServer(issuer="http://placeholder")
    up = Upstream(das)
    async with serve_in_process(up) as base:
        das.issuer = up.base = base
        try:
            yield up
        finally:
            up.release.set()


def refusing_url(path: str) -> str:
    """A loopback URL nothing listens on: connections are refused."""
    return f"http://127.0.0.1:{free_port()}{path}"


def mint(key: jwk.RSAKey, *, issuer: str, now: float, subject: str = "alice", ttl: int = 600) -> str:
    """An access token for ``RESOURCE`` signed with ``key``, stamped with the test's clock."""
    claims = {"iss": issuer, "sub": subject, "aud": RESOURCE, "scope": "mcp:tools", "client_id": "app",
              "iat": int(now), "nbf": int(now), "exp": int(now) + ttl}
    token: str = jwt.encode({"alg": "RS256", "kid": key.kid, "typ": "at+jwt"}, claims, key)
    return token


def rotate(das: DevAuthServer, kid: str = "rotated") -> jwk.RSAKey:
    das.key = jwk.RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256", "use": "sig"}, private=True)
    return das.key


@dataclass
class Guarded:
    """The MCP app behind ``BearerAuth``: every refusal's reason, every handler call."""

    app: MCPHttpApp
    reasons: list[str] = field(default_factory=list)
    recorder: Recorder = field(default_factory=Recorder)

    async def call(self, token: str, rid: int = 1) -> ASGIAnswer:
        """A stateless-era ``tools/call whoami`` carrying ``token``, straight into the app (no socket)."""
        body = stateless_call(rid, "whoami")
        return await asgi_request(self.app, "POST", json.dumps(body).encode(), stateless_headers(body, token))


@contextlib.asynccontextmanager
async def guarded(verifier: TokenVerifier) -> AsyncIterator[Guarded]:
    recorder = Recorder()
    reasons: list[str] = []
    resource = ProtectedResource(RESOURCE, ("http://127.0.0.1:9",), ("mcp:tools",))
    mcp = MCPHttpApp(recording_server(recorder), authenticate=lambda app: BearerAuth(
        app, verifier=verifier, resource=resource, required_scopes=("mcp:tools",), on_failure=reasons.append))
    try:
        yield Guarded(mcp, reasons, recorder)
    finally:
        await mcp.endpoint.stateless.close()
        await mcp.manager.close()
        await verifier.aclose()


def rpc_error(answer: ASGIAnswer) -> tuple[int, str]:
    """(JSON-RPC error code, ``Retry-After``) of a refused request."""
    assert answer.headers["content-type"] == "application/json", answer.headers
    body = answer.json()
    assert body["jsonrpc"] == "2.0"
    return body["error"]["code"], answer.headers.get("retry-after", "")
