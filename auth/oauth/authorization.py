"""The endpoints a person's browser goes through: ``/oauth/authorize`` (a client asks to sign a user in), the
provider's sign-in, ``/oauth/callback`` (the provider sends the user back) and ``/oauth/consent`` (the user allows
or denies the client).

What is checked, in order (OAuth 2.1 4.1, the MCP authorization spec):

- the client and its redirect URI first: an unknown client or a redirect URI it did not register is an error
  *page*, never a redirect (no open redirector);
- then everything else, each refusal sent back to the client's redirect URI with ``error``, ``state`` and ``iss``
  (RFC 9207): ``response_type=code``, a PKCE S256 challenge, a ``resource`` that is this server's MCP endpoint
  (RFC 8707), scopes this server supports;
- the browser that started a sign-in is the one that finishes it: a cookie (``HttpOnly``, ``SameSite=Lax``,
  ``Secure`` over https) binds the sign-in to it, and the consent form carries a token derived from that cookie
  (CSRF), so that neither a link nor another site's form can complete someone else's sign-in;
- a client is allowed once per user, on the consent page (the confused-deputy rule for a server that signs users
  in at a provider under one client id of its own), and remembered for ``consent_ttl``.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from wiremcp.auth.jwt_verifier import same_resource
from wiremcp.auth.oauth.clients import Client, ClientError
from wiremcp.auth.oauth.forms import CHALLENGE, NO_STORE, FormError, read_form, redirect_back, s256
from wiremcp.auth.oauth.pages import consent_page, error_page
from wiremcp.auth.oauth.sealing import digest
from wiremcp.auth.oauth.tokens import Grant
from wiremcp.auth.oauth.upstream import UpstreamError
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.auth.oauth.server import OAuthServer

log = logging.getLogger("wiremcp.oauth")

COOKIE = "wiremcp_oauth"
SIGN_IN_TTL = 600.0
"""How long a person has to sign in at the provider, and then to answer the consent page."""


class _Refused(Exception):
    """An authorization request refused back to the client's redirect URI."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


async def authorize(server: OAuthServer, request: Request) -> Response:
    if request.method != "GET":
        return error_page("Method not allowed", "The authorization endpoint is opened with GET.", 405)
    query = request.query_params
    duplicated = sorted({k for k in query if len(query.getlist(k)) > 1})
    if duplicated:
        return error_page("Invalid request", f"{duplicated[0]} is given twice.")
    client_id, redirect_uri = query.get("client_id"), query.get("redirect_uri")
    if not client_id:
        return error_page("Invalid request", "The request names no client (client_id).")
    try:
        client = await server.registrations.find(client_id)
    except ClientError as exc:
        return error_page("Invalid client", exc.description)
    if not redirect_uri:
        return error_page("Invalid request", "The request has no redirect_uri.")
    if not client.redirect_allowed(redirect_uri):
        return error_page("Invalid redirect", "The redirect_uri is not one the client registered.")
    state = query.get("state")
    try:
        login = _login(server, client, redirect_uri, query)
    except _Refused as refusal:
        return _refuse(server, redirect_uri, state, refusal.error, refusal.description)
    await server.registrations.renew(client)
    browser = request.cookies.get(COOKIE) or secrets.token_urlsafe(32)
    upstream_verifier, nonce = secrets.token_urlsafe(48), secrets.token_urlsafe(16)
    sign_in = secrets.token_urlsafe(24)
    await server.store.put("login", sign_in, {**login, "state": state, "browser": digest(browser),
                                              "upstream_verifier": upstream_verifier, "nonce": nonce}, SIGN_IN_TTL)
    try:
        upstream = await server.provider()
    except UpstreamError as exc:
        log.warning("a sign-in could not start: %s", exc)  # the operator's to fix, not the user's
        return error_page("Sign-in unavailable", str(exc), 502)
    location = upstream.sign_in_url(redirect_uri=server.url("callback"), state=sign_in,
                                           code_challenge=s256(upstream_verifier), nonce=nonce)
    response = RedirectResponse(location, status_code=302, headers=NO_STORE)
    _set_cookie(server, response, browser)
    return response


def _login(server: OAuthServer, client: Client, redirect_uri: str, query: QueryParams) -> JSONObject:
    if query.get("response_type") != "code":
        raise _Refused("unsupported_response_type", "response_type is code")
    challenge, method = query.get("code_challenge"), query.get("code_challenge_method")
    if not challenge or method != "S256":
        raise _Refused("invalid_request", "PKCE is required: code_challenge with code_challenge_method=S256")
    if not CHALLENGE.fullmatch(challenge):
        raise _Refused("invalid_request", "code_challenge is not an S256 challenge (43 base64url characters)")
    resource = query.get("resource") or server.resource
    if not same_resource(resource, server.resource):
        raise _Refused("invalid_target", f"this server issues tokens for {server.resource} only")
    asked = tuple(dict.fromkeys(query.get("scope", "").split()))
    unknown = [s for s in asked if server.scopes and s not in server.scopes]
    if unknown:
        raise _Refused("invalid_scope", f"unknown scopes: {' '.join(unknown)}")
    return {"client_id": client.client_id, "redirect_uri": redirect_uri, "code_challenge": challenge,
            "scopes": list(asked), "resource": server.resource}


async def callback(server: OAuthServer, request: Request) -> Response:
    query = request.query_params
    sign_in = query.get("state", "")
    login = await server.store.take("login", sign_in) if sign_in else None
    if login is None:
        return error_page("Sign-in expired", "This sign-in has expired or was already completed. Start again "
                                             "from your application.")
    if not _same_browser(request, login):
        return error_page("Sign-in refused", "This sign-in was started in another browser.", 403)
    redirect_uri, state = str(login["redirect_uri"]), login.get("state")
    try:  # again: a metadata document is fetched anew once its cache lifetime is over, and may have changed
        client = await server.registrations.find(str(login["client_id"]))
    except ClientError as exc:
        return error_page("Invalid client", exc.description)
    if not client.redirect_allowed(redirect_uri):
        return error_page("Invalid redirect", "The redirect_uri is no longer one the client registered.")
    if query.get("error") or not query.get("code"):
        return _refuse(server, redirect_uri, state, "access_denied", "the identity provider did not sign you in")
    try:
        upstream = await server.provider()
        tokens = await upstream.exchange(query["code"], redirect_uri=server.url("callback"),
                                         code_verifier=str(login["upstream_verifier"]), client=server.http)
        claims = await upstream.identity(tokens, nonce=str(login["nonce"]), client=server.http)
    except UpstreamError as exc:
        log.warning("a sign-in failed at the identity provider: %s", exc)
        return error_page("Sign-in failed", str(exc), 502)
    identity = server.identity(claims)
    if identity is None:
        return _refuse(server, redirect_uri, state, "access_denied", "this user may not use this server")
    asked = tuple(login["scopes"]) or server.scopes
    granted = asked if identity.scopes is None else tuple(s for s in asked if s in identity.scopes)
    if asked and not granted:
        return _refuse(server, redirect_uri, state, "access_denied", "this user may not have the scopes asked for")
    await server.keep_upstream_tokens(identity.subject, tokens)
    grant = Grant(str(login["client_id"]), identity.subject, granted, str(login["resource"]), dict(identity.claims))
    approval = {**login, "grant": grant.to_record(), "user": _user(claims)}
    remembered = await server.store.get("consent", _consent_key(grant))
    if remembered is not None and set(grant.scopes) <= set(remembered.get("scopes", [])) \
            and remembered.get("redirect_uri") == redirect_uri:
        return await _approved(server, approval)
    key = secrets.token_urlsafe(24)
    await server.store.put("approval", key, approval, SIGN_IN_TTL)
    return consent_page(action=server.paths["consent"], approval=key,
                        csrf=server.seal.mac("consent", key, request.cookies.get(COOKIE, "")),
                        client_name=client.client_name, client_id=client.client_id, client_uri=client.client_uri,
                        registered_by=client.registered_by, redirect_uri=redirect_uri, scopes=grant.scopes,
                        user=str(approval["user"]), provider=upstream.name)


async def consent(server: OAuthServer, request: Request) -> Response:
    if request.method != "POST":
        return error_page("Method not allowed", "The consent form is sent with POST.", 405)
    try:
        form = await read_form(request)
    except FormError as exc:
        return error_page("Invalid request", str(exc))
    key, csrf = form.get("approval", ""), form.get("csrf", "")
    approval = await server.store.get("approval", key) if key else None
    if approval is None:
        return error_page("Sign-in expired", "This consent has expired or was already answered. Start again from "
                                             "your application.")
    cookie = request.cookies.get(COOKIE, "")
    if not _same_browser(request, approval) or not server.seal.verify_mac(csrf, "consent", key, cookie):
        return error_page("Consent refused", "The consent was not confirmed from the page this server showed.", 403)
    if await server.store.take("approval", key) is None:
        return error_page("Sign-in expired", "This consent was already answered.")
    if form.get("decision") != "allow":
        return _refuse(server, str(approval["redirect_uri"]), approval.get("state"), "access_denied",
                       "the user denied access")
    grant = Grant.from_record(approval["grant"])
    await server.store.put("consent", _consent_key(grant), {"scopes": list(grant.scopes),
                                                            "redirect_uri": approval["redirect_uri"]},
                           server.consent_ttl)
    return await _approved(server, approval)


async def _approved(server: OAuthServer, approval: JSONObject) -> Response:
    grant = Grant.from_record(approval["grant"])
    redirect_uri = str(approval["redirect_uri"])
    code = await server.tokens.code(grant, redirect_uri=redirect_uri, code_challenge=str(approval["code_challenge"]))
    params = {"code": code, "iss": server.issuer}
    if approval.get("state") is not None:
        params["state"] = str(approval["state"])
    return redirect_back(redirect_uri, params)


def _refuse(server: OAuthServer, redirect_uri: str, state: object, error: str, description: str) -> Response:
    params = {"error": error, "error_description": description, "iss": server.issuer}
    if state is not None:
        params["state"] = str(state)
    return redirect_back(redirect_uri, params)


def _same_browser(request: Request, record: JSONObject) -> bool:
    cookie = request.cookies.get(COOKIE)
    return cookie is not None and secrets.compare_digest(digest(cookie), str(record.get("browser", "")))


def _set_cookie(server: OAuthServer, response: Response, value: str) -> None:
    response.set_cookie(COOKIE, value, max_age=int(SIGN_IN_TTL), path=server.paths["authorize"].rsplit("/", 1)[0],
                        secure=server.issuer.startswith("https://"), httponly=True, samesite="lax")


def _consent_key(grant: Grant) -> str:
    return digest(f"{grant.subject}\n{grant.client_id}")


def _user(claims: JSONObject) -> str:
    for name in ("email", "preferred_username", "login", "name", "sub"):
        if claims.get(name):
            return str(claims[name])
    return "an unnamed user"
