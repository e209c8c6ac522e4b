"""The OAuth server in the tests: a real identity provider (django-oauth-toolkit) started once for a module, and for
each test an ``OAuthServer`` in front of an MCP endpoint, served by a real uvicorn on the port the provider
already knows as the server's callback; and a user agent that goes through a sign-in over HTTP (the provider's
login form, the consent form), for the tests that tamper with what a browser would send. The human path is
driven in Chromium by ``tests/e2e/test_oauth_server.py``.
"""

from __future__ import annotations

import contextlib
import re
import socket
import stat
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from tests.support.browser import DevTools
from tests.support.http import bound_socket, serve_in_process
from tests.support.idp import UpstreamIdP, running_idp
from wiremcp import Context, MCPServer
from wiremcp.auth.oauth.forms import s256
from wiremcp.auth.oauth.server import OAuthServer
from wiremcp.auth.oauth.upstream import Discovery, Upstream
from wiremcp.transports import MCPHttpApp

REDIRECT = "http://127.0.0.1:1/callback"
"""A client's loopback redirect URI: nothing listens there, the user agent reads the redirect to it."""
VERIFIER = "test-verifier-" + "v" * 40


@dataclass
class Provider:
    """A running identity provider, and the port of the OAuth server it redirects back to."""

    idp: UpstreamIdP
    sock: socket.socket

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def upstream(self) -> Upstream | Discovery:
        idp = self.idp
        if idp.mode == "oidc":
            return Discovery(idp.discovery_url, client_id=idp.client_id, client_secret=idp.client_secret,
                             name="the test's provider")
        return Upstream(client_id=idp.client_id, client_secret=idp.client_secret, authorize_url=idp.authorize_url,
                        token_url=idp.token_url, userinfo_url=idp.user_api_url, scopes=idp.scopes,
                        subject_claim="id", name="the test's provider")


ISSUER_PATHS = ("", "/auth")
"""The issuer paths the provider knows a callback for (``/auth``: an issuer below the origin)."""


@contextlib.contextmanager
def provider(folder: Path, mode: Literal["oidc", "oauth2"] = "oidc") -> Iterator[Provider]:
    """A provider and the socket an OAuth server serves on, the provider knowing its callback (under each of
    ``ISSUER_PATHS``). The suite's conftest keeps one of each mode per worker (``oauth_provider``,
    ``oauth2_provider``): a test serves on its socket and stops before the next one does."""
    sock = bound_socket()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        with running_idp(folder, redirect_uri=" ".join(f"{base}{path}/oauth/callback" for path in ISSUER_PATHS),
                         mode=mode) as idp:
            yield Provider(idp, sock)
    finally:
        sock.close()


def whoami_server() -> MCPServer:
    server = MCPServer("notes")

    @server.tool(scopes=["notes:read"])
    async def whoami(ctx: Context) -> str:
        """Who calls."""
        assert ctx.principal is not None
        return ctx.principal.subject

    return server


@contextlib.asynccontextmanager
async def serving(upstream: Provider, server: MCPServer | None = None, **options: Any) -> AsyncIterator[OAuthServer]:
    """An ``OAuthServer`` (``options`` passed on) in front of ``server`` (by default ``whoami_server``), on the
    provider's port."""
    base = upstream.base
    oauth = OAuthServer(issuer=base, resource=f"{base}/mcp", upstream=upstream.upstream(),
                        scopes=options.pop("scopes", ("notes:read",)), client_metadata=options.pop("client_metadata", False),
                        **options)
    app = oauth.wrap(MCPHttpApp(server or whoami_server(), authenticate=oauth.authenticate()))
    async with serve_in_process(app, upstream.sock.dup()):
        yield oauth


class Endpoints(Protocol):
    """Where an OAuth server answers: an ``OAuthServer`` in the test's process, or ``Remote`` for a process."""

    @property
    def resource(self) -> str: ...

    def url(self, name: str) -> str: ...


@dataclass(frozen=True)
class Remote:
    """The endpoints of an OAuth server in another process (``issuer`` + ``/oauth/<name>``)."""

    issuer: str
    resource: str

    def url(self, name: str) -> str:
        return f"{self.issuer}/oauth/{name}"


def authorize_url(oauth: Endpoints, client_id: str, **overrides: str | None) -> str:
    params: dict[str, str | None] = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
                                     "code_challenge": s256(VERIFIER), "code_challenge_method": "S256",
                                     "state": "st-1", "resource": oauth.resource, "scope": "notes:read", **overrides}
    return f"{oauth.url('authorize')}?{urlencode({k: v for k, v in params.items() if v is not None})}"


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


@dataclass
class ConsentPage:
    """The consent page a user agent got, and what its form would send."""

    response: httpx.Response
    action: str
    fields: dict[str, str]


class UserAgent:
    """A browser over HTTP: cookies kept, redirects followed one by one until the client's redirect URI."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.http = httpx.AsyncClient(timeout=30, follow_redirects=False)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def follow(self, url: str, until: str = REDIRECT) -> httpx.Response:
        """GET ``url`` and follow redirects until an answer that is not one, or a redirect to ``until`` (by default
        the client's redirect URI)."""
        response = await self.http.get(url)
        while response.is_redirect:
            location = urljoin(str(response.url), response.headers["location"])
            if location.startswith(until):
                return response
            if location.startswith(self.provider.idp.login_url):
                response = await self._log_in(location)
                continue
            response = await self.http.get(location)
        return response

    async def _log_in(self, login_url: str) -> httpx.Response:
        page = await self.http.get(login_url)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        nexts = re.search(r'name="next" value="([^"]*)"', page.text)
        assert token is not None, page.text
        assert nexts is not None, page.text
        return await self.http.post(str(page.url), data={
            "csrfmiddlewaretoken": token.group(1), "username": self.provider.idp.username,
            "password": self.provider.idp.password, "next": unescape(nexts.group(1))},
            headers={"referer": str(page.url)})

    async def consent_page(self, url: str) -> ConsentPage:
        """Through the sign-in to the consent page."""
        return consent_of(await self.follow(url))

    async def answer(self, page: ConsentPage, decision: str = "allow", **changes: str | None) -> httpx.Response:
        form = {**page.fields, "decision": decision, **changes}
        return await self.http.post(page.action, data={k: v for k, v in form.items() if v is not None})

    async def code(self, oauth: Endpoints, client_id: str, **overrides: str | None) -> dict[str, str]:
        """A whole sign-in, allowed: the parameters the client's redirect URI gets."""
        first = await self.follow(authorize_url(oauth, client_id, **overrides))
        if first.is_redirect:  # consent remembered: straight back to the client
            return query(first.headers["location"])
        answered = await self.answer(consent_of(first))
        assert answered.is_redirect, answered.text
        return query(answered.headers["location"])


def consent_of(page: httpx.Response) -> ConsentPage:
    """The consent form of a page (which must be the consent page)."""
    assert page.status_code == 200, (page.status_code, page.text)
    assert "Allow" in page.text, page.text
    action = re.search(r"<form method=post action='([^']+)'>", page.text)
    assert action is not None, page.text
    fields = {unescape(n): unescape(v) for n, v in re.findall(r"<input type=hidden name=(\w+) value='([^']*)'>",
                                                               page.text)}
    return ConsentPage(page, urljoin(str(page.url), unescape(action.group(1))), fields)


@dataclass
class MemoryStorage:
    """The official SDK's ``TokenStorage`` (its OAuth client keeps its registration and tokens there), in memory."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


# -- a user at a browser, for clients that open one -------------------------------------------------------------
BROWSER_HELPERS = ("xdg-open", "gio", "x-www-browser", "sensible-browser", "www-browser")
"""What the ``open`` package and mcp-remote's own fallbacks may run to open a browser on Linux."""
FAKE_BROWSER = """#!/bin/sh
# A browser that only notes the address it is asked to open (the last argument: `gio open URL` has two).
for url in "$@"; do :; done
printf '%s\\n' "$url" > "{opened}.$$" && mv "{opened}.$$" "{opened}"
"""


def fake_browsers(folder: Path, opened: Path) -> Path:
    """A folder of executables under every name a browser may be opened by, each writing its URL to ``opened``
    (whole: written aside, then renamed)."""
    folder.mkdir(exist_ok=True)
    for name in BROWSER_HELPERS:
        helper = folder / name
        helper.write_text(FAKE_BROWSER.format(opened=opened))
        helper.chmod(helper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


@dataclass
class Person:
    """The user at a headless Chromium: signs in at the provider, allows the client, lands on its callback."""

    upstream: Provider
    profile: Path
    needed_for: str
    bound: float = 90.0
    """Failure bound for the browser's part: the provider's login, the consent page, the client's callback."""
    consent: str = ""

    def sign_in(self, url: str, callback: str) -> int:
        """From the authorization URL to the client's callback server: the status it answered with."""
        with DevTools(self.profile, deadline=time.monotonic() + self.bound, needed_for=self.needed_for) as browser:
            tab = browser.open_tab()
            tab.go(url)
            self.upstream.idp.sign_in(tab)
            tab.wait_for_page(text="Allow")
            self.consent = tab.text
            tab.submit("Allow")
            return tab.wait_for_response(callback)
