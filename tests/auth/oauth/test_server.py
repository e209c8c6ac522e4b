"""``OAuthServer`` as a whole: its settings checked, its metadata saying what it does, its endpoints routed in
front of the MCP app, the user's upstream token given to tools (refreshed when it has expired), and the clients'
metadata documents cached in its store, which replicas share."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
import pytest

from tests.support.client_site import ClientSite
from tests.support.oauth_flow import REDIRECT, VERIFIER, Provider, UserAgent, serving
from tests.support.tls import make_certificates, serve_https
from wiremcp.auth.oauth.forms import pkce_matches
from wiremcp.auth.oauth.metadata_cache import MemoryMetadataCache, StoreMetadataCache
from wiremcp.auth.oauth.metadata_fetcher import MetadataFetcher
from wiremcp.auth.oauth.sealing import digest
from wiremcp.auth.oauth.server import UPSTREAM_PURPOSE, OAuthServer
from wiremcp.auth.oauth.upstream import Upstream
from wiremcp.grant_store import InMemoryGrantStore
from wiremcp.principal import Principal

pytestmark = pytest.mark.timeout(120)

UPSTREAM = Upstream(client_id="c", client_secret="s", authorize_url="https://idp/a", token_url="https://idp/t")



@pytest.mark.parametrize(("issuer", "resource", "problem"), [
    ("http://mcp.example.com", "https://mcp.example.com/mcp", "issuer is an https URL"),
    ("https://mcp.example.com", "ftp://mcp.example.com/mcp", "resource is an https URL"),
    ("https://mcp.example.com?x=1", "https://mcp.example.com/mcp", "no query or fragment"),
])
def test_the_issuer_and_resource_are_https_urls_or_loopback(issuer: str, resource: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        OAuthServer(issuer=issuer, resource=resource, upstream=UPSTREAM)


def test_the_metadata_says_which_registrations_it_takes() -> None:
    everything = OAuthServer(issuer="https://mcp.example.com", resource="https://mcp.example.com/mcp",
                             upstream=UPSTREAM, secret=None, scopes=("notes:read",)).metadata()
    assert everything["registration_endpoint"] == "https://mcp.example.com/oauth/register"
    assert everything["client_id_metadata_document_supported"] is True
    assert everything["scopes_supported"] == ["notes:read"]
    assert everything["response_types_supported"] == ["code"]
    closed = OAuthServer(issuer="https://mcp.example.com/tenant", resource="https://mcp.example.com/tenant/mcp",
                         upstream=UPSTREAM, dynamic_registration=False, client_metadata=False)
    document = closed.metadata()
    assert "registration_endpoint" not in document
    assert document["client_id_metadata_document_supported"] is False
    assert document["token_endpoint"] == "https://mcp.example.com/tenant/oauth/token"
    assert closed.metadata_paths == {"/.well-known/oauth-authorization-server/tenant",
                                     "/.well-known/oauth-authorization-server"}


async def test_wrap_sends_its_paths_to_itself_and_the_rest_to_the_app() -> None:
    seen: list[str] = []

    async def app(scope: dict[str, object], receive: object, send: object) -> None:
        seen.append(str(scope["path"]))
        await send({"type": "http.response.start", "status": 204, "headers": []})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]

    oauth = OAuthServer(issuer="https://mcp.example.com", resource="https://mcp.example.com/mcp", upstream=UPSTREAM)
    transport = httpx.ASGITransport(app=oauth.wrap(app))  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="https://mcp.example.com") as http:
        metadata = await http.get("/.well-known/oauth-authorization-server")
        keys = await http.get("/oauth/jwks")
        other = await http.get("/mcp")
        unknown = await http.get("/oauth/nothing")
    assert metadata.json()["issuer"] == "https://mcp.example.com"
    assert keys.json()["keys"][0]["kty"] == "EC"
    assert other.status_code == 204
    assert unknown.status_code == 204  # not one of its paths: the app's
    assert seen == ["/mcp", "/oauth/nothing"]


async def test_a_tool_gets_the_users_upstream_token_refreshed_once_it_has_expired(oauth_provider: Provider) -> None:
    agent = UserAgent(oauth_provider)
    try:
        async with serving(oauth_provider) as oauth:
            client, _ = await oauth.registrations.register({"redirect_uris": [REDIRECT],
                                                            "token_endpoint_auth_method": "none"}, "t")
            code = (await agent.code(oauth, client.client_id))["code"]
            issued = await oauth.tokens.redeem(code, client_id=client.client_id, redirect_uri=REDIRECT,
                                               check_verifier=lambda c: pkce_matches(VERIFIER, c))
            principal = await oauth.verifier.verify(issued.access_token)  # the caller a tool sees
            first = await oauth.upstream_token(principal)
            record = await oauth.store.get("upstream", digest(principal.subject))
            assert record is not None
            assert first not in str(record)  # sealed, not in the clear
            kept = orjson.loads(oauth.seal.open(str(record["sealed"]), UPSTREAM_PURPOSE))
            kept["expires_at"] = 0.0  # as if it had expired
            await oauth.store.put("upstream", digest(principal.subject),
                                  {"sealed": oauth.seal.seal(orjson.dumps(kept), UPSTREAM_PURPOSE)}, 3600)
            refreshed = await oauth.upstream_token(principal)
            again = await oauth.upstream_token(principal)
            with pytest.raises(LookupError, match="not signed in by this server"):
                await oauth.upstream_token(Principal("https://elsewhere.example.com", principal.subject))
            with pytest.raises(LookupError, match="must sign in again"):
                await oauth.upstream_token(Principal(oauth.issuer, "someone-else"))
            with pytest.raises(LookupError):
                await oauth.upstream_token(None)
    finally:
        await agent.aclose()
    assert refreshed != first
    assert again == refreshed  # kept, no second refresh


async def test_a_browser_based_client_may_call_the_client_endpoints_but_not_the_persons() -> None:
    oauth = OAuthServer(issuer="https://mcp.example.com", resource="https://mcp.example.com/mcp", upstream=UPSTREAM)
    transport = httpx.ASGITransport(app=oauth.app)
    origin = {"origin": "https://inspector.example.com"}
    async with httpx.AsyncClient(transport=transport, base_url="https://mcp.example.com") as http:
        preflight = await http.options("/oauth/token", headers={**origin, "access-control-request-method": "POST"})
        metadata = await http.get("/.well-known/oauth-authorization-server", headers=origin)
        token = await http.post("/oauth/token", data={"grant_type": "nothing"}, headers=origin)
        authorize = await http.get("/oauth/authorize", headers=origin)
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert metadata.headers["access-control-allow-origin"] == "*"
    assert token.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-origin" not in authorize.headers


def test_the_fetcher_keeps_documents_in_the_servers_store_unless_it_has_a_cache_of_its_own() -> None:
    made = OAuthServer(issuer="https://mcp.example.com", resource="https://mcp.example.com/mcp", upstream=UPSTREAM)
    own_fetcher = OAuthServer(issuer="https://mcp.example.com", resource="https://mcp.example.com/mcp",
                              upstream=UPSTREAM, client_metadata=MetadataFetcher(timeout=2))
    own_cache = MemoryMetadataCache()
    own_both = OAuthServer(issuer="https://mcp.example.com", resource="https://mcp.example.com/mcp",
                           upstream=UPSTREAM, client_metadata=MetadataFetcher(cache=own_cache))
    for oauth in (made, own_fetcher):
        fetcher = oauth.registrations.fetcher
        assert fetcher is not None
        assert isinstance(fetcher.cache, StoreMetadataCache)
        assert fetcher.cache.store is oauth.store
    assert own_fetcher.registrations.fetcher is not None
    assert own_fetcher.registrations.fetcher.timeout == 2
    assert own_both.registrations.fetcher is not None
    assert own_both.registrations.fetcher.cache is own_cache


async def test_replicas_on_one_store_fetch_a_clients_document_once(tmp_path: Path) -> None:
    certificates = make_certificates(tmp_path)
    site = ClientSite()
    store = InMemoryGrantStore()
    async with serve_https(site, certificates) as port:
        site.port = port
        url = site.serve("/client.json")
        replicas = [OAuthServer(issuer="https://mcp.example.com", resource="https://mcp.example.com/mcp",
                                upstream=UPSTREAM, store=store,
                                client_metadata=MetadataFetcher(allow_private_networks=True, verify=str(certificates.ca)))
                    for _ in range(2)]
        try:
            found = [await replica.registrations.find(url) for replica in replicas]
        finally:
            for replica in replicas:
                assert replica.registrations.fetcher is not None
                await replica.registrations.fetcher.aclose()
    assert [client.client_name for client in found] == ["Example MCP Client"] * 2
    assert site.hits["/client.json"] == 1
