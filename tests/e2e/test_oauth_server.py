"""The OAuth server in front of a real identity provider, end to end: the official SDK's OAuth client discovers it
from the resource's 401, registers (Dynamic Client Registration, or by the URL of its Client ID Metadata Document,
which a local HTTPS site serves), sends the user's browser (headless Chromium) to ``/oauth/authorize``; the user
signs in at the provider (django-oauth-toolkit, OpenID Connect or plain OAuth 2), allows the client on the consent
page, and the client calls a tool as that user, whose upstream token the tool can use.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientMetadata,
)
from mcp.types import TextContent
from pydantic import AnyUrl

from tests.support.browser import DevTools
from tests.support.client_site import ClientSite
from tests.support.http import serve_in_process
from tests.support.idp import UpstreamIdP
from tests.support.oauth_flow import MemoryStorage, Provider
from tests.support.tls import make_certificates, serve_https
from wiremcp import Context, MCPServer
from wiremcp.auth.oauth import upstream_token
from wiremcp.auth.oauth.metadata_fetcher import MetadataFetcher
from wiremcp.auth.oauth.server import Identity, OAuthServer
from wiremcp.grant_store import InMemoryGrantStore
from wiremcp.transports import MCPHttpApp
from wiremcp.transports.asgi import ASGIApp, Receive, Scope, SendASGI
from wiremcp.types import JSONObject

pytestmark = pytest.mark.timeout(120)

CLIENT_REDIRECT = "http://127.0.0.1:1/callback"
"""The MCP client's loopback redirect URI: never listened on, the browser's request for it is read."""
FOR = "the OAuth server's sign-in test"


@dataclass
class Served:
    base: str
    oauth: OAuthServer
    idp: UpstreamIdP
    profile: Path
    paths: Counter[str]
    """The paths of the requests the server got, counted."""

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"


def notes_server(oauth_of: list[OAuthServer]) -> MCPServer:
    server = MCPServer("notes")

    @server.tool(scopes=["notes:read"])
    async def whoami(ctx: Context) -> str:
        """Who calls."""
        principal = ctx.principal
        assert principal is not None
        return f"{principal.subject} {principal.claims.get('email')} {sorted(principal.scopes)}"

    @server.tool(scopes=["notes:read"])
    async def upstream_me(ctx: Context) -> str:
        """The provider's own idea of the caller, asked with the caller's upstream token."""
        (oauth,) = oauth_of
        token = await upstream_token(ctx)  # the OAuth server that signed the caller in, found by its issuer
        upstream = await oauth.provider()
        assert upstream.userinfo_url is not None
        async with httpx.AsyncClient() as http:
            answer = await http.get(upstream.userinfo_url, headers={"authorization": f"Bearer {token}"})
        answer.raise_for_status()
        body = answer.json()
        return str(body.get("email"))

    return server


class KindsWritten(InMemoryGrantStore):
    """The server's store, noting the kinds of record written to it."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: Counter[str] = Counter()

    async def put(self, kind: str, key: str, record: JSONObject, ttl: float) -> None:
        self.kinds[kind] += 1
        await super().put(kind, key, record, ttl)


def counting_paths(app: ASGIApp, paths: Counter[str]) -> ASGIApp:
    """``app``, counting the paths of the HTTP requests it gets."""
    async def counted(scope: Scope, receive: Receive, send: SendASGI) -> None:
        if scope["type"] == "http":
            paths[scope["path"]] += 1
        await app(scope, receive, send)
    return counted


@contextlib.asynccontextmanager
async def serving(upstream: Provider, folder: Path, **options: Any) -> AsyncIterator[Served]:
    """The notes server behind an ``OAuthServer`` (``options`` passed on) in front of ``upstream`` (the conftest's
    provider of a mode), on the socket the provider knows the callback of."""
    base = upstream.base
    mode = upstream.idp.mode
    oauth_of: list[OAuthServer] = []
    server = notes_server(oauth_of)
    oauth = OAuthServer(issuer=base, resource=f"{base}/mcp", upstream=upstream.upstream(), scopes=("notes:read",),
                        identity=lambda claims: Identity(f"{mode}:{claims['sub']}", None,
                                                         {"email": claims.get("email")}), **options)
    oauth_of.append(oauth)
    paths: Counter[str] = Counter()
    app = counting_paths(oauth.wrap(MCPHttpApp(server, authenticate=oauth.authenticate())), paths)
    async with serve_in_process(app, upstream.sock.dup()) as served_at:
        assert served_at == base
        yield Served(base, oauth, upstream.idp, folder / "profile", paths)


@pytest.fixture(params=["oidc", "oauth2"])
async def served(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Served]:
    upstream = request.getfixturevalue("oauth_provider" if request.param == "oidc" else "oauth2_provider")
    async with serving(upstream, tmp_path, client_metadata=False) as out:
        yield out


@dataclass
class Person:
    """The user at a browser: signs in at the provider, reads the consent page, allows the client."""

    served: Served
    pages: list[str] = field(default_factory=list)
    landed: str | None = None

    def sign_in(self, url: str) -> str:
        with DevTools(self.served.profile, deadline=time.monotonic() + 60, needed_for=FOR) as browser:
            tab = browser.open_tab()
            tab.go(url)
            self.served.idp.sign_in(tab)
            tab.wait_for_page(text="Allow")
            self.pages.append(tab.text)
            tab.submit("Allow")
            return tab.wait_for_request(CLIENT_REDIRECT)

    async def redirect(self, url: str) -> None:
        self.landed = await asyncio.to_thread(self.sign_in, url)

    async def callback(self) -> AuthorizationCodeResult:
        assert self.landed is not None
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.landed).query).items()}
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


def provider(served: Served, person: Person, storage: MemoryStorage,
             client_metadata_url: str | None = None) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl(CLIENT_REDIRECT)], client_name="Notes CLI",
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method="none")
    return OAuthClientProvider(served.url, metadata, storage, redirect_handler=person.redirect,
                               callback_handler=person.callback, client_metadata_url=client_metadata_url)


def text(result: Any) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def test_the_official_client_signs_a_user_in_at_the_provider_and_calls_tools_as_them(served: Served) -> None:
    person, storage = Person(served), MemoryStorage()
    async with httpx2.AsyncClient(auth=provider(served, person, storage), timeout=httpx2.Timeout(60)) as http, \
            Client(streamable_http_client(served.url, http_client=http), mode="legacy") as client:
        who = text(await client.call_tool("whoami", {}))
        upstream_email = text(await client.call_tool("upstream_me", {}))
    mode = served.idp.mode
    assert who == f"{mode}:{who.split()[0].partition(':')[2]} {served.idp.email} ['notes:read']", who
    assert upstream_email == served.idp.email
    (page,) = person.pages
    for shown in ("Notes CLI", "127.0.0.1:1", "notes:read", served.idp.email, "the test's provider"):
        assert shown in page, (shown, page)
    assert storage.client_info is not None
    assert storage.client_info.client_id.startswith("wmc-")
    assert storage.tokens is not None
    assert storage.tokens.refresh_token


async def test_the_official_client_registers_by_its_metadata_document_url(oauth_provider: Provider,
                                                                        tmp_path: Path) -> None:
    certificates = make_certificates(tmp_path / "tls")
    site = ClientSite()
    store = KindsWritten()
    async with serve_https(site, certificates) as port, \
            MetadataFetcher(allow_private_networks=True, verify=str(certificates.ca)) as fetcher, \
            serving(oauth_provider, tmp_path, client_metadata=fetcher, store=store) as served:
        site.port = port
        url = site.serve("/notes-cli/client.json", client_name="Notes by URL", client_uri=None, logo_uri=None,
                         redirect_uris=[CLIENT_REDIRECT], grant_types=["authorization_code", "refresh_token"])
        person, storage = Person(served), MemoryStorage()
        auth = provider(served, person, storage, client_metadata_url=url)
        async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(60)) as http, \
                Client(streamable_http_client(served.url, http_client=http), mode="legacy") as client:
            who = text(await client.call_tool("whoami", {}))
    assert who.split()[1:] == [served.idp.email, "['notes:read']"], who
    assert who.startswith("oidc:")
    (page,) = person.pages
    for shown in ("Notes by URL", f"described by {url}", "127.0.0.1:1", "notes:read", served.idp.email):
        assert shown in page, (shown, page)
    assert storage.client_info is not None
    assert storage.client_info.client_id == url
    assert served.paths[served.oauth.paths["register"]] == 0  # no dynamic registration
    assert store.kinds["client"] == 0
    assert store.kinds["metadata"] == 1  # fetched once, kept in the store for the token request
    assert site.hits["/notes-cli/client.json"] == 1
