"""``ProtectedResource``: the RFC 9728 document, where it is served, and the canonical resource URL it
is derived from (so that what is advertised and what tokens must carry never drift apart)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp.shared.auth import ProtectedResourceMetadata
from starlette.applications import Starlette
from starlette.routing import Mount, Route

from tests.support.http import asgi_request
from wiremcp.auth.metadata import WELL_KNOWN, ProtectedResource
from wiremcp.transports.asgi import Receive, Scope, SendASGI, respond

SPEC = "2025-11-25/basic/authorization"
ISSUER = "https://as.example.test"


@pytest.mark.parametrize("resource", ["mcp.example.test/mcp", "ftp://mcp.example.test/mcp", "https:///mcp",
                                      "https://mcp.example.test/mcp#fragment", "/mcp"])
@pytest.mark.spec(f"{SPEC}#canonical-server-uri")
def test_the_resource_must_be_an_absolute_http_url_without_fragment(resource: str) -> None:
    with pytest.raises(ValueError, match="absolute"):
        ProtectedResource(resource, (ISSUER,))


@pytest.mark.spec(f"{SPEC}#authorization-server-location")
def test_without_an_authorization_server_none_is_listed() -> None:
    """Static tokens come from no authorization server: the document lists none (``authorization_servers``
    is optional in RFC 9728) rather than one that does not exist."""
    document = ProtectedResource("https://mcp.example.test/mcp", ()).document()
    assert document == {"resource": "https://mcp.example.test/mcp", "bearer_methods_supported": ["header"]}


def test_an_empty_resource_is_the_url_each_request_was_served_at() -> None:
    protected = ProtectedResource("", (), path="/tools/mcp")
    assert protected.metadata_paths == (WELL_KNOWN + "/tools/mcp", WELL_KNOWN)
    scope: dict[str, Any] = {"scheme": "http", "headers": [(b"host", b"127.0.0.1:8123")], "root_path": "/api"}
    served = protected.served_at(scope)
    assert served.resource == "http://127.0.0.1:8123/api/tools/mcp"
    assert served.metadata_url == "http://127.0.0.1:8123/.well-known/oauth-protected-resource/api/tools/mcp"
    configured = ProtectedResource("https://mcp.example.test/mcp", (ISSUER,))
    assert configured.served_at(scope) is configured
    with pytest.raises(ValueError, match="must start with /"):
        ProtectedResource("", (), path="mcp")


@pytest.mark.parametrize(("resource", "metadata_url", "paths"), [
    ("https://mcp.example.test/mcp", "https://mcp.example.test/.well-known/oauth-protected-resource/mcp",
     (WELL_KNOWN + "/mcp", WELL_KNOWN)),
    ("https://example.test/public/mcp", "https://example.test/.well-known/oauth-protected-resource/public/mcp",
     (WELL_KNOWN + "/public/mcp", WELL_KNOWN)),
    ("https://mcp.example.test:8443/api/mcp/",
     "https://mcp.example.test:8443/.well-known/oauth-protected-resource/api/mcp",
     (WELL_KNOWN + "/api/mcp", WELL_KNOWN)),
    ("https://mcp.example.test", "https://mcp.example.test/.well-known/oauth-protected-resource", (WELL_KNOWN,)),
    ("https://mcp.example.test/", "https://mcp.example.test/.well-known/oauth-protected-resource", (WELL_KNOWN,)),
])
@pytest.mark.spec(f"{SPEC}#protected-resource-metadata-discovery-requirements")
def test_the_well_known_urls_follow_from_the_resource(resource: str, metadata_url: str,
                                                      paths: tuple[str, ...]) -> None:
    protected = ProtectedResource(resource, (ISSUER,))
    assert protected.metadata_url == metadata_url
    assert protected.metadata_paths == paths
    for path in paths:
        assert protected.matches(path)
        assert protected.matches(path + "/")
    assert not protected.matches(WELL_KNOWN + "/other")
    assert not protected.matches("/mcp")


@pytest.mark.spec(f"{SPEC}#authorization-server-location")
def test_the_document_is_rfc_9728_metadata() -> None:
    protected = ProtectedResource("https://mcp.example.test/mcp", (ISSUER, "https://backup-as.example.test"),
                                  ("mcp:tools", "offline_access", "mcp:read"), resource_name="Example",
                                  resource_documentation="https://docs.example.test/mcp",
                                  extra={"resource_policy_uri": "https://example.test/policy"})
    document = protected.document()
    assert document == {
        "resource": "https://mcp.example.test/mcp",
        "authorization_servers": [ISSUER, "https://backup-as.example.test"],
        "bearer_methods_supported": ["header"],  # never the query string, never the body
        "scopes_supported": ["mcp:tools", "mcp:read"],  # offline_access is the client's to ask for, not ours
        "resource_name": "Example",
        "resource_documentation": "https://docs.example.test/mcp",
        "resource_policy_uri": "https://example.test/policy",
    }
    parsed = ProtectedResourceMetadata.model_validate(document)
    assert str(parsed.resource) == "https://mcp.example.test/mcp"
    assert parsed.bearer_methods_supported == ["header"]


def test_a_minimal_document_leaves_the_optional_members_out() -> None:
    document = ProtectedResource("https://mcp.example.test/mcp", (ISSUER,), ("offline_access",)).document()
    assert document == {"resource": "https://mcp.example.test/mcp", "authorization_servers": [ISSUER],
                        "bearer_methods_supported": ["header"]}
    ProtectedResourceMetadata.model_validate(document)


async def test_serving_get_head_and_nothing_else() -> None:
    protected = ProtectedResource("http://127.0.0.1/mcp", (ISSUER,), ("mcp:tools",))
    got = await asgi_request(protected, "GET", path=WELL_KNOWN + "/mcp")
    assert got.status == 200
    assert got.headers["content-type"] == "application/json"
    assert got.headers["access-control-allow-origin"] == "*"  # browser-based clients read it too
    assert "max-age" in got.headers["cache-control"]
    assert got.json() == protected.document()
    head = await asgi_request(protected, "HEAD", path=WELL_KNOWN)
    assert head.status == 200
    for method in ("POST", "PUT", "DELETE"):
        refused = await asgi_request(protected, method, path=WELL_KNOWN)
        assert refused.status == 405
        assert refused.headers["allow"] == "GET, HEAD"


async def test_as_an_app_of_its_own_it_serves_only_its_paths() -> None:
    protected = ProtectedResource("http://127.0.0.1/api/mcp", (ISSUER,))
    assert (await asgi_request(protected, "GET", path=WELL_KNOWN + "/api/mcp")).status == 200
    assert (await asgi_request(protected, "GET", path=WELL_KNOWN)).status == 200
    assert (await asgi_request(protected, "GET", path=WELL_KNOWN + "/mcp")).status == 404
    assert (await asgi_request(protected, "GET", path="/api/mcp")).status == 404

    async def receive() -> dict[str, Any]:
        raise AssertionError("not read")

    async def send(message: Any) -> None:
        raise AssertionError("nothing sent for a lifespan scope")

    await protected({"type": "lifespan"}, receive, send)


async def other(scope: Scope, receive: Receive, send: SendASGI) -> None:
    await respond(send, 200, b"mcp app", content_type=b"text/plain")


@pytest.mark.spec(f"{SPEC}#protected-resource-metadata-discovery-requirements")
async def test_routed_at_the_host_root_of_a_starlette_app_with_the_mcp_app_under_a_prefix() -> None:
    """The MCP app mounted at ``/api``: the well-known URLs are outside the mount, so the host routes them."""
    protected = ProtectedResource("http://testserver/api/mcp", (ISSUER,), ("mcp:tools",))
    app = Starlette(routes=[Route(WELL_KNOWN, protected), Mount(WELL_KNOWN, protected), Mount("/api", app=other)])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        for url in (protected.metadata_url, "http://testserver" + WELL_KNOWN):
            response = await client.get(url)
            assert response.status_code == 200, url
            assert response.json()["resource"] == "http://testserver/api/mcp"
        assert (await client.get(WELL_KNOWN + "/elsewhere")).status_code == 404
        assert (await client.get("/api/mcp")).text == "mcp app"
