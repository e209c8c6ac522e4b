"""The endpoints a client calls itself: ``/oauth/token`` (a code or a refresh token for tokens), ``/oauth/register``
(Dynamic Client Registration, RFC 7591), ``/oauth/revoke`` (RFC 7009) and ``/oauth/introspect`` (RFC 7662, for this
server's own tokens, to confidential clients).

Each address may make 60 token requests a minute and 20 registrations an hour (429 past it, with
``Retry-After``): the endpoints are open to anyone, and each request costs the store a few writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from wiremcp.auth.jwt_verifier import same_resource
from wiremcp.auth.oauth.clients import Client, ClientError
from wiremcp.auth.oauth.forms import (
    NO_STORE,
    FormError,
    basic_credentials,
    oauth_error,
    pkce_matches,
    read_form,
)
from wiremcp.auth.oauth.tokens import GrantError
from wiremcp.auth.verifier import InvalidToken

if TYPE_CHECKING:
    from wiremcp.auth.oauth.server import OAuthServer

TOKEN_REQUESTS_PER_MINUTE = 60
MAX_REGISTRATION_BYTES = 16 * 1024


async def token(server: OAuthServer, request: Request) -> Response:
    if request.method == "POST":
        limited = await _limited(server, request, "token requests", TOKEN_REQUESTS_PER_MINUTE, 60.0)
        if limited is not None:
            return limited
    sent = await _from_a_client(server, request, "token")
    if isinstance(sent, Response):
        return sent
    form, client = sent
    resource = form.get("resource")
    if resource is not None and not same_resource(resource, server.resource):
        return oauth_error("invalid_target", f"this server issues tokens for {server.resource} only")
    kind = form.get("grant_type")
    try:
        if kind == "authorization_code":
            issued = await server.tokens.redeem(form.get("code", ""), client_id=client.client_id,
                                                redirect_uri=form.get("redirect_uri"),
                                                check_verifier=lambda c: pkce_matches(form.get("code_verifier"), c))
        elif kind == "refresh_token":
            scope = form.get("scope")
            issued = await server.tokens.refresh(form.get("refresh_token", ""), client_id=client.client_id,
                                                 scopes=tuple(scope.split()) if scope is not None else None)
        else:
            return oauth_error("unsupported_grant_type", "grant_type is authorization_code or refresh_token")
    except GrantError as exc:
        return oauth_error(exc.error, exc.description)
    return JSONResponse(issued.to_response(), headers=NO_STORE)


async def register(server: OAuthServer, request: Request) -> Response:
    if request.method != "POST":
        return oauth_error("invalid_request", "the registration endpoint takes POST", 405)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_REGISTRATION_BYTES:
            return oauth_error("invalid_client_metadata", f"the metadata is larger than {MAX_REGISTRATION_BYTES} bytes")
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return oauth_error("invalid_client_metadata", "the body is not JSON")
    if not isinstance(document, dict):
        return oauth_error("invalid_client_metadata", "the body is a JSON object")
    try:
        _, response = await server.registrations.register(document, _source(request))
    except ClientError as exc:
        if exc.error == "too_many_registrations":
            return oauth_error("invalid_request", exc.description, 429, {"retry-after": "3600"})
        return oauth_error(exc.error, exc.description)
    return JSONResponse(response, status_code=201, headers=NO_STORE)


async def revoke(server: OAuthServer, request: Request) -> Response:
    """RFC 7009: the token's family is revoked (a refresh token, or an access token: everything issued from the
    same code); 200 whatever the token was, so that nobody learns which tokens exist."""
    sent = await _from_a_client(server, request, "revocation")
    if isinstance(sent, Response):
        return sent
    form, client = sent
    family = await _family(server, form.get("token", ""))
    if family is not None and family[1] == client.client_id:
        await server.tokens.revoke_family(family[0])
    return Response(status_code=200, headers=NO_STORE)


async def introspect(server: OAuthServer, request: Request) -> Response:
    """RFC 7662, for confidential clients (a public client could ask about anyone's token)."""
    sent = await _from_a_client(server, request, "introspection")
    if isinstance(sent, Response):
        return sent
    form, client = sent
    if client.public:
        return oauth_error("invalid_client", "introspection is for confidential clients", 401)
    try:
        principal = await server.verifier.verify(form.get("token", ""))
    except InvalidToken:
        return JSONResponse({"active": False}, headers=NO_STORE)
    claims = principal.claims
    return JSONResponse({"active": True, "token_type": "Bearer", **{k: claims[k] for k in (
        "iss", "sub", "aud", "exp", "iat", "scope", "client_id") if k in claims}}, headers=NO_STORE)


async def _from_a_client(server: OAuthServer, request: Request,
                         endpoint: str) -> tuple[dict[str, str], Client] | Response:
    """The form a client POSTed to ``endpoint`` and the client it authenticates as, or the refusal to answer."""
    if request.method != "POST":
        return oauth_error("invalid_request", f"the {endpoint} endpoint takes POST", 405)
    try:
        form = await read_form(request)
        return form, await _client(server, request, form)
    except FormError as exc:
        return oauth_error("invalid_request", str(exc))
    except ClientError as exc:
        return _client_refused(request, exc)


async def _client(server: OAuthServer, request: Request, form: dict[str, str]) -> Client:
    """The client the request authenticates as: HTTP Basic, the form's ``client_secret``, or a public client's
    ``client_id`` alone."""
    basic = basic_credentials(request)
    if basic is not None and "client_secret" in form:
        raise ClientError("invalid_request", "one client authentication method at a time")
    client_id, secret = basic if basic is not None else (form.get("client_id"), form.get("client_secret"))
    if not client_id or (basic is not None and form.get("client_id") not in (None, client_id)):
        raise ClientError("invalid_client", "no client_id, or two different ones")
    client = await server.registrations.find(client_id)
    if not client.secret_matches(secret) or (client.public and secret):
        raise ClientError("invalid_client", "the client's credentials are not valid")
    return client


def _client_refused(request: Request, exc: ClientError) -> Response:
    if exc.error == "invalid_client":
        challenge = {"www-authenticate": 'Basic realm="oauth"'} if basic_credentials(request) else None
        return oauth_error("invalid_client", exc.description, 401, challenge)
    return oauth_error(exc.error, exc.description)


async def _family(server: OAuthServer, token: str) -> tuple[str, str] | None:
    """The family of a refresh or access token of this server, with its client; None for anything else."""
    if token.count(".") == 1:  # a refresh token: family.secret
        family = server.tokens.family_of_refresh_token(token)
        record = await server.store.get("family", family)
        if record is None:
            return None
        return family, str(record["grant"]["client_id"])
    try:
        principal = await server.verifier.verify(token)
    except InvalidToken:
        return None
    named = principal.claims.get("fam")
    return (str(named), str(principal.client_id)) if named else None


async def _limited(server: OAuthServer, request: Request, kind: str, limit: int, window: float) -> Response | None:
    if await server.store.count(kind, _source(request), window) > limit:
        return oauth_error("slow_down", f"more than {limit} {kind} from this address; try again shortly", 429,
                           {"retry-after": str(int(window))})
    return None


def _source(request: Request) -> str:
    return request.client.host if request.client else "unknown"
