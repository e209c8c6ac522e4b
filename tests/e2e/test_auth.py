"""OAuth 2.1 resource-server auth end to end: the development authorization server
(``examples.dev_auth_server``) and a guarded MCP server, each on a real loopback socket.

Tokens are minted by the AS (or forged the way an attacker would); the server verifies them
against the AS's JWKS over HTTP, or with its introspection endpoint. The official ``mcp``
client connects with a static ``Authorization`` header and with its own OAuth client (dynamic
client registration, authorization code with PKCE S256; the user agent is played by httpx:
it fetches the authorization URL, reads the redirect and hands code and state back). Every
handler records its calls, so each refused attack is also shown never to reach one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
import pytest_asyncio
from joserfc import jwt
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientMetadata,
    OAuthMetadata,
    ProtectedResourceMetadata,
)
from mcp.types import TextContent
from pydantic import AnyUrl
from starlette.applications import Starlette
from starlette.routing import Mount, Route

from examples.dev_auth_server import DevAuthServer
from tests.support.http import (
    READ_BOUND,
    RawSession,
    SSEReader,
    asgi_request,
    initialize,
    post_headers,
    run_uvicorn,
    serve_in_process,
)
from tests.support.oauth_flow import MemoryStorage
from tests.support.tokens import (
    ADMIN_SCOPES,
    LEGACY,
    SCOPES,
    Clock,
    Late,
    Recorder,
    alg_none_token,
    authorization_code,
    bearer,
    challenge_params,
    dev_auth_server,
    foreign_key_token,
    hs256_with_public_key_token,
    recording_server,
    stateless_call,
    stateless_headers,
    stateless_request,
)
from wiremcp.auth.introspection import IntrospectionVerifier
from wiremcp.auth.jwt_verifier import JWKSVerifier
from wiremcp.auth.metadata import WELL_KNOWN, ProtectedResource
from wiremcp.auth.middleware import BearerAuth
from wiremcp.auth.verifier import TokenVerifier
from wiremcp.errors import INVALID_PARAMS, INVALID_REQUEST
from wiremcp.transports.asgi import ASGIApp
from wiremcp.transports.http_app import MCPHttpApp

SPEC = "2025-11-25/basic/authorization"
WAIT = 10.0  # a failure bound, never a sleep

pytestmark = [
    pytest.mark.timeout(60),
    # logging/setLevel and friends are deprecated in 2026-07-28; legacy mode may still touch them
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


def spec(*sections: str) -> Callable[[Any], Any]:
    def mark(fn: Any) -> Any:
        for section in sections:
            fn = pytest.mark.spec(f"{SPEC}#{section}")(fn)
        return fn

    return mark


# -- the stack: AS + guarded MCP server ---------------------------------------------------------------------
@dataclass
class Stack:
    das: DevAuthServer
    base: str
    """Where the MCP server listens (scheme://host:port)."""
    resource: ProtectedResource
    recorder: Recorder
    verifier: TokenVerifier
    clock: Clock
    mcp: MCPHttpApp
    http: httpx.AsyncClient
    introspection_client: tuple[str, str] | None = None

    @property
    def url(self) -> str:
        """The MCP endpoint: also the canonical resource URL, the tokens' audience."""
        return self.resource.resource

    def token(self, subject: str = "alice", scope: str = "mcp:tools mcp:read", *, audience: str | None = None,
              **options: Any) -> str:
        token: str = self.das.issue(subject=subject, client_id="test-client", scope=scope,
                                    audience=audience if audience is not None else self.url, **options)
        return token

    async def call(self, token: str | None, name: str = "whoami", rid: int = 1,
                   arguments: dict[str, Any] | None = None, **extra: Any) -> httpx.Response:
        body = stateless_call(rid, name, arguments, **extra)
        return await self.http.post(self.url, content=json.dumps(body), headers=stateless_headers(body, token))

    async def list(self, token: str, method: str = "tools/list") -> list[str]:
        body = stateless_request(7, method)
        response = await self.http.post(self.url, content=json.dumps(body), headers=stateless_headers(body, token))
        assert response.status_code == 200, response.text
        key = method.split("/")[0]
        return [item["name"] for item in response.json()["result"][key]]


@contextlib.asynccontextmanager
async def running(*, introspection: bool = False, prefix: str = "", required_scopes: tuple[str, ...] = ("mcp:tools",),
                  scopes_supported: tuple[str, ...] = SCOPES, filter_lists_by_scope: bool = True,
                  das_scopes: tuple[str, ...] = SCOPES) -> AsyncIterator[Stack]:
    """The dev AS and a guarded MCP server (at ``prefix + /mcp`` of a Starlette app when ``prefix``)."""
    clock = Clock()
    recorder = Recorder()
    server = recording_server(recorder, filter_lists_by_scope=filter_lists_by_scope)
    late = Late()
    # The raw client is closed first, so the servers find no connection to wait for when they stop.
    async with dev_auth_server(scopes=das_scopes) as das, serve_in_process(late) as base, \
            httpx.AsyncClient(timeout=READ_BOUND) as http:
        resource = ProtectedResource(f"{base}{prefix}/mcp", (das.issuer,), scopes_supported,
                                     resource_name="guarded test server")
        verifier: TokenVerifier
        introspection_client = None
        if introspection:
            client = das.register_client(grant_types=["client_credentials"], name="the MCP server")
            assert client.client_secret is not None
            introspection_client = (client.client_id, client.client_secret)
            verifier = IntrospectionVerifier(endpoint=das.issuer + "/introspect", client_id=client.client_id,
                                             client_secret=client.client_secret, audience=resource.resource,
                                             issuer=das.issuer, clock=clock)
        else:
            verifier = JWKSVerifier(jwks_url=das.issuer + "/jwks", issuer=das.issuer,
                                    audience=resource.resource, clock=clock)
        mcp = MCPHttpApp(server, authenticate=lambda app: BearerAuth(
            app, verifier=verifier, resource=resource, required_scopes=required_scopes))
        app: ASGIApp = mcp
        if prefix:
            # Mounted under a prefix: the well-known URLs live at the host's root, outside the mount.
            app = Starlette(routes=[Route(WELL_KNOWN, resource), Mount(WELL_KNOWN, resource),
                                    Mount(prefix, app=mcp)])
        late.app = app
        try:
            yield Stack(das, base, resource, recorder, verifier, clock, mcp, http, introspection_client)
        finally:
            await mcp.endpoint.stateless.close()
            await mcp.manager.close()
            await verifier.aclose()


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    async with running() as out:
        yield out


@pytest.fixture
async def introspected() -> AsyncIterator[Stack]:
    async with running(introspection=True) as out:
        yield out


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_stack() -> AsyncIterator[Stack]:
    """One stack for every attack (none of them may leave a trace: no handler call, no session)."""
    async with running() as out:
        yield out


# -- the official client ------------------------------------------------------------------------------------------
REDIRECT_URI = "http://127.0.0.1:1/oauth/callback"  # never contacted: the code is read from the Location header


@dataclass
class UserAgent:
    """Plays the browser: fetches the authorization URL without following the redirect, and hands
    what the redirect carries to the client's callback handler."""

    authorization_urls: list[str] = field(default_factory=list)
    location: str | None = None

    async def redirect(self, url: str) -> None:
        self.authorization_urls.append(url)
        async with httpx.AsyncClient(timeout=READ_BOUND) as browser:
            response = await browser.get(url, follow_redirects=False)
        assert response.status_code == 302, response.text
        self.location = response.headers["location"]
        assert self.location.startswith(REDIRECT_URI + "?"), self.location

    async def callback(self) -> AuthorizationCodeResult:
        assert self.location is not None
        code, state, iss = authorization_code(self.location)
        return AuthorizationCodeResult(code=code, state=state, iss=iss)


def oauth_provider(server_url: str, agent: UserAgent, storage: MemoryStorage) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl(REDIRECT_URI)], client_name="wiremcp auth tests",
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method="client_secret_basic")
    return OAuthClientProvider(server_url, metadata, storage, redirect_handler=agent.redirect,
                               callback_handler=agent.callback)


def text_of(result: Any) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


@contextlib.asynccontextmanager
async def official(url: str, mode: str, *, headers: dict[str, str] | None = None,
                   auth: httpx2.Auth | None = None, seen: list[httpx2.Request] | None = None) -> AsyncIterator[Client]:
    async def record(request: httpx2.Request) -> None:
        if seen is not None:
            seen.append(request)

    async with httpx2.AsyncClient(headers=headers, auth=auth, timeout=httpx2.Timeout(WAIT),
                                  event_hooks={"request": [record]}) as http, \
            Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=WAIT) as client:
        yield client


def decode(das: DevAuthServer, token: str) -> dict[str, Any]:
    claims: dict[str, Any] = dict(jwt.decode(token, das.key, algorithms=["RS256"]).claims)
    return claims


# ================================================================================================================
# A valid token works
# ================================================================================================================
@pytest.mark.parametrize("mode", ["auto", "legacy"])
@spec("token-requirements", "token-handling")
async def test_the_official_client_with_a_static_bearer_header(mode: str, stack: Stack) -> None:
    token = stack.token("alice", "mcp:tools mcp:read")
    seen: list[httpx2.Request] = []
    async with official(stack.url, mode, headers=bearer(token), seen=seen) as client:
        assert text_of(await client.call_tool("whoami", {})) == f"{stack.das.issuer}|alice"
        tools = [tool.name for tool in (await client.list_tools()).tools]
        assert "whoami" in tools
        assert "wipe" not in tools  # alice lacks its scopes: the list hides it
    assert stack.recorder.calls == [("whoami", f"{stack.das.issuer}|alice", frozenset({"mcp:tools", "mcp:read"}))]
    assert seen
    assert all(r.headers["authorization"] == f"Bearer {token}" for r in seen)
    assert all("access_token" not in str(r.url) for r in seen)
    assert stack.das.counts["jwks"] == 1


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@spec("authorization-flow-steps", "dynamic-client-registration", "authorization-code-protection",
      "resource-parameter-implementation")
async def test_the_official_oauth_client_registers_authorizes_with_pkce_and_calls_a_tool(
        mode: str, stack: Stack) -> None:
    agent, storage = UserAgent(), MemoryStorage()
    async with official(stack.url, mode, auth=oauth_provider(stack.url, agent, storage)) as client:
        assert text_of(await client.call_tool("whoami", {})) == f"{stack.das.issuer}|dev-user"
    # Dynamic client registration happened, with the client's redirect URI.
    assert storage.client_info is not None
    registered = stack.das.clients[storage.client_info.client_id]
    assert registered.redirect_uris == [REDIRECT_URI]
    # One authorization request: PKCE S256, the resource indicator, the scopes the 401 challenge named.
    (url,) = agent.authorization_urls
    assert url.startswith(stack.das.issuer + "/authorize?")
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert query["response_type"] == "code"
    assert query["resource"] == stack.url
    assert query["scope"] == "mcp:tools"
    # The token is for this resource and this user.
    assert storage.tokens is not None
    claims = decode(stack.das, storage.tokens.access_token)
    assert claims["aud"] == stack.url
    assert claims["sub"] == "dev-user"
    assert stack.recorder.names() == ["whoami"]
    assert stack.das.counts["token"] == 1


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@spec("step-up-authorization-flow", "runtime-insufficient-scope-errors")
async def test_the_official_oauth_client_steps_up_on_insufficient_scope(mode: str) -> None:
    async with running(das_scopes=(*SCOPES, "admin:delete")) as stack:
        agent, storage = UserAgent(), MemoryStorage()
        async with official(stack.url, mode, auth=oauth_provider(stack.url, agent, storage)) as client:
            assert text_of(await client.call_tool("whoami", {})) == f"{stack.das.issuer}|dev-user"
            # wipe needs mcp:write and admin:delete: 403 with both, re-authorization for the union, retry.
            assert text_of(await client.call_tool("wipe", {})) == "wiped"
        first, second = agent.authorization_urls
        assert parse_qs(urlsplit(first).query)["scope"] == ["mcp:tools"]
        assert set(parse_qs(urlsplit(second).query)["scope"][0].split()) == {"mcp:tools", *ADMIN_SCOPES}
        assert stack.recorder.names() == ["whoami", "wipe"]
        assert stack.recorder.calls[1][2] is not None
        assert set(ADMIN_SCOPES) <= stack.recorder.calls[1][2]


@pytest.mark.setting("WIREMCP_AUTH_RESOURCE", "WIREMCP_AUTH_ISSUER", "WIREMCP_AUTH_JWKS_URL", "WIREMCP_AUTH_SCOPES",
                     "WIREMCP_AUTH_SCOPES_SUPPORTED")
@spec("token-handling", "canonical-server-uri")
async def test_a_server_configured_from_the_environment_takes_the_public_url_as_resource_not_its_address() -> None:
    """``uvicorn app:asgi`` configured from ``WIREMCP_AUTH_*`` takes the public URL it is given
    (``WIREMCP_AUTH_RESOURCE``, where a proxy would serve it; none runs here) as its resource, not the address
    it listens on: tokens whose audience is the public URL are accepted, a 401's challenge points at the
    metadata at the public URL's origin, the document names the public URL, and a token for the listening
    address is refused."""
    public = "https://mcp.example.test/mcp"
    async with dev_auth_server() as das:
        env = {"WIREMCP_AUTH_RESOURCE": public, "WIREMCP_AUTH_ISSUER": das.issuer,
               "WIREMCP_AUTH_JWKS_URL": das.issuer + "/jwks", "WIREMCP_AUTH_SCOPES": "mcp:tools",
               "WIREMCP_AUTH_SCOPES_SUPPORTED": "mcp:tools mcp:read offline_access"}
        with run_uvicorn("tests.support.tokens:env_server", env) as process:
            # An uppercase scheme and host in the audience is the same resource (compared case-insensitively).
            token = das.issue(subject="carol", client_id="c", scope="mcp:tools", audience="HTTPS://MCP.Example.test/mcp")
            for mode in ("auto", "legacy"):
                async with official(process.url, mode, headers=bearer(token)) as client:
                    assert text_of(await client.call_tool("whoami", {})) == f"{das.issuer}|carol"
            async with httpx.AsyncClient(timeout=READ_BOUND) as http:
                refused = await http.post(process.url, content=json.dumps(stateless_call(1, "whoami")),
                                          headers=stateless_headers(stateless_call(1, "whoami")))
                assert refused.status_code == 401
                params = challenge_params(refused.headers["www-authenticate"])
                assert params == {"scope": "mcp:tools",
                                  "resource_metadata": "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"}
                document = (await http.get(process.base_url + WELL_KNOWN + "/mcp")).json()
                assert document["resource"] == public
                assert document["authorization_servers"] == [das.issuer]
                assert document["scopes_supported"] == ["mcp:tools", "mcp:read"]
                other = das.issue(subject="carol", client_id="c", scope="mcp:tools", audience=process.url)
                wrong = await http.post(process.url, content=json.dumps(stateless_call(2, "whoami")),
                                        headers=stateless_headers(stateless_call(2, "whoami"), other))
                assert wrong.status_code == 401  # the listening address is not the resource
            output = process.output()
    assert "Traceback" not in output, output
    assert token not in output  # tokens are never logged


# ================================================================================================================
# Attacks: refused with the right status, and no handler ever runs
# ================================================================================================================
def _headers(value: str | None) -> Callable[[Stack], tuple[str, dict[str, str]]]:
    def build(stack: Stack) -> tuple[str, dict[str, str]]:
        token = stack.token()
        return stack.url, ({} if value is None else {"authorization": value.format(token=token)})
    return build


def _token(make: Callable[[Stack], str]) -> Callable[[Stack], tuple[str, dict[str, str]]]:
    return lambda stack: (stack.url, bearer(make(stack)))


ATTACKS = [
    pytest.param(_headers(None), None, id="no-token"),
    pytest.param(_headers("Basic YWxpY2U6c2VjcmV0"), "invalid_token", id="basic"),
    pytest.param(_headers("Bearer"), "invalid_token", id="bearer-without-token"),
    pytest.param(_headers("Bearer {token} {token}"), "invalid_token", id="two-tokens"),
    pytest.param(_headers("{token}"), "invalid_token", id="no-scheme"),
    pytest.param(lambda s: (f"{s.url}?access_token={s.token()}", {}), "invalid_token", id="query-string"),
    pytest.param(lambda s: (f"{s.url}?access_token={s.token()}", bearer(s.token())), "invalid_token",
                 id="query-string-and-header"),
    pytest.param(_token(lambda s: "not-a-jwt"), "invalid_token", id="garbage"),
    pytest.param(_token(lambda s: s.token(ttl=-120)), "invalid_token", id="expired"),
    pytest.param(_token(lambda s: s.token(not_before=int(time.time()) + 600)), "invalid_token", id="not-yet-valid"),
    pytest.param(_token(lambda s: DevAuthServer(issuer="http://127.0.0.1:9", key=s.das.key).issue(
        subject="alice", client_id="c", scope="mcp:tools", audience=s.url)), "invalid_token", id="wrong-issuer"),
    pytest.param(_token(lambda s: s.token(audience=s.base + "/other")), "invalid_token", id="wrong-audience"),
    pytest.param(_token(lambda s: s.token(audience="http://127.0.0.1:9/mcp")), "invalid_token",
                 id="another-servers-audience"),
    pytest.param(_token(lambda s: s.das.issue(subject="alice", client_id="c", scope="mcp:tools", audience=None)),
                 "invalid_token", id="no-audience"),
    pytest.param(_token(lambda s: alg_none_token(s.das, s.url)), "invalid_token", id="alg-none"),
    pytest.param(_token(lambda s: hs256_with_public_key_token(s.das, s.url)), "invalid_token",
                 id="hs256-with-the-public-key"),
    pytest.param(_token(lambda s: foreign_key_token(s.das, s.url)), "invalid_token", id="unknown-kid"),
    pytest.param(_token(lambda s: foreign_key_token(s.das, s.url, kid=str(s.das.key.kid))), "invalid_token",
                 id="known-kid-wrong-key"),
]


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(("attack", "error"), ATTACKS)
@spec("token-handling", "token-audience-binding-and-validation", "error-handling",
      "protected-resource-metadata-discovery-requirements")
async def test_an_attack_gets_401_with_a_challenge_and_reaches_no_handler(
        attack: Callable[[Stack], tuple[str, dict[str, str]]], error: str | None, shared_stack: Stack) -> None:
    stack = shared_stack
    calls, sessions = len(stack.recorder.calls), await stack.mcp.manager.store.count()
    url, auth = attack(stack)
    # In the stateless era and in the handshake era (initialize), and on the legacy SSE endpoint.
    body = stateless_call(1, "whoami")
    responses = [
        await stack.http.post(url, content=json.dumps(body), headers={**stateless_headers(body), **auth}),
        await stack.http.post(url, content=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}),
            headers={**post_headers(), **auth}),
        await stack.http.get(url.replace("/mcp", "/sse", 1), headers=auth),
    ]
    for response in responses:
        assert response.status_code == 401, response.text
        assert response.json()["error"]["code"] == INVALID_REQUEST
        params = challenge_params(response.headers["www-authenticate"])
        expected = {"resource_metadata": stack.resource.metadata_url, "scope": "mcp:tools"}
        if error is not None:
            expected["error"] = error
        assert params == expected
        assert "mcp-session-id" not in response.headers
    assert len(stack.recorder.calls) == calls  # no handler ran
    assert await stack.mcp.manager.store.count() == sessions  # and no session was created
    # The control: the same server serves a valid token.
    assert (await stack.call(stack.token("control"))).status_code == 200
    assert stack.recorder.calls[calls:] == [("whoami", f"{stack.das.issuer}|control",
                                             frozenset({"mcp:tools", "mcp:read"}))]


@spec("token-handling")
async def test_two_authorization_headers_are_refused(stack: Stack) -> None:
    body = stateless_call(1, "whoami")
    headers = [(k, v) for k, v in stateless_headers(body).items()]
    headers += [("authorization", f"Bearer {stack.token('alice')}"), ("authorization", f"Bearer {stack.token('bob')}")]
    response = await stack.http.post(stack.url, content=json.dumps(body), headers=headers)
    assert response.status_code == 401
    assert challenge_params(response.headers["www-authenticate"])["error"] == "invalid_token"
    assert stack.recorder.calls == []


@spec("token-handling", "token-theft")
async def test_an_unknown_kid_triggers_at_most_one_jwks_refresh(stack: Stack) -> None:
    assert stack.das.counts["jwks"] == 0
    good = await stack.call(stack.token())
    assert good.status_code == 200
    assert stack.das.counts["jwks"] == 1
    # Right after a fetch, a forged kid does not even cause a refresh (at most one per refresh_interval).
    assert (await stack.call(foreign_key_token(stack.das, stack.url, kid="k0"))).status_code == 401
    assert stack.das.counts["jwks"] == 1
    # Later, a flood of forged kids (each different) makes exactly one refresh between them.
    stack.clock.advance(61)
    forged = [foreign_key_token(stack.das, stack.url, kid=f"k{i}") for i in range(1, 9)]
    answers = await asyncio.gather(*(stack.call(token, rid=i) for i, token in enumerate(forged)))
    assert [a.status_code for a in answers] == [401] * len(forged)
    assert all(challenge_params(a.headers["www-authenticate"])["error"] == "invalid_token" for a in answers)
    assert stack.das.counts["jwks"] == 2
    assert (await stack.call(stack.token(), rid=99)).status_code == 200
    assert stack.das.counts["jwks"] == 2
    assert stack.recorder.names() == ["whoami", "whoami"]


@spec("token-handling")
async def test_a_revoked_token_is_refused_by_introspection(introspected: Stack) -> None:
    stack = introspected
    assert stack.introspection_client is not None
    revoked, used = stack.token("alice"), stack.token("bob")
    revoke = await stack.http.post(stack.das.issuer + "/revoke", data={"token": revoked},
                                   auth=stack.introspection_client)
    assert revoke.status_code == 200
    refused = await stack.call(revoked)
    assert refused.status_code == 401
    assert challenge_params(refused.headers["www-authenticate"])["error"] == "invalid_token"
    # A token revoked after it was seen is refused once its cached answer is older than cache_ttl.
    assert (await stack.call(used)).status_code == 200
    await stack.http.post(stack.das.issuer + "/revoke", data={"token": used}, auth=stack.introspection_client)
    stack.clock.advance(61)
    assert (await stack.call(used)).status_code == 401
    assert stack.recorder.calls == [("whoami", f"{stack.das.issuer}|bob", frozenset({"mcp:tools", "mcp:read"}))]


@spec("token-theft", "confused-deputy-problem")
async def test_another_principals_session_is_unknown(stack: Stack) -> None:
    alice, bob = stack.token("alice"), stack.token("bob")
    async with httpx.AsyncClient(timeout=READ_BOUND, headers=bearer(alice)) as as_alice, \
            httpx.AsyncClient(timeout=READ_BOUND, headers=bearer(bob)) as as_bob:
        mine = await initialize(as_alice, stack.url, LEGACY)
        stolen = RawSession(as_bob, stack.url, mine.sid, LEGACY)
        response = await stolen.request("tools/call", {"name": "whoami", "arguments": {}})
        assert response.status_code == 404
        assert response.json()["error"]["code"] == INVALID_REQUEST
        assert (await stolen.get()).status_code == 404
        assert (await stolen.delete()).status_code == 404
        # Alice's session is intact, and she can still use it.
        assert await mine.tool("whoami") == f"{stack.das.issuer}|alice"
        # The legacy HTTP+SSE transport: Bob cannot post into Alice's stream either.
        base = stack.base
        async with as_alice.stream("GET", base + "/sse", headers={"accept": "text/event-stream"}) as stream:
            reader = SSEReader(stream)
            endpoint = await reader.next()
            assert endpoint.event == "endpoint"
            assert endpoint.data is not None
            message = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                  "params": {"name": "whoami", "arguments": {}}})
            posted = await as_bob.post(base + endpoint.data, content=message,
                                       headers={"content-type": "application/json"})
            assert posted.status_code == 404
    assert stack.recorder.calls == [("whoami", f"{stack.das.issuer}|alice", frozenset({"mcp:tools", "mcp:read"}))]


@spec("runtime-insufficient-scope-errors", "scope-challenge-handling", "access-token-privilege-restriction")
async def test_insufficient_scope_gets_403_with_every_scope_needed(stack: Stack) -> None:
    narrow = stack.token("alice", "mcp:tools mcp:read")
    response = await stack.call(narrow, "wipe")  # stateless era
    async with httpx.AsyncClient(timeout=READ_BOUND, headers=bearer(narrow)) as http:
        session = await initialize(http, stack.url, LEGACY)  # handshake era
        in_session = await session.request("tools/call", {"name": "wipe", "arguments": {}})
        prompt = await session.request("prompts/get", {"name": "audit"})
    for answer in (response, in_session, prompt):
        assert answer.status_code == 403, answer.text
        params = challenge_params(answer.headers["www-authenticate"])
        assert params["error"] == "insufficient_scope"
        assert params["scope"] == "mcp:write admin:delete"
        assert params["resource_metadata"] == stack.resource.metadata_url
        error = answer.json()["error"]
        assert error["data"]["requiredScopes"] == ADMIN_SCOPES
    assert stack.recorder.calls == []
    # Lists hide what the caller may not use.
    assert "wipe" not in await stack.list(narrow)
    assert await stack.list(narrow, "prompts/list") == ["hello"]
    # A broader scope covers a narrower one: admin covers admin:delete.
    broad = stack.token("root", "mcp:tools mcp:write admin")
    assert "wipe" in await stack.list(broad)
    assert "audit" in await stack.list(broad, "prompts/list")
    done = await stack.call(broad, "wipe")
    assert done.status_code == 200
    assert done.json()["result"]["content"][0]["text"] == "wiped"
    assert stack.recorder.names() == ["wipe"]


@spec("runtime-insufficient-scope-errors")
async def test_unfiltered_lists_show_the_tool_but_calling_it_still_needs_the_scopes() -> None:
    async with running(filter_lists_by_scope=False) as stack:
        narrow = stack.token("alice", "mcp:tools")
        assert "wipe" in await stack.list(narrow)
        assert (await stack.call(narrow, "wipe")).status_code == 403
        assert stack.recorder.calls == []


@spec("error-handling", "access-token-privilege-restriction")
async def test_a_token_without_the_servers_required_scopes_gets_403(stack: Stack) -> None:
    response = await stack.call(stack.token("alice", "mcp:read"))
    assert response.status_code == 403
    assert challenge_params(response.headers["www-authenticate"]) == {
        "error": "insufficient_scope", "scope": "mcp:tools", "resource_metadata": stack.resource.metadata_url}
    assert stack.recorder.calls == []


# ================================================================================================================
# Metadata discovery
# ================================================================================================================
def check_document(response: httpx.Response, stack: Stack) -> ProtectedResourceMetadata:
    """RFC 9728 §3.2: 200, application/json, the configured resource, at least one AS, header bearer only."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    document = response.json()
    metadata = ProtectedResourceMetadata.model_validate(document)
    assert document["resource"] == stack.url
    assert document["authorization_servers"] == [stack.das.issuer]
    assert document["bearer_methods_supported"] == ["header"]
    assert "offline_access" not in document["scopes_supported"]
    assert document["scopes_supported"] == list(SCOPES)
    return metadata


@pytest.mark.parametrize("prefix", ["", "/api"], ids=["root", "mounted-under-a-prefix"])
@spec("protected-resource-metadata-discovery-requirements", "authorization-server-location",
      "authorization-server-metadata-discovery")
async def test_metadata_is_found_from_the_challenge_and_from_the_well_known_urls(prefix: str) -> None:
    async with running(prefix=prefix, scopes_supported=(*SCOPES, "offline_access")) as stack:
        assert stack.url == f"{stack.base}{prefix}/mcp"
        # A client that starts from the 401.
        refused = await stack.call(None)
        assert refused.status_code == 401
        pointer = challenge_params(refused.headers["www-authenticate"])["resource_metadata"]
        assert pointer == f"{stack.base}{WELL_KNOWN}{prefix}/mcp"
        check_document(await stack.http.get(pointer), stack)
        # A client that starts from the well-known URLs: path-inserted first, then the root.
        path_inserted, root = build_protected_resource_metadata_discovery_urls(None, stack.url)
        assert path_inserted == pointer
        assert root == stack.base + WELL_KNOWN
        for url in (path_inserted, root):
            metadata = check_document(await stack.http.get(url), stack)
            # ... and then the authorization server's own metadata (RFC 8414), as the AS names it.
            issuer = str(metadata.authorization_servers[0]).rstrip("/")
            as_metadata = OAuthMetadata.model_validate(
                (await stack.http.get(issuer + "/.well-known/oauth-authorization-server")).json())
            assert str(as_metadata.issuer).rstrip("/") == stack.das.issuer
            assert as_metadata.code_challenge_methods_supported == ["S256"]
        # Metadata needs no token (a bad one does not matter), HEAD works, other methods do not.
        assert (await stack.http.get(pointer, headers={"authorization": "Bearer junk"})).status_code == 200
        assert (await stack.http.head(root)).status_code == 200
        assert (await stack.http.post(root)).status_code == 405
        # Another path under the well-known prefix is no metadata: at the root it is the MCP app's (auth first).
        elsewhere = await stack.http.get(stack.base + WELL_KNOWN + "/elsewhere")
        assert elsewhere.status_code == (404 if prefix else 401)
        # The SDK's OAuth client finds all of it by itself, and its tool call works.
        agent, storage = UserAgent(), MemoryStorage()
        async with official(stack.url, "auto", auth=oauth_provider(stack.url, agent, storage)) as client:
            assert text_of(await client.call_tool("whoami", {})) == f"{stack.das.issuer}|dev-user"
        assert storage.tokens is not None
        assert decode(stack.das, storage.tokens.access_token)["aud"] == stack.url
        assert stack.recorder.names() == ["whoami"]


# ================================================================================================================
# Caching
# ================================================================================================================
BURST = 1000


async def burst(stack: Stack, token: str) -> None:
    """1,000 concurrent ``tools/call`` straight into the guarded app (no socket: the burst is the point, not
    the client's HTTP stack); the verifier reaches the AS over its real socket."""
    body = stateless_call(1, "whoami")
    payload, headers = json.dumps(body).encode(), stateless_headers(body, token)
    answers = await asyncio.gather(*(asgi_request(stack.mcp, "POST", payload, headers, path="/mcp")
                                     for _ in range(BURST)))
    assert [a.status for a in answers] == [200] * BURST
    assert len(stack.recorder.calls) == BURST


@spec("token-handling")
async def test_a_burst_of_in_process_calls_with_one_token_fetches_the_jwks_over_http_once(stack: Stack) -> None:
    await burst(stack, stack.token())
    assert stack.das.counts["jwks"] == 1
    assert isinstance(stack.verifier, JWKSVerifier)
    assert stack.verifier.fetches == 1


@spec("token-handling")
async def test_a_burst_of_in_process_calls_with_one_token_introspects_over_http_once(introspected: Stack) -> None:
    await burst(introspected, introspected.token())
    assert introspected.das.counts["introspect"] == 1
    assert isinstance(introspected.verifier, IntrospectionVerifier)
    assert introspected.verifier.calls == 1


# ================================================================================================================
# Principals: refreshed tokens keep sessions; requestState stays with its principal
# ================================================================================================================
async def authorization_code_tokens(stack: Stack, http: httpx.AsyncClient) -> tuple[dict[str, Any], tuple[str, str]]:
    """Register, authorize with PKCE and redeem the code by hand; returns the token response and the client."""
    import base64
    import hashlib
    import secrets

    registered = (await http.post(stack.das.issuer + "/register", json={
        "redirect_uris": [REDIRECT_URI], "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "client_secret_basic", "client_name": "by hand"})).json()
    client = (registered["client_id"], registered["client_secret"])
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    authorized = await http.get(stack.das.issuer + "/authorize", params={
        "response_type": "code", "client_id": client[0], "redirect_uri": REDIRECT_URI, "state": "s1",
        "code_challenge": challenge, "code_challenge_method": "S256", "scope": "mcp:tools mcp:read",
        "resource": stack.url})
    assert authorized.status_code == 302
    code, state, iss = authorization_code(authorized.headers["location"])
    assert (state, iss) == ("s1", stack.das.issuer)
    tokens = (await http.post(stack.das.issuer + "/token", auth=client, data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI,
        "code_verifier": verifier, "resource": stack.url})).json()
    return tokens, client


@spec("token-requirements")
async def test_a_session_survives_its_principal_refreshing_the_token(stack: Stack) -> None:
    tokens, client = await authorization_code_tokens(stack, stack.http)
    first = tokens["access_token"]
    seen: list[httpx2.Request] = []

    async def record(request: httpx2.Request) -> None:
        seen.append(request)

    async with httpx2.AsyncClient(headers=bearer(first), timeout=httpx2.Timeout(WAIT),
                                  event_hooks={"request": [record]}) as http, \
            Client(streamable_http_client(stack.url, http_client=http), mode="legacy",
                   read_timeout_seconds=WAIT) as mcp_client:
        assert text_of(await mcp_client.call_tool("whoami", {})) == f"{stack.das.issuer}|dev-user"
        refreshed = (await stack.http.post(stack.das.issuer + "/token", auth=client, data={
            "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
            "resource": stack.url})).json()
        second = refreshed["access_token"]
        assert second != first
        old, new = decode(stack.das, first), decode(stack.das, second)
        assert (old["iss"], old["sub"]) == (new["iss"], new["sub"])
        assert old["jti"] != new["jti"]
        http.headers["authorization"] = f"Bearer {second}"
        assert text_of(await mcp_client.call_tool("whoami", {})) == f"{stack.das.issuer}|dev-user"
    session_ids = {r.headers["mcp-session-id"] for r in seen if "mcp-session-id" in r.headers}
    assert len(session_ids) == 1
    used = [r.headers["authorization"] for r in seen if r.method == "POST" and b"tools/call" in r.content]
    assert used == [f"Bearer {first}", f"Bearer {second}"]
    assert [key for _, key, _ in stack.recorder.calls] == [f"{stack.das.issuer}|dev-user"] * 2


@spec("confused-deputy-problem", "token-theft")
async def test_request_state_stays_with_the_principal_it_was_issued_to(stack: Stack) -> None:
    alice, bob = stack.token("alice"), stack.token("bob")
    first = await stack.call(alice, "book", 1, {"city": "Oslo"})
    assert first.status_code == 200, first.text
    round_1 = first.json()["result"]
    assert round_1["resultType"] == "input_required"
    (key,) = round_1["inputRequests"]
    retry = {"inputResponses": {key: {"action": "accept", "content": {"value": "May 3-5"}}},
             "requestState": round_1["requestState"]}
    stolen = await stack.call(bob, "book", 2, {"city": "Oslo"}, **retry)
    assert stolen.status_code in (200, 400)  # the spec leaves the status open; the code is what counts
    error = stolen.json()["error"]
    assert error["code"] == INVALID_PARAMS
    assert "another principal" in error["message"]
    assert stack.recorder.calls == [("book", f"{stack.das.issuer}|alice", frozenset({"mcp:tools", "mcp:read"}))]
    # Alice's own retry completes, even with a refreshed token (same issuer and subject).
    done = await stack.call(stack.token("alice"), "book", 3, {"city": "Oslo"}, **retry)
    assert done.status_code == 200
    assert done.json()["result"]["content"][0]["text"] == "Oslo: May 3-5"
    assert [key for _, key, _ in stack.recorder.calls] == [f"{stack.das.issuer}|alice"] * 2


@spec("runtime-insufficient-scope-errors", "access-token-privilege-restriction")
async def test_a_batch_cannot_get_around_the_scopes(stack: Stack) -> None:
    """2025-03-26 clients may batch: each request of a batch is checked against the caller's scopes too."""
    narrow = stack.token("alice", "mcp:tools mcp:read")
    async with httpx.AsyncClient(timeout=READ_BOUND, headers=bearer(narrow)) as http:
        session = await initialize(http, stack.url, "2025-03-26")
        batch = [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wipe", "arguments": {}}},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                 {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}]
        response = await session.post(batch)
    assert response.status_code == 200, response.text
    answers = {answer["id"]: answer for answer in response.json()}
    assert answers[1]["error"]["data"]["requiredScopes"] == ADMIN_SCOPES
    assert "wipe" not in [tool["name"] for tool in answers[2]["result"]["tools"]]
    assert answers[3]["result"]["content"][0]["text"] == f"{stack.das.issuer}|alice"
    assert stack.recorder.calls == [("whoami", f"{stack.das.issuer}|alice", frozenset({"mcp:tools", "mcp:read"}))]
