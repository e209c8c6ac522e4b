"""A real upstream identity provider for the sign-in tests: django-oauth-toolkit (DOT) in a tiny Django project
(this folder), served by uvicorn on 127.0.0.1 on a free port in its own process, with SQLite in the test's folder.

Two shapes of provider:

- ``mode="oidc"``: an OpenID Connect provider. Issuer ``http://127.0.0.1:PORT/o``, discovery at
  ``/o/.well-known/openid-configuration``, ID tokens signed RS256 with a key made for the run (JWKS at
  ``/o/.well-known/jwks.json``), userinfo at ``/o/userinfo/``; the claims are ``sub``, ``email``,
  ``preferred_username``, ``name`` and ``groups``.
- ``mode="oauth2"``: a plain OAuth 2 provider, as GitHub is: no discovery, no ID token; the authorize and token
  endpoints are known by configuration, and ``/api/user`` answers ``{"id", "login", "email"}`` for a bearer
  access token (as GitHub's ``GET /user``).

Either way one user (in group ``engineers``) and one confidential client (authorization code grant, PKCE allowed,
the test's redirect URI, no consent page: the OAuth server shows its own); the login page is ``/accounts/login/``.

    with running_idp(tmp_path / "idp", redirect_uri=callback_url, mode="oidc") as idp:
        ...  # the OAuth server configured with idp.discovery_url, idp.client_id, idp.client_secret
        with DevTools(tmp_path / "profile", deadline=time.monotonic() + 60, needed_for="...") as browser:
            tab = browser.open_tab()
            tab.go(oauth_authorize_url)
            idp.sign_in(tab)  # the provider's login page, filled in and submitted
            tab.wait_for_page(text="Allow")  # the OAuth server's consent page ...

The database is migrated at each start (under a second here).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

if TYPE_CHECKING:
    from tests.support.browser import Tab

ROOT = Path(__file__).resolve().parents[3]

START_BOUND = 60.0
"""Failure bound for the provider to migrate its database and answer (generous: two cores, shared)."""
STOP_BOUND = 10.0
LOGIN_PATH = "/accounts/login/"
POLL = 0.05
"""How often the start is checked for, within ``START_BOUND``."""


@dataclass(frozen=True)
class UpstreamIdP:
    """A running identity provider: where its endpoints are, and the client and user the test named."""

    origin: str
    """``http://127.0.0.1:PORT``."""
    mode: Literal["oidc", "oauth2"]
    client_id: str
    client_secret: str
    redirect_uri: str
    username: str
    password: str
    email: str
    group: str
    log: Path
    """The process's log (Django's and uvicorn's): every request, every error."""
    service_client_id: str = ""
    service_client_secret: str = ""
    """A confidential client of the client credentials grant (tokens of its own, no user)."""

    @property
    def issuer(self) -> str:
        """The OpenID Connect issuer (the ``iss`` of its ID tokens)."""
        return f"{self.origin}/o"

    @property
    def discovery_url(self) -> str:
        """The OpenID Connect discovery document (OIDC mode only: 404 in OAuth 2 mode)."""
        return f"{self.issuer}/.well-known/openid-configuration"

    @property
    def authorize_url(self) -> str:
        return f"{self.origin}/o/authorize/"

    @property
    def token_url(self) -> str:
        return f"{self.origin}/o/token/"

    @property
    def userinfo_url(self) -> str:
        """The OpenID Connect userinfo endpoint (OIDC mode only)."""
        return f"{self.origin}/o/userinfo/"

    @property
    def jwks_url(self) -> str:
        """The ID tokens' signing keys (OIDC mode only)."""
        return f"{self.origin}/o/.well-known/jwks.json"

    @property
    def user_api_url(self) -> str:
        """GitHub's ``GET /user`` in shape: ``{"id", "login", "email"}`` for a bearer access token."""
        return f"{self.origin}/api/user"

    @property
    def login_url(self) -> str:
        return f"{self.origin}{LOGIN_PATH}"

    def sign_in(self, tab: Tab) -> None:
        """The user signing in on ``tab``, once it shows this provider's login page (waited for): their name and
        password entered and submitted. Where the browser goes next (the authorize endpoint, then the redirect
        URI) is for the caller to wait for, e.g. with ``tab.wait_for_request(redirect_uri)``.

        The browser's waits block: in an async test whose servers run in the test's event loop, run the whole
        browser part in a thread (``await asyncio.to_thread(...)``) so that they can answer meanwhile."""
        tab.wait_for_page(url_prefix=self.login_url)
        tab.fill(username=self.username, password=self.password)
        tab.submit("Sign in")

    @property
    def scopes(self) -> tuple[str, ...]:
        """The scopes it knows: OpenID Connect's three, or GitHub's two a sign-in asks for."""
        return ("openid", "email", "profile") if self.mode == "oidc" else ("read:user", "user:email")


def _private_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.TransportError:
        return False


@contextlib.contextmanager
def running_idp(folder: Path, *, redirect_uri: str, mode: Literal["oidc", "oauth2"] = "oidc",
                client_id: str = "wiremcp-facade", client_secret: str | None = None, username: str = "ada",
                password: str | None = None, email: str = "ada@example.com",
                group: str = "engineers") -> Iterator[UpstreamIdP]:
    """The identity provider in ``mode``, started in ``folder`` (its database, configuration and log) with one
    user and one confidential client registered for ``redirect_uri`` (several: separated by spaces); stopped
    when the block ends. Secrets not given are made up. Started again in the same folder it keeps its database
    (tokens issued before included), the user and the client set as given now. Fails (with the log) if it does
    not answer within ``START_BOUND``."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "mode": mode, "folder": str(folder), "secret_key": secrets.token_urlsafe(32),
        "rsa_private_key": _private_key_pem() if mode == "oidc" else "",
        "client_id": client_id, "client_secret": client_secret or secrets.token_urlsafe(24),
        "redirect_uri": redirect_uri, "username": username, "password": password or secrets.token_urlsafe(12),
        "email": email, "group": group,
        "service_client_id": "wiremcp-service", "service_client_secret": secrets.token_urlsafe(24),
    }
    config_file = folder / "idp.json"
    config_file.write_text(json.dumps(config))
    port_file, log_path = folder / "port", folder / "idp.log"
    port_file.unlink(missing_ok=True)
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "tests.support.idp.serve", str(config_file)], cwd=ROOT,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = started + START_BOUND
        while not (port_file.exists() and _answers(f"http://127.0.0.1:{port_file.read_text()}{LOGIN_PATH}")):
            if process.poll() is not None or time.monotonic() > deadline:
                state = f"exited with {process.returncode}" if process.poll() is not None else "no answer"
                raise AssertionError(f"the identity provider did not start ({state} within {START_BOUND}s); "
                                     f"its log:\n{log_path.read_text()}")
            time.sleep(POLL)
        idp = UpstreamIdP(origin=f"http://127.0.0.1:{port_file.read_text()}", mode=mode, client_id=client_id,
                          client_secret=str(config["client_secret"]), redirect_uri=redirect_uri, username=username,
                          password=str(config["password"]), email=email, group=group, log=log_path,
                          service_client_id=str(config["service_client_id"]),
                          service_client_secret=str(config["service_client_secret"]))
        print(f"identity provider ({mode}) at {idp.origin}, answering {time.monotonic() - started:.2f}s after its "
              f"start", file=sys.stderr)
        try:
            yield idp
        except BaseException:  # the test failed (or was skipped) meanwhile: what the provider saw, beside it
            print(f"identity provider log ({log_path}):\n{log_path.read_text()}", file=sys.stderr)
            raise
    finally:
        process.terminate()
        try:
            process.wait(timeout=STOP_BOUND)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_BOUND)

