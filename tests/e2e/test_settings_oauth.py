"""The ``WIREMCP_OAUTH_*`` settings reach a real ``uvicorn app:asgi`` process and do what the Authorization page
says: a user signs in at a real identity provider (django-oauth-toolkit, OpenID Connect or plain OAuth 2) through
the process's OAuth server, and each setting's effect is observed from outside, over HTTP.

The process serves on the socket the provider (one per worker, the conftest's) already knows the callback URL
of (``run_uvicorn_on``). The user agent is HTTP (``tests/support/oauth_flow.py``); the browser path is
``test_oauth_server.py``'s.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator

import httpx
import pytest

from tests.support.http import run_uvicorn_on
from tests.support.idp import UpstreamIdP
from tests.support.oauth_flow import REDIRECT, VERIFIER, Remote, UserAgent, authorize_url, query
from tests.support.oauth_flow import Provider as IdP

pytestmark = [pytest.mark.timeout(120)]

SERVER = "tests.support.oauth_flow:whoami_server"
SECRET = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I"  # 32 bytes, base64url


@pytest.fixture
def providers(oauth_provider: IdP, oauth2_provider: IdP) -> dict[str, IdP]:
    return {"oidc": oauth_provider, "oauth2": oauth2_provider}


@contextlib.contextmanager
def signing_in(provider: IdP, issuer_path: str = "", **env: str) -> Iterator[tuple[Remote, UpstreamIdP, IdP]]:
    """A process whose OAuth server signs users in at ``provider`` (``env`` on top of what its mode needs), on the
    socket the provider knows the callback of."""
    idp, sock = provider.idp, provider.sock
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    issuer = base + issuer_path
    provider_env = {"WIREMCP_OAUTH_PROVIDER": "oidc", "WIREMCP_OAUTH_DISCOVERY_URL": idp.discovery_url} \
        if idp.mode == "oidc" else {
        "WIREMCP_OAUTH_PROVIDER": "oauth2", "WIREMCP_OAUTH_AUTHORIZE_URL": idp.authorize_url,
        "WIREMCP_OAUTH_TOKEN_URL": idp.token_url, "WIREMCP_OAUTH_USERINFO_URL": idp.user_api_url,
        "WIREMCP_OAUTH_SUBJECT_CLAIM": "login", "WIREMCP_OAUTH_UPSTREAM_SCOPES": "read:user user:email"}
    full = {"WIREMCP_AUTH_RESOURCE": f"{base}/mcp", "WIREMCP_AUTH_SCOPES_SUPPORTED": "notes:read",
            "WIREMCP_OAUTH_CLIENT_ID": idp.client_id, "WIREMCP_OAUTH_CLIENT_SECRET": idp.client_secret,
            "WIREMCP_OAUTH_SECRET": SECRET, **provider_env, **env}
    if issuer_path:
        full["WIREMCP_OAUTH_ISSUER"] = issuer
    with run_uvicorn_on(sock, SERVER, full):
        yield Remote(issuer, f"{base}/mcp"), idp, provider


async def registered(http: httpx.AsyncClient, remote: Remote) -> str:
    answer = await http.post(remote.url("register"), json={"redirect_uris": [REDIRECT],
                                                           "token_endpoint_auth_method": "none"})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["client_id"])


async def tokens_for(remote: Remote, provider: IdP, http: httpx.AsyncClient) -> dict[str, object]:
    client_id = await registered(http, remote)
    agent = UserAgent(provider)
    try:
        back = await agent.code(remote, client_id)
    finally:
        await agent.aclose()
    answer = await http.post(remote.url("token"), data={
        "grant_type": "authorization_code", "code": back["code"], "redirect_uri": REDIRECT, "client_id": client_id,
        "code_verifier": VERIFIER, "resource": remote.resource})
    assert answer.status_code == 200, answer.text
    body: dict[str, object] = answer.json()
    return body


async def whoami(http: httpx.AsyncClient, remote: Remote, token: object) -> httpx.Response:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {},
                                                                          "_meta": meta}}
    return await http.post(remote.resource, json=body, headers={
        "accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call", "mcp-name": "whoami", "authorization": f"Bearer {token}"})


@pytest.mark.setting("WIREMCP_OAUTH_PROVIDER", "WIREMCP_OAUTH_CLIENT_ID", "WIREMCP_OAUTH_CLIENT_SECRET",
                     "WIREMCP_OAUTH_DISCOVERY_URL", "WIREMCP_OAUTH_ACCESS_TOKEN_SECONDS", "WIREMCP_OAUTH_ISSUER")
async def test_an_openid_connect_provider_signs_users_in_through_the_process(providers: dict[str, IdP]) -> None:
    with signing_in(providers["oidc"], issuer_path="/auth", WIREMCP_OAUTH_ACCESS_TOKEN_SECONDS="120") as (
            remote, _, provider):
        async with httpx.AsyncClient(timeout=30) as http:
            challenge = await whoami(http, remote, "nothing")
            resource = (await http.get(remote.resource.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"))).json()
            metadata = (await http.get(remote.resource.replace("/mcp", "/.well-known/oauth-authorization-server/auth"))).json()
            tokens = await tokens_for(remote, provider, http)
            answer = await whoami(http, remote, tokens["access_token"])
    assert challenge.status_code == 401
    assert resource["authorization_servers"] == [remote.issuer]
    assert metadata["issuer"] == remote.issuer
    assert metadata["token_endpoint"] == f"{remote.issuer}/oauth/token"
    assert tokens["expires_in"] == 120
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["content"][0]["text"]  # the provider's subject for the user


@pytest.mark.setting("WIREMCP_OAUTH_AUTHORIZE_URL", "WIREMCP_OAUTH_TOKEN_URL", "WIREMCP_OAUTH_USERINFO_URL",
                     "WIREMCP_OAUTH_SUBJECT_CLAIM", "WIREMCP_OAUTH_UPSTREAM_SCOPES")
async def test_a_plain_oauth2_provider_signs_users_in_by_its_endpoints(providers: dict[str, IdP]) -> None:
    with signing_in(providers["oauth2"]) as (remote, idp, provider):
        async with httpx.AsyncClient(timeout=30) as http:
            client_id = await registered(http, remote)
            to_provider = await http.get(authorize_url(remote, client_id))
            tokens = await tokens_for(remote, provider, http)
            answer = await whoami(http, remote, tokens["access_token"])
    upstream = query(to_provider.headers["location"])
    assert to_provider.headers["location"].startswith(idp.authorize_url)
    assert upstream["scope"] == "read:user user:email"
    assert "nonce" not in upstream  # not OpenID Connect
    assert answer.json()["result"]["content"][0]["text"] == idp.username  # the subject claim: its login


@pytest.mark.setting("WIREMCP_OAUTH_ALLOWED_EMAIL_DOMAINS", "WIREMCP_OAUTH_GROUP_SCOPES")
@pytest.mark.parametrize(("domains", "groups", "outcome"), [
    ("example.com", "engineers=notes:read", "notes:read"),
    ("other.org", "", "access_denied"),
    ("", "admins=notes:read", "access_denied"),
])
async def test_who_may_sign_in_and_with_which_scopes(providers: dict[str, IdP], domains: str, groups: str,
                                                     outcome: str) -> None:
    env = {"WIREMCP_OAUTH_ALLOWED_EMAIL_DOMAINS": domains, "WIREMCP_OAUTH_GROUP_SCOPES": groups}
    with signing_in(providers["oidc"], **{k: v for k, v in env.items() if v}) as (remote, _, provider):
        async with httpx.AsyncClient(timeout=30) as http:
            client_id = await registered(http, remote)
            agent = UserAgent(provider)
            try:
                back = await agent.code(remote, client_id) if outcome != "access_denied" else query(
                    (await agent.follow(authorize_url(remote, client_id))).headers["location"])
            finally:
                await agent.aclose()
    assert back.get("error", "notes:read") == outcome


@pytest.mark.setting("WIREMCP_OAUTH_CLIENT_METADATA", "WIREMCP_OAUTH_DYNAMIC_REGISTRATION")
async def test_registration_ways_switched_off(providers: dict[str, IdP]) -> None:
    with signing_in(providers["oidc"], WIREMCP_OAUTH_CLIENT_METADATA="false",
                    WIREMCP_OAUTH_DYNAMIC_REGISTRATION="false") as (remote, _, _provider):
        async with httpx.AsyncClient(timeout=30) as http:
            metadata = (await http.get(remote.issuer + "/.well-known/oauth-authorization-server")).json()
            registration = await http.post(remote.url("register"), json={"redirect_uris": [REDIRECT]})
            by_url = await http.get(authorize_url(remote, "https://app.example.com/client.json"))
    assert "registration_endpoint" not in metadata
    assert metadata["client_id_metadata_document_supported"] is False
    assert registration.json()["error_description"] == "dynamic client registration is off"
    assert "does not accept client metadata documents" in by_url.text


@pytest.mark.setting("WIREMCP_OAUTH_TENANT")
async def test_a_presets_tenant_names_where_its_discovery_document_is(providers: dict[str, IdP]) -> None:
    asked: list[str] = []

    class Realm(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    keycloak = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Realm)
    threading.Thread(target=keycloak.serve_forever, daemon=True).start()
    realm = f"http://127.0.0.1:{keycloak.server_address[1]}/realms/staff"
    try:
        with signing_in(providers["oidc"], WIREMCP_OAUTH_PROVIDER="keycloak", WIREMCP_OAUTH_TENANT=realm) as (
                remote, _, _provider):
            async with httpx.AsyncClient(timeout=30) as client:
                page = await client.get(authorize_url(remote, await registered(client, remote)))
    finally:
        keycloak.shutdown()
    assert asked == ["/realms/staff/.well-known/openid-configuration"]
    assert page.status_code == 502
    assert f"the discovery document at {realm}/.well-known/openid-configuration could not be read" in page.text
