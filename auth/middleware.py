"""Bearer-token authentication in front of the MCP routes (OAuth 2.1 resource server).

Every request to the MCP endpoint (and the legacy SSE endpoints) must carry
``Authorization: Bearer <token>``; the protected resource metadata is served without one.
A missing or bad token gets 401 with a ``WWW-Authenticate`` challenge naming the metadata
URL and the scopes needed; a valid token that lacks them gets 403 ``insufficient_scope``.
A token that is not an RFC 6750 ``b64token`` is refused before any verifier sees it. When the
verifier cannot reach the authorization server (its JWKS, its introspection endpoint), the answer
is 503 with ``Retry-After`` and a JSON-RPC -32603 error, not 401: the token is not at fault, and a
401 would send the client back into its OAuth flow for a server-side outage.
The verified ``Principal`` travels in the ASGI scope (``wiremcp.principal``); tokens are
never logged and never passed on.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from urllib.parse import parse_qsl

import orjson
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from wiremcp.auth.metadata import ProtectedResource
from wiremcp.auth.verifier import B64TOKEN, InvalidToken, TokenVerifier, VerifierUnavailable
from wiremcp.errors import INVALID_REQUEST
from wiremcp.principal import CHALLENGE_KEY, SCOPE_KEY
from wiremcp.refusals import VERIFIER_UNAVAILABLE
from wiremcp.scopes import missing

log = logging.getLogger("wiremcp.auth")


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


async def _error(scope: Scope, receive: Receive, send: Send, status: int, code: int, message: str,
                 headers: dict[str, str]) -> None:
    """An HTTP error whose body is a JSON-RPC error without an id, so that MCP clients can tell what went wrong."""
    body = orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})
    await Response(body, status, headers=headers, media_type="application/json")(scope, receive, send)


class Challenge:
    """Builds ``WWW-Authenticate`` values for this resource."""

    def __init__(self, resource: ProtectedResource) -> None:
        self.resource = resource

    def __call__(self, *, error: str | None = None, scopes: Iterable[str] = (), description: str | None = None) -> str:
        parts = []
        if error:
            parts.append(f'error="{error}"')
        scope_list = [s for s in scopes if s != "offline_access"]
        if scope_list:
            parts.append(f'scope="{_quote(" ".join(scope_list))}"')
        parts.append(f'resource_metadata="{self.resource.metadata_url}"')
        if description:
            parts.append(f'error_description="{_quote(description)}"')
        return "Bearer " + ", ".join(parts)


class BearerAuth:
    """ASGI middleware: authenticate every request but the metadata document.

    ``on_failure``, if given, is called with the reason of every refusal: ``missing_token``,
    ``token_in_url``, ``malformed``, ``invalid_token``, ``insufficient_scope`` or ``unavailable``
    (the verifier could not reach the authorization server: 503) (metrics count them)."""

    def __init__(self, app: ASGIApp, *, verifier: TokenVerifier, resource: ProtectedResource,
                 required_scopes: Sequence[str] = (), on_failure: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.verifier = verifier
        self.resource = resource
        self.required_scopes = list(required_scopes)
        self.challenge = Challenge(resource)
        self.on_failure = on_failure
        self.failures = 0

    def _challenge(self, scope: Scope) -> Challenge:
        """The challenge for ``scope``'s request: its metadata URL is the request's own when the resource is
        the URL it was served at."""
        return self.challenge if self.resource.resource else Challenge(self.resource.served_at(scope))

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, status: int, message: str, *, reason: str,
                      error: str | None = None, scopes: Iterable[str] = ()) -> None:
        self.failures += 1
        if self.on_failure is not None:
            self.on_failure(reason)
        value = self._challenge(scope)(error=error, scopes=scopes)
        await _error(scope, receive, send, status, INVALID_REQUEST, message, {"www-authenticate": value})

    async def _unavailable(self, scope: Scope, receive: Receive, send: Send, exc: VerifierUnavailable) -> None:
        """503: the token could not be checked; ``Retry-After`` is when the verifier tries again (>= 1 s)."""
        self.failures += 1
        if self.on_failure is not None:
            self.on_failure("unavailable")
        retry_after = max(1, math.ceil(exc.retry_after))
        log.info("cannot verify bearer tokens right now: %s (Retry-After: %d)", exc, retry_after)
        refusal = VERIFIER_UNAVAILABLE
        await _error(scope, receive, send, refusal.status, refusal.code, refusal.message,
                     {name.decode(): value.decode() for name, value in refusal.headers(retry_after)})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        root = scope.get("root_path", "")
        if self.resource.matches(path) or (root and path.startswith(root) and self.resource.matches(path[len(root):])):
            await self.resource.serve(scope, receive, send)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        if any(key == "access_token" for key, _ in parse_qsl(query, keep_blank_values=True)):
            # 401 goes with invalid_token (RFC 6750 §3.1 pairs invalid_request with 400): a token was sent,
            # and one sent in the URL is never acceptable.
            await self._refuse(scope, receive, send, 401, "Unauthorized: send the token in the Authorization header, never the URL",
                               reason="token_in_url", error="invalid_token", scopes=self.required_scopes)
            return
        authorizations = [value for key, value in scope["headers"] if key == b"authorization"]
        if not authorizations:
            await self._refuse(scope, receive, send, 401, "Unauthorized: a bearer token is required", reason="missing_token",
                               scopes=self.required_scopes)
            return
        kind, _, token = authorizations[0].decode("latin-1").strip().partition(" ")
        token = token.strip()
        # Two Authorization headers are as malformed as two tokens in one: never pick one of them. Anything
        # but a b64token (RFC 6750 §2.1) is refused here, before it can cost a verifier any work.
        if kind.lower() != "bearer" or not B64TOKEN.fullmatch(token) or len(authorizations) > 1:
            await self._refuse(scope, receive, send, 401, "Unauthorized: the Authorization header must be 'Bearer <token>'",
                               reason="malformed", error="invalid_token", scopes=self.required_scopes)
            return
        try:
            principal = await self.verifier.verify(token)
        except InvalidToken as exc:
            log.info("refused a bearer token: %s", exc)  # the reason, never the token
            await self._refuse(scope, receive, send, 401, "Unauthorized: the token is not valid", reason="invalid_token",
                               error="invalid_token", scopes=self.required_scopes)
            return
        except VerifierUnavailable as exc:
            await self._unavailable(scope, receive, send, exc)
            return
        lacking = missing(principal.scopes, self.required_scopes)
        if lacking:
            await self._refuse(scope, receive, send, 403, "Forbidden: the token lacks the scopes this server needs",
                               reason="insufficient_scope", error="insufficient_scope", scopes=self.required_scopes)
            return
        scope[SCOPE_KEY] = principal
        scope[CHALLENGE_KEY] = self._challenge(scope)
        await self.app(scope, receive, send)
