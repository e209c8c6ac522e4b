"""The official conformance suite through the OAuth server's tokens: every run ``test_conformance.py`` makes
against one process (``examples/everything.py``) is made again with the OAuth server on, signing users in at a real
identity provider (django-oauth-toolkit), and nginx (the shipped configuration) adding a signed-in user's access
token to every request, as a host would. The suite sends no token of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from deploy.nginx import SHIPPED, Nginx
from tests.support.conformance import run_suite, scenarios
from tests.support.http import run_uvicorn_on
from tests.support.node import node_bin as find_node
from tests.support.oauth_flow import REDIRECT, VERIFIER, Provider, Remote, UserAgent


@pytest.fixture(scope="module")
def node_bin() -> Path:
    return find_node("the conformance suite")


@pytest.fixture(scope="module")
def behind_the_oauth_server(oauth_provider: Provider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``examples/everything.py`` served with the OAuth server on (signing users in at a real provider), a user
    signed in, and nginx (the shipped configuration) in front adding that user's access token to every request, as
    a host would: the conformance suite, which sends no token of its own, then runs through the OAuth server's
    tokens. Yields the MCP URL behind nginx."""
    idp, sock = oauth_provider.idp, oauth_provider.sock
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = {"WIREMCP_AUTH_RESOURCE": f"{base}/mcp", "WIREMCP_OAUTH_PROVIDER": "oidc",
           "WIREMCP_OAUTH_DISCOVERY_URL": idp.discovery_url, "WIREMCP_OAUTH_CLIENT_ID": idp.client_id,
           "WIREMCP_OAUTH_CLIENT_SECRET": idp.client_secret, "WIREMCP_OAUTH_ACCESS_TOKEN_SECONDS": "3600"}
    with run_uvicorn_on(sock, "examples.everything:server", env):
        token = asyncio.run(signed_in_token(oauth_provider, Remote(base, f"{base}/mcp")))
        config = tmp_path_factory.mktemp("nginx") / "nginx.conf"
        config.write_text(SHIPPED.read_text().replace(
            "            proxy_set_header Host $http_host;\n",
            f'            proxy_set_header Host $http_host;\n            proxy_set_header Authorization "Bearer {token}";\n'))
        with Nginx([("127.0.0.1", sock.getsockname()[1])], config=config) as nginx:
            unauthenticated = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                         headers={"accept": "application/json, text/event-stream"})
            assert unauthenticated.status_code == 401  # the OAuth server's tokens are required
            yield f"{nginx.base_url}/mcp"


async def signed_in_token(provider: Provider, remote: Remote) -> str:
    async with httpx.AsyncClient(timeout=30) as http:
        registered = await http.post(remote.url("register"), json={"redirect_uris": [REDIRECT],
                                                                   "token_endpoint_auth_method": "none"})
        client_id = registered.json()["client_id"]
        agent = UserAgent(provider)
        try:
            code = (await agent.code(remote, client_id))["code"]
        finally:
            await agent.aclose()
        tokens = await http.post(remote.url("token"), data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
            "code_verifier": VERIFIER, "resource": remote.resource})
    return str(tokens.json()["access_token"])


@pytest.mark.parametrize(("version", "spec_version", "count"), [
    ("0.1.16", None, 32), ("0.2.0-alpha.12", "2025-11-25", 33), ("0.2.0-alpha.12", "2026-07-28", 40),
])
def test_conformance_through_the_oauth_servers_tokens(node_bin: Path, behind_the_oauth_server: str, version: str,
                                                      spec_version: str | None, count: int) -> None:
    """Each run ``test_conformance.py`` makes against one process, made again with the OAuth server on."""
    output = run_suite(node_bin, version, behind_the_oauth_server,
                       *(("--spec-version", spec_version) if spec_version else ()))
    passed, failed = scenarios(output)
    assert not failed, output[-4000:]
    assert len(passed) == count, output[-4000:]
