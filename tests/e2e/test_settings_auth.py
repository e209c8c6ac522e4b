"""The ``WIREMCP_AUTH_*`` settings reach a real ``uvicorn app:asgi`` process and do what the Authorization page
(``docs/authorization.md``) says.

Each test starts one process configured only by its environment and observes, over HTTP, the effect of
every setting its ``setting`` marker names, so that the test fails when one of them is missing. The
authorization server is the development one (``examples.dev_auth_server``) on a real loopback socket in
the test's own event loop; tokens are minted by it, or signed with its key the way another issuer or
another algorithm would sign them. ``WIREMCP_AUTH_RESOURCE``, ``WIREMCP_AUTH_JWKS_URL`` and
``WIREMCP_AUTH_SCOPES_SUPPORTED`` are proved by the environment test in ``test_auth.py``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from joserfc import jwk, jwt

from examples.dev_auth_server import DevAuthServer
from tests.support.http import READ_BOUND, run_uvicorn, serve_in_process
from tests.support.tokens import (
    challenge_params,
    claims_for,
    dev_auth_server,
    stateless_call,
    stateless_headers,
)
from wiremcp.auth.metadata import WELL_KNOWN
from wiremcp.errors import INTERNAL_ERROR
from wiremcp.transports.asgi import Receive, Scope, SendASGI

SERVER = "tests.support.tokens:env_server"
PUBLIC = "https://mcp.example.test/mcp"
"""The resource every process is told it is (where a proxy would serve it; none runs here)."""
METADATA = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"

pytestmark = [pytest.mark.timeout(60)]


async def call(http: httpx.AsyncClient, url: str, token: str | None, name: str = "whoami",
               rid: int = 1) -> httpx.Response:
    """A stateless-era ``tools/call`` of ``name``, with ``token`` as bearer when given."""
    body = stateless_call(rid, name)
    return await http.post(url, content=json.dumps(body), headers=stateless_headers(body, token))


def text(response: httpx.Response) -> str:
    assert response.status_code == 200, (response.status_code, response.text)
    result: dict[str, Any] = response.json()["result"]
    assert not result.get("isError"), result
    return str(result["content"][0]["text"])


def refused(response: httpx.Response, status: int = 401, error: str | None = "invalid_token") -> dict[str, str]:
    """The challenge of a refusal with ``status`` and ``error`` (None: no ``error`` parameter)."""
    assert response.status_code == status, (response.status_code, response.text)
    params = challenge_params(response.headers["www-authenticate"])
    assert params.get("error") == error, params
    return params


def signed(das: DevAuthServer, alg: str, **claims: Any) -> str:
    """A token signed with the authorization server's own key (published in its JWKS) with ``alg``."""
    token: str = jwt.encode({"alg": alg, "kid": das.key.kid, "typ": "at+jwt"}, claims_for(das, PUBLIC, **claims),
                            das.key, algorithms=[alg])
    return token


@pytest.mark.setting("WIREMCP_AUTH_ALGORITHMS", "WIREMCP_AUTH_ISSUER", "WIREMCP_AUTH_SCOPES")
async def test_jwt_tokens_must_use_the_configured_algorithms_issuer_and_scopes() -> None:
    """``WIREMCP_AUTH_ALGORITHMS=RS512`` (not among the defaults): a token signed RS512 with a published key
    is served, one signed RS256 (a default) with that key is refused. ``WIREMCP_AUTH_ISSUER`` is an issuer
    other than the JWKS's host: tokens naming it are served, tokens naming the JWKS's host are refused, and
    the metadata advertises it. ``WIREMCP_AUTH_SCOPES``: a token without ``mcp:tools`` gets 403."""
    issuer = "https://login.example.test"
    # No "alg" in the key, so that it may sign with RS512 as well as RS256 (the dev AS's key is RS256 only).
    key = jwk.RSAKey.generate_key(2048, parameters={"kid": "settings-test", "use": "sig"}, private=True)
    async with dev_auth_server(key=key) as das:
        env = {"WIREMCP_AUTH_RESOURCE": PUBLIC, "WIREMCP_AUTH_ISSUER": issuer,
               "WIREMCP_AUTH_JWKS_URL": das.issuer + "/jwks", "WIREMCP_AUTH_ALGORITHMS": "RS512",
               "WIREMCP_AUTH_SCOPES": "mcp:tools"}
        with run_uvicorn(SERVER, env) as process:
            async with httpx.AsyncClient(timeout=READ_BOUND) as http:
                assert text(await call(http, process.url, signed(das, "RS512", iss=issuer, subject="erin"))) \
                    == f"{issuer}|erin"
                # ALGORITHMS: RS256 is a default, but not configured.
                refused(await call(http, process.url, signed(das, "RS256", iss=issuer, subject="erin")))
                # ISSUER: the key is the same, the issuer is not.
                refused(await call(http, process.url, signed(das, "RS512", iss=das.issuer, subject="erin")))
                document = (await http.get(process.base_url + WELL_KNOWN + "/mcp")).json()
                assert document["authorization_servers"] == [issuer]
                # SCOPES: a valid token without the scope every request needs.
                narrow = refused(await call(http, process.url, signed(das, "RS512", iss=issuer, scope="mcp:read")),
                                 403, "insufficient_scope")
                assert narrow == {"error": "insufficient_scope", "scope": "mcp:tools", "resource_metadata": METADATA}
            output = process.output()
    assert das.counts["jwks"] == 1
    assert "Traceback" not in output, output


@pytest.mark.setting("WIREMCP_AUTH_STATIC_TOKENS")
async def test_static_tokens_stand_for_their_subjects_and_scopes() -> None:
    """``WIREMCP_AUTH_STATIC_TOKENS=token=subject[:scope scope],...``: each token is served as its subject (of
    ``WIREMCP_AUTH_ISSUER``) with its scopes; no token or another one gets 401."""
    issuer = "https://static.example.test"
    env = {"WIREMCP_AUTH_RESOURCE": PUBLIC, "WIREMCP_AUTH_ISSUER": issuer,
           "WIREMCP_AUTH_STATIC_TOKENS": "dev-token-alice=alice:mcp:tools mcp:write admin, dev-token-bob=bob"}
    with run_uvicorn(SERVER, env) as process:
        async with httpx.AsyncClient(timeout=READ_BOUND) as http:
            assert text(await call(http, process.url, "dev-token-alice")) == f"{issuer}|alice"
            assert text(await call(http, process.url, "dev-token-bob")) == f"{issuer}|bob"
            # The scopes after the subject: alice's cover what wipe needs (mcp:write admin:delete), bob has none.
            assert text(await call(http, process.url, "dev-token-alice", "wipe")) == "wiped"
            assert refused(await call(http, process.url, "dev-token-bob", "wipe"), 403,
                           "insufficient_scope")["scope"] == "mcp:write admin:delete"
            assert refused(await call(http, process.url, None), error=None) == {"resource_metadata": METADATA}
            refused(await call(http, process.url, "dev-token-carol"))
            output = process.output()
    assert "Traceback" not in output, output


@pytest.mark.setting("WIREMCP_AUTH_STATIC_TOKENS")
async def test_static_tokens_alone_need_no_resource_and_advertise_no_authorization_server() -> None:
    """``WIREMCP_AUTH_STATIC_TOKENS`` and nothing else of auth (the Authorization page's static-token recipe), at
    a path of its own: the token is served, no token gets 401 pointing at the metadata of the URL the request was
    served at, and that metadata names that URL as the resource and lists no authorization server."""
    env = {"WIREMCP_AUTH_STATIC_TOKENS": "dev-token=alice", "WIREMCP_PATH": "/tools/mcp"}
    with run_uvicorn(SERVER, env) as process:
        url = process.base_url + "/tools/mcp"
        async with httpx.AsyncClient(timeout=READ_BOUND) as http:
            assert text(await call(http, url, "dev-token")) == "static|alice"
            metadata_url = f"{process.base_url}{WELL_KNOWN}/tools/mcp"
            assert refused(await call(http, url, None), error=None) == {"resource_metadata": metadata_url}
            assert refused(await call(http, url, "another-token")) == {"error": "invalid_token",
                                                                       "resource_metadata": metadata_url}
            for where in (metadata_url, process.base_url + WELL_KNOWN):
                document = (await http.get(where)).json()
                assert document == {"resource": url, "bearer_methods_supported": ["header"]}, document
        output = process.stop_and_wait()
    assert "static bearer tokens are for development only" in output


@pytest.mark.setting("WIREMCP_AUTH_INTROSPECTION_URL", "WIREMCP_AUTH_CLIENT_ID", "WIREMCP_AUTH_CLIENT_SECRET")
async def test_tokens_are_introspected_as_the_configured_client() -> None:
    """``WIREMCP_AUTH_INTROSPECTION_URL`` with ``WIREMCP_AUTH_CLIENT_ID`` / ``WIREMCP_AUTH_CLIENT_SECRET``: a
    token is served once the authorization server, authenticating that client, says it is active (and its
    answer is cached); once the AS no longer accepts that secret, a new token cannot be checked: 503."""
    async with dev_auth_server() as das:
        client = das.register_client(grant_types=["client_credentials"], name="the MCP server")
        assert client.client_secret is not None
        env = {"WIREMCP_AUTH_RESOURCE": PUBLIC, "WIREMCP_AUTH_ISSUER": das.issuer,
               "WIREMCP_AUTH_INTROSPECTION_URL": das.issuer + "/introspect",
               "WIREMCP_AUTH_CLIENT_ID": client.client_id, "WIREMCP_AUTH_CLIENT_SECRET": client.client_secret}
        with run_uvicorn(SERVER, env) as process:
            async with httpx.AsyncClient(timeout=READ_BOUND) as http:
                token = das.issue(subject="frank", client_id="some-app", scope="mcp:tools", audience=PUBLIC)
                assert text(await call(http, process.url, token)) == f"{das.issuer}|frank"
                assert das.counts["introspect"] == 1
                assert text(await call(http, process.url, token, rid=2)) == f"{das.issuer}|frank"
                assert das.counts["introspect"] == 1  # the answer is cached
                refused(await call(http, process.url, None), error=None)
                # The AS rotates the client's secret: the server's one no longer authenticates it.
                client.client_secret = "rotated-" + client.client_secret
                fresh = das.issue(subject="frank", client_id="some-app", scope="mcp:tools", audience=PUBLIC)
                unavailable = await call(http, process.url, fresh, rid=3)
                assert das.counts["introspect"] == 2
                assert unavailable.status_code == 503, unavailable.text
                assert int(unavailable.headers["retry-after"]) >= 1
                assert unavailable.json()["error"]["code"] == INTERNAL_ERROR
            output = process.output()
    assert "Traceback" not in output, output


@pytest.mark.setting("WIREMCP_AUTH_SERVICE_TOKENS")
@pytest.mark.parametrize("service_tokens", ["1", "0"])
async def test_a_token_that_names_no_user_is_its_clients_only_with_service_tokens(service_tokens: str) -> None:
    """``WIREMCP_AUTH_SERVICE_TOKENS=1``: an introspected token without ``sub`` (a gateway's own, of the client
    credentials grant) is served as its client's; by default it is refused (401)."""

    async def introspect(scope: Scope, receive: Receive, send: SendASGI) -> None:
        body = json.dumps({"active": True, "client_id": "the-gateway", "scope": "", "aud": PUBLIC,
                           "iss": "https://as.example.test"}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    async with serve_in_process(introspect) as endpoint:
        env = {"WIREMCP_AUTH_RESOURCE": PUBLIC, "WIREMCP_AUTH_ISSUER": "https://as.example.test",
               "WIREMCP_AUTH_INTROSPECTION_URL": endpoint,
               "WIREMCP_AUTH_CLIENT_ID": "the-mcp-server", "WIREMCP_AUTH_CLIENT_SECRET": "secret",
               "WIREMCP_AUTH_SERVICE_TOKENS": service_tokens}
        with run_uvicorn(SERVER, env) as process:
            async with httpx.AsyncClient(timeout=READ_BOUND) as http:
                answer = await call(http, process.url, "the-gateways-token")
    if service_tokens == "1":
        assert text(answer).endswith("the-gateway")  # the principal is the client
    else:
        refused(answer)
