"""The upstream identity provider the sign-in tests use (``tests.support.idp``), driven as a user and a client
would: headless Chromium from the provider's authorize URL (PKCE S256, a state) through its login page to the
client's redirect URI (a tiny HTTP server here), then the code exchanged at the token endpoint with httpx. In
OpenID Connect mode the ID token is checked against the discovery document's JWKS and the userinfo endpoint; in
plain OAuth 2 mode (GitHub's shape) the user API answers for the access token."""

from __future__ import annotations

import base64
import hashlib
import http.server
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from joserfc import jwk, jwt

from tests.support.browser import DevTools
from tests.support.idp import UpstreamIdP, running_idp

pytestmark = pytest.mark.timeout(120)

FOR = "the upstream identity provider's sign-in test"
"""What Chromium is needed for, said when it is missing."""
SIGNED_IN = "the client has the authorization response"
"""What the redirect URI's page says."""


@pytest.fixture
def redirect_uri() -> Iterator[str]:
    """The OAuth client's redirect URI: a loopback HTTP server answering any GET with ``SIGNED_IN``."""

    class Callback(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = f"<!doctype html><title>callback</title><p>{SIGNED_IN}</p>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Callback)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/callback"
    finally:
        server.shutdown()
        server.server_close()


def _sign_in(idp: UpstreamIdP, authorize_endpoint: str, profile: Path, **extra: str) -> tuple[dict[str, str], str]:
    """A user signing in through Chromium from the authorize endpoint (PKCE S256, a state, ``extra``
    parameters): the authorization response's parameters at the redirect URI, and the code verifier."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    state = secrets.token_urlsafe(16)
    query = {"response_type": "code", "client_id": idp.client_id, "redirect_uri": idp.redirect_uri,
             "scope": " ".join(idp.scopes), "state": state, "code_challenge": challenge,
             "code_challenge_method": "S256", **extra}
    with DevTools(profile, deadline=time.monotonic() + 60, needed_for=FOR) as browser:
        tab = browser.open_tab()
        tab.go(f"{authorize_endpoint}?{urlencode(query)}")
        tab.wait_for_page(url_prefix=idp.login_url)  # not signed in: the provider's login page first
        tab.fill(username=idp.username, password="not " + idp.password)
        tab.submit()
        tab.wait_for_page(url_prefix=idp.login_url, text="didn't match")
        idp.sign_in(tab)
        landed = tab.wait_for_request(idp.redirect_uri)  # no consent page: straight back to the client
        tab.wait_for_page(url_prefix=idp.redirect_uri, text=SIGNED_IN)
        assert tab.url == landed
    response = {name: values[0] for name, values in parse_qs(urlsplit(landed).query).items()}
    assert response["state"] == state, response
    assert response["code"], response
    return response, verifier


def _exchange(idp: UpstreamIdP, token_endpoint: str, code: str, verifier: str) -> dict[str, Any]:
    """The token response for ``code`` (the client authenticated with its secret, HTTP Basic)."""
    answer = httpx.post(token_endpoint, auth=(idp.client_id, idp.client_secret), timeout=10.0, data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": idp.redirect_uri,
        "code_verifier": verifier})
    assert answer.status_code == 200, answer.text
    tokens: dict[str, Any] = answer.json()
    assert tokens["token_type"] == "Bearer", tokens
    assert tokens["access_token"], tokens
    return tokens


@pytest.mark.parametrize("mode", ["oidc", "oauth2"])
def test_a_user_signs_in_at_the_identity_provider_in_a_browser(tmp_path: Path, redirect_uri: str,
                                                               mode: Literal["oidc", "oauth2"]) -> None:
    with running_idp(tmp_path / "idp", redirect_uri=redirect_uri, mode=mode) as idp:
        if mode == "oidc":
            discovery = httpx.get(idp.discovery_url, timeout=10.0).json()
            assert discovery["issuer"] == idp.issuer
            assert "S256" in discovery["code_challenge_methods_supported"]
            assert {"sub", "email", "groups"} <= set(discovery["claims_supported"]), discovery
            nonce = secrets.token_urlsafe(16)
            response, verifier = _sign_in(idp, discovery["authorization_endpoint"], tmp_path / "profile",
                                          nonce=nonce)
            tokens = _exchange(idp, discovery["token_endpoint"], response["code"], verifier)
            keys = jwk.KeySet.import_key_set(httpx.get(discovery["jwks_uri"], timeout=10.0).json())
            claims = jwt.decode(tokens["id_token"], keys, algorithms=["RS256"]).claims
            jwt.JWTClaimsRegistry(iss={"essential": True, "value": idp.issuer},
                                  aud={"essential": True, "value": idp.client_id},
                                  nonce={"essential": True, "value": nonce}).validate(claims)
            assert claims["sub"], claims
            assert (claims["email"], claims["groups"]) == (idp.email, [idp.group]), claims
            userinfo = httpx.get(discovery["userinfo_endpoint"], timeout=10.0,
                                 headers={"Authorization": f"Bearer {tokens['access_token']}"})
            assert userinfo.status_code == 200, userinfo.text
            assert {k: userinfo.json()[k] for k in ("sub", "email", "groups")} == {
                "sub": claims["sub"], "email": idp.email, "groups": [idp.group]}
        else:
            assert httpx.get(idp.discovery_url, timeout=10.0).status_code == 404  # no OpenID Connect here
            response, verifier = _sign_in(idp, idp.authorize_url, tmp_path / "profile")
            tokens = _exchange(idp, idp.token_url, response["code"], verifier)
            assert "id_token" not in tokens, tokens
            user = httpx.get(idp.user_api_url, timeout=10.0,
                             headers={"Authorization": f"Bearer {tokens['access_token']}"})
            assert user.status_code == 200, user.text
            assert user.json() == {"id": user.json()["id"], "login": idp.username, "email": idp.email}
            assert isinstance(user.json()["id"], int)
            for refused in ({}, {"Authorization": "Bearer not-a-token"}):  # no user without a valid token
                answer = httpx.get(idp.user_api_url, timeout=10.0, headers=refused)
                assert (answer.status_code, answer.json()) == (401, {"message": "Bad credentials"})
