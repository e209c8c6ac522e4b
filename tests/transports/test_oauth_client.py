"""``wiremcp bridge`` signing a user in at a remote server's authorization server (``wiremcp.transports
.oauth_client``), with real parts: the OAuth server in front of a real identity provider (django-oauth-toolkit,
OpenID Connect) and an MCP endpoint needing a scope, on a real socket; the bridge launched by the official Python
client as a host launches it; the user at headless Chromium.

The bridge finds the authorization server from the server's 401, registers itself, opens the browser (``$BROWSER``:
a script that notes the address, which Chromium then follows to the provider's login, the consent page and the
bridge's loopback callback), trades the code for tokens and keeps them in a file only the user can read. The
official client's call then runs as the user; started again, the bridge uses what it kept, without the browser."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

from examples.word_count import server as word_count
from tests.support.cluster import until
from tests.support.http import ROOT, serve_in_process
from tests.support.oauth_flow import Person, Provider, fake_browsers, provider, query, serving, whoami_server
from tests.support.parts import chromium
from wiremcp import MCPServer
from wiremcp.auth import BearerAuth, IntrospectionVerifier, ProtectedResource
from wiremcp.auth.oauth.server import OAuthServer
from wiremcp.transports import Client as Gateway
from wiremcp.transports import MCPHttpApp, remote
from wiremcp.transports.gateway import readiness_details
from wiremcp.transports.oauth_client import ClientCredentials

pytestmark = pytest.mark.timeout(240)

FOR = "the bridge's sign-in test"
OPENED_BOUND = 60.0
"""Failure bound for the bridge to open the browser (it discovers the authorization server and registers)."""
ANSWER_BOUND = 120.0
"""The official client's read bound: its first answer waits for the user to sign in."""


async def whoami_over_the_bridge(oauth: OAuthServer, env: dict[str, str]) -> str:
    params = StdioServerParameters(command=sys.executable, args=["-m", "wiremcp", "bridge", oauth.resource],
                                   env=env, cwd=ROOT)
    async with Client(stdio_client(params), read_timeout_seconds=ANSWER_BOUND) as client:
        result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def user_signs_in(opened: Path, upstream: Provider, profile: Path) -> Person:
    """Once the bridge opened the browser: the user signs in through it, to the bridge's callback."""
    await until(opened.exists, OPENED_BOUND, "the bridge opening a browser")
    address = (await asyncio.to_thread(opened.read_text)).strip()
    person = Person(upstream, profile, FOR)
    status = await asyncio.to_thread(person.sign_in, address, query(address)["redirect_uri"])
    assert status == 200
    return person


async def test_the_bridge_signs_the_user_in_keeps_the_tokens_and_calls_as_them(tmp_path: Path) -> None:
    chromium(FOR)
    opened, cache = tmp_path / "opened-url", tmp_path / "cache"
    browsers = fake_browsers(tmp_path / "browsers", opened)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("WIREMCP_")},
           "BROWSER": str(browsers / "xdg-open"), "XDG_CACHE_HOME": str(cache), "WIREMCP_LOG_LEVEL": "WARNING"}
    with provider(tmp_path / "idp") as upstream:
        async with serving(upstream, whoami_server()) as oauth:
            user = asyncio.create_task(user_signs_in(opened, upstream, tmp_path / "profile"))
            subject = await whoami_over_the_bridge(oauth, env)
            person = await user
            for shown in ("wiremcp bridge", "notes:read", upstream.idp.email):
                assert shown in person.consent, (shown, person.consent)

            (kept,) = (cache / "wiremcp" / "bridge").glob("*.json")
            assert stat.S_IMODE(kept.stat().st_mode) == 0o600
            assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700

            opened.unlink()
            assert await whoami_over_the_bridge(oauth, env) == subject  # the kept token: no browser
            assert not opened.exists()


async def test_a_gateway_signs_itself_in_to_its_upstream_with_client_credentials(oauth_provider: Provider) -> None:
    """``remote(url, auth=ClientCredentials(...))``: the upstream (a wiremcp server whose tokens are checked by the
    provider's introspection endpoint) wants a token; the gateway gets its own from the provider's token endpoint
    (the client credentials grant, a service client of django-oauth-toolkit), and its calls are served. A wrong
    secret leaves the upstream down, reported as such, never a caller's token sent instead."""
    idp = oauth_provider.idp
    verifier = IntrospectionVerifier(endpoint=f"{idp.origin}/o/introspect/", client_id=idp.client_id,
                                     client_secret=idp.client_secret, service_tokens=True)

    def authenticate(app: Any) -> BearerAuth:
        return BearerAuth(app, verifier=verifier, resource=ProtectedResource("", (f"{idp.origin}/o",)))

    upstream = MCPHttpApp(word_count, authenticate=authenticate)
    async with upstream.server.runtime.lifespans.held(), serve_in_process(upstream) as base:
        url = f"{base}/mcp"
        good = ClientCredentials(f"{idp.origin}/o/token/", idp.service_client_id, idp.service_client_secret)
        child = remote(url, auth=good, name="words")
        served = MCPServer("gateway")
        served.mount(child, prefix="wc")
        async with Gateway(served) as client:
            answer = await client.call_tool("wc_word_count", {"text": "signed in as a service"})
            assert answer["structuredContent"] == {"words": 5, "chars": 22}

        wrong = ClientCredentials(f"{idp.origin}/o/token/", idp.service_client_id, "not-the-secret")
        refused = MCPServer("gateway")
        refused.mount(remote(url, auth=wrong, name="words"), prefix="wc")
        async with Gateway(refused):
            details = readiness_details(refused)
            assert details is not None
            assert details["upstreams"]() == {"words": {"status": "down", "reason": "Failed", "connections": 0}}
