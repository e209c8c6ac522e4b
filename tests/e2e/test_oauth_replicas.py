"""The OAuth server on two replicas behind the shipped nginx configuration (round robin, no affinity) on one Redis:
a sign-in started on one replica ends on the other, a replica restarted between the consent and the token exchange
loses nothing, and a replica given another ``WIREMCP_OAUTH_SECRET`` refuses to sign or verify rather than issue
tokens nobody else can check.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

import httpx
import pytest

from deploy.nginx import Nginx
from deploy.processes import free_port
from tests.support.http import UvicornProcess, bound_socket, run_uvicorn_on
from tests.support.idp import running_idp
from tests.support.oauth_flow import REDIRECT, VERIFIER, Remote, UserAgent
from tests.support.oauth_flow import Provider as IdP
from tests.support.redis import run_redis

pytestmark = [pytest.mark.timeout(180)]

SERVER = "tests.support.oauth_flow:whoami_server"
SECRET = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I"
OTHER_SECRET = "b3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXItb3Q"


def stateless_whoami(token: object) -> tuple[dict[str, object], dict[str, str]]:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {},
                                                                          "_meta": meta}}
    return body, {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
                  "mcp-method": "tools/call", "mcp-name": "whoami", "authorization": f"Bearer {token}"}


@pytest.mark.setting("WIREMCP_OAUTH_SECRET")
async def test_a_sign_in_moves_between_replicas_survives_a_restart_and_needs_one_secret(tmp_path: Path) -> None:
    """On one server (the grant store's contract suite holds Redis 7 and Valkey 8 alike: the server does not matter
    here, the replicas do)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    sockets = [bound_socket(), bound_socket()]
    with contextlib.ExitStack() as stack, running_idp(tmp_path / "idp", redirect_uri=f"{base}/oauth/callback") as idp, \
            run_redis() as redis_server:
        for sock in sockets:
            stack.callback(sock.close)
        env = {"WIREMCP_REDIS_URL": redis_server.url, "WIREMCP_REDIS_PREFIX": f"t{uuid.uuid4().hex[:10]}",
               "WIREMCP_AUTH_RESOURCE": f"{base}/mcp", "WIREMCP_AUTH_SCOPES_SUPPORTED": "notes:read",
               "WIREMCP_OAUTH_PROVIDER": "oidc", "WIREMCP_OAUTH_DISCOVERY_URL": idp.discovery_url,
               "WIREMCP_OAUTH_CLIENT_ID": idp.client_id, "WIREMCP_OAUTH_CLIENT_SECRET": idp.client_secret,
               "WIREMCP_OAUTH_SECRET": SECRET}

        def replica(index: int, **changes: str) -> contextlib.AbstractContextManager[UvicornProcess]:
            return run_uvicorn_on(sockets[index], SERVER, {**env, **changes})

        a = stack.enter_context(replica(0))
        stack.enter_context(replica(1))
        nginx = stack.enter_context(Nginx([("127.0.0.1", sockets[0].getsockname()[1]),
                                           ("127.0.0.1", sockets[1].getsockname()[1])], port=port))
        remote = Remote(base, f"{base}/mcp")
        agent = UserAgent(IdP(idp, sockets[0]))
        try:
            async with httpx.AsyncClient(timeout=30) as http:
                registered = await http.post(remote.url("register"), json={"redirect_uris": [REDIRECT],
                                                                           "token_endpoint_auth_method": "none"})
                client_id = registered.json()["client_id"]
                back = await agent.code(remote, client_id)
                # the replica that began the sign-in is restarted before the client exchanges its code
                a.stop_and_wait()
                stack.enter_context(replica(0))
                exchanged = await http.post(remote.url("token"), data={
                    "grant_type": "authorization_code", "code": back["code"], "redirect_uri": REDIRECT,
                    "client_id": client_id, "code_verifier": VERIFIER, "resource": remote.resource})
                tokens = exchanged.json()
                body, headers = stateless_whoami(tokens["access_token"])
                answers = [await http.post(remote.resource, json=body, headers=headers) for _ in range(2)]
                refreshed = await http.post(remote.url("token"), data={
                    "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id})
        finally:
            await agent.aclose()
        routed = nginx.routed()
        # a third replica on the same Redis, given another secret: it can open neither the keys nor the tokens
        third = bound_socket()
        stack.callback(third.close)
        with run_uvicorn_on(third, SERVER, {**env, "WIREMCP_OAUTH_SECRET": OTHER_SECRET}) as other:
            async with httpx.AsyncClient(timeout=30) as http:
                keys = await http.get(f"{other.base_url}/oauth/jwks")
                body, headers = stateless_whoami(tokens["access_token"])
                call = await http.post(f"{other.base_url}/mcp", json=body, headers=headers)
            said = other.output()
    steps = [(r.path.split("?")[0], r.replica) for r in routed if r.path.startswith("/oauth/")]
    assert [path for path, _ in steps] == ["/oauth/register", "/oauth/authorize", "/oauth/callback", "/oauth/consent",
                                           "/oauth/token", "/oauth/token"]
    replicas = [replica for _, replica in steps]
    assert replicas[1] != replicas[2], steps  # the sign-in began on one replica and went on on the other
    assert replicas[3] != replicas[4], steps  # the code, given by one, was exchanged on the other (just restarted)
    assert exchanged.status_code == 200, exchanged.text
    assert [a.status_code for a in answers] == [200, 200]
    assert {r.replica for r in routed if r.path == "/mcp"} == {0, 1}  # each replica took the token
    assert refreshed.status_code == 200, refreshed.text
    assert (keys.status_code, keys.json()["error"]) == (503, "temporarily_unavailable")
    assert call.status_code == 503
    assert "give every replica the same WIREMCP_OAUTH_SECRET" in said
