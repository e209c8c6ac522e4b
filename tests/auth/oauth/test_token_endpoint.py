"""The client's side of the OAuth server, attacked: a code needs its PKCE verifier and works once (a second use
revokes what the first got), a refresh token works once (a reuse revokes the family), tokens are for this resource
only, clients authenticate as registered, registration follows its rules and its limit, and revocation and
introspection do what RFC 7009 and 7662 say. Every token is then tried where it matters: on the MCP endpoint.
"""

from __future__ import annotations

import base64

import httpx
import orjson
import pytest
from joserfc import jwt

from tests.support.http import ACCEPT_BOTH, CLIENT_INFO
from tests.support.oauth_flow import REDIRECT, VERIFIER, Provider, UserAgent, serving
from wiremcp.auth.oauth.sealing import digest
from wiremcp.auth.oauth.server import UPSTREAM_PURPOSE, OAuthServer
from wiremcp.auth.oauth.tokens import Grant

pytestmark = pytest.mark.timeout(120)



async def register(http: httpx.AsyncClient, oauth: OAuthServer, **document: object) -> dict[str, object]:
    answer = await http.post(oauth.url("register"), json={"redirect_uris": [REDIRECT], "client_name": "CLI",
                                                          "token_endpoint_auth_method": "none", **document})
    assert answer.status_code == 201, answer.text
    body: dict[str, object] = answer.json()
    return body


async def signed_in_code(oauth_provider: Provider, oauth: OAuthServer, client_id: str) -> str:
    agent = UserAgent(oauth_provider)
    try:
        return (await agent.code(oauth, client_id))["code"]
    finally:
        await agent.aclose()


async def exchange(http: httpx.AsyncClient, oauth: OAuthServer, client_id: str, code: str,
                   **changes: str | None) -> httpx.Response:
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
            "code_verifier": VERIFIER, "resource": oauth.resource, **changes}
    return await http.post(oauth.url("token"), data={k: v for k, v in form.items() if v is not None})


async def refresh(http: httpx.AsyncClient, oauth: OAuthServer, client_id: str, token: str) -> httpx.Response:
    return await http.post(oauth.url("token"), data={"grant_type": "refresh_token", "refresh_token": token,
                                                     "client_id": client_id})


async def mcp_status(http: httpx.AsyncClient, oauth: OAuthServer, access_token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO}}
    answer = await http.post(oauth.resource, json=body, headers={"accept": ACCEPT_BOTH,
                                                                 "authorization": f"Bearer {access_token}"})
    return answer.status_code


async def test_a_code_and_its_verifier_give_tokens_the_mcp_endpoint_takes(oauth_provider: Provider) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        client = await register(http, oauth)
        answer = await exchange(http, oauth, str(client["client_id"]), await signed_in_code(oauth_provider, oauth, str(client["client_id"])))
        tokens = answer.json()
        assert answer.status_code == 200, answer.text
        assert answer.headers["cache-control"] == "no-store"
        assert (tokens["token_type"], tokens["scope"], tokens["expires_in"]) == ("Bearer", "notes:read", 300)
        assert await mcp_status(http, oauth, tokens["access_token"]) == 200
        assert await mcp_status(http, oauth, tokens["access_token"][:-4] + "AAAA") == 401


@pytest.mark.parametrize(("changes", "error", "description"), [
    ({"code_verifier": "w" * 50}, "invalid_grant", "code_verifier does not match"),
    ({"code_verifier": None}, "invalid_grant", "code_verifier does not match"),
    ({"redirect_uri": "http://127.0.0.1:2/callback"}, "invalid_grant", "redirect_uri is not the one"),
    ({"resource": "https://other.example.com/mcp"}, "invalid_target", "issues tokens for"),
    ({"grant_type": "password"}, "unsupported_grant_type", "grant_type is"),
])
async def test_a_code_exchanged_wrongly_is_refused(oauth_provider: Provider, changes: dict[str, str | None], error: str,
                                                   description: str) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        client_id = str((await register(http, oauth))["client_id"])
        answer = await exchange(http, oauth, client_id, await signed_in_code(oauth_provider, oauth, client_id), **changes)
    assert answer.status_code == 400
    assert answer.json()["error"] == error
    assert description in answer.json()["error_description"]


async def test_a_code_used_twice_revokes_the_tokens_of_its_first_use(oauth_provider: Provider) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        client_id = str((await register(http, oauth))["client_id"])
        code = await signed_in_code(oauth_provider, oauth, client_id)
        first = (await exchange(http, oauth, client_id, code)).json()
        assert await mcp_status(http, oauth, first["access_token"]) == 200
        second = await exchange(http, oauth, client_id, code)
        assert second.status_code == 400
        assert second.json() == {"error": "invalid_grant", "error_description":
                                 "the code was already used: the tokens issued for it are revoked"}
        assert await mcp_status(http, oauth, first["access_token"]) == 401
        assert (await refresh(http, oauth, client_id, first["refresh_token"])).json()["error"] == "invalid_grant"


async def test_a_refresh_token_reused_after_rotation_revokes_its_family(oauth_provider: Provider) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        client_id = str((await register(http, oauth))["client_id"])
        first = (await exchange(http, oauth, client_id, await signed_in_code(oauth_provider, oauth, client_id))).json()
        rotated = (await refresh(http, oauth, client_id, first["refresh_token"])).json()
        assert rotated["refresh_token"] != first["refresh_token"]
        assert await mcp_status(http, oauth, rotated["access_token"]) == 200
        reused = await refresh(http, oauth, client_id, first["refresh_token"])
        assert reused.json() == {"error": "invalid_grant",
                                 "error_description": "the refresh token was already used: its tokens are revoked"}
        assert (await refresh(http, oauth, client_id, rotated["refresh_token"])).json()["error"] == "invalid_grant"
        assert await mcp_status(http, oauth, rotated["access_token"]) == 401


async def test_a_token_for_another_resource_is_refused_by_the_mcp_endpoint(oauth_provider: Provider) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        grant = Grant("someone", "ada", ("notes:read",), "https://other.example.com/mcp")
        code = await oauth.tokens.code(grant, redirect_uri=REDIRECT, code_challenge="c" * 43)
        issued = await oauth.tokens.redeem(code, client_id="someone", redirect_uri=REDIRECT,
                                           check_verifier=lambda _: True)
        assert await mcp_status(http, oauth, issued.access_token) == 401


async def test_clients_authenticate_as_they_registered(oauth_provider: Provider) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        confidential = await register(http, oauth, token_endpoint_auth_method="client_secret_basic")
        public = await register(http, oauth)
        client_id, secret = str(confidential["client_id"]), str(confidential["client_secret"])
        code = await signed_in_code(oauth_provider, oauth, client_id)
        basic = base64.b64encode(f"{client_id}:wrong".encode()).decode()
        wrong = await http.post(oauth.url("token"), headers={"authorization": f"Basic {basic}"},
                                data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                                      "code_verifier": VERIFIER})
        no_secret = await exchange(http, oauth, client_id, code)
        public_with_secret = await http.post(oauth.url("token"), data={
            "grant_type": "refresh_token", "refresh_token": "x.y", "client_id": str(public["client_id"]),
            "client_secret": "anything"})
        good = await http.post(oauth.url("token"), auth=(client_id, secret), data={
            "grant_type": "authorization_code", "code": await signed_in_code(oauth_provider, oauth, client_id),
            "redirect_uri": REDIRECT, "code_verifier": VERIFIER})
    assert (wrong.status_code, wrong.json()["error"]) == (401, "invalid_client")
    assert wrong.headers["www-authenticate"] == 'Basic realm="oauth"'
    assert (no_secret.status_code, no_secret.json()["error"]) == (401, "invalid_client")
    assert (public_with_secret.status_code, public_with_secret.json()["error"]) == (401, "invalid_client")
    assert good.status_code == 200, good.text


async def test_registration_refuses_what_breaks_its_rules_and_floods(oauth_provider: Provider) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        bad_redirect = await http.post(oauth.url("register"), json={"redirect_uris": ["http://evil.example.com/cb"]})
        not_json = await http.post(oauth.url("register"), content=b"{", headers={"content-type": "application/json"})
        statuses = [(await http.post(oauth.url("register"), json={"redirect_uris": [REDIRECT]})).status_code
                    for _ in range(21)]
    assert (bad_redirect.status_code, bad_redirect.json()["error"]) == (400, "invalid_redirect_uri")
    assert (not_json.status_code, not_json.json()["error"]) == (400, "invalid_client_metadata")
    assert statuses[:18] == [201] * 18  # the two refused above count too: 20 an hour from one address
    assert statuses[-1] == 429


async def test_revoking_a_refresh_token_or_an_access_token_ends_both(oauth_provider: Provider) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        client_id = str((await register(http, oauth))["client_id"])
        for which in ("refresh_token", "access_token"):
            tokens = (await exchange(http, oauth, client_id, await signed_in_code(oauth_provider, oauth, client_id))).json()
            revoked = await http.post(oauth.url("revoke"), data={"token": tokens[which], "client_id": client_id})
            assert revoked.status_code == 200
            assert await mcp_status(http, oauth, tokens["access_token"]) == 401, which
            assert (await refresh(http, oauth, client_id, tokens["refresh_token"])).json()["error"] == "invalid_grant"
        unknown = await http.post(oauth.url("revoke"), data={"token": "whatever", "client_id": client_id})
        assert unknown.status_code == 200  # RFC 7009: nobody learns which tokens exist


async def test_introspection_answers_confidential_clients_about_this_servers_tokens(oauth_provider: Provider) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        public = str((await register(http, oauth))["client_id"])
        tokens = (await exchange(http, oauth, public, await signed_in_code(oauth_provider, oauth, public))).json()
        confidential = await register(http, oauth, token_endpoint_auth_method="client_secret_post")
        credentials = {"client_id": str(confidential["client_id"]), "client_secret": str(confidential["client_secret"])}
        active = await http.post(oauth.url("introspect"), data={"token": tokens["access_token"], **credentials})
        inactive = await http.post(oauth.url("introspect"), data={"token": "nope", **credentials})
        refused = await http.post(oauth.url("introspect"), data={"token": tokens["access_token"], "client_id": public})
    assert active.json()["active"] is True
    assert active.json()["sub"] == oauth_provider.idp.issuer.split("/o")[0] or active.json()["sub"]
    assert active.json()["aud"] == oauth.resource
    assert inactive.json() == {"active": False}
    assert refused.status_code == 401


async def test_the_metadata_and_keys_say_what_clients_need(oauth_provider: Provider) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        metadata = (await http.get(f"{oauth.issuer}/.well-known/oauth-authorization-server")).json()
        resource = (await http.get(f"{oauth.issuer}/.well-known/oauth-protected-resource/mcp")).json()
        keys = (await http.get(metadata["jwks_uri"])).json()
    assert metadata["issuer"] == oauth.issuer
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert metadata["registration_endpoint"] == oauth.url("register")
    assert resource["authorization_servers"] == [oauth.issuer]
    assert [k["alg"] for k in keys["keys"]] == ["ES256"]
    assert all("d" not in k for k in keys["keys"])


async def test_one_address_gets_60_token_requests_a_minute(oauth_provider: Provider) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        statuses = [(await http.post(oauth.url("token"), data={"grant_type": "refresh_token", "refresh_token": "x.y",
                                                                "client_id": "nobody"})).status_code
                    for _ in range(61)]
    assert statuses[:60] == [401] * 60
    assert statuses[60] == 429


async def test_no_code_or_token_reaches_a_log(oauth_provider: Provider, caplog: pytest.LogCaptureFixture) -> None:
    """A whole sign-in, a refresh, a reuse and a second use of the code, every logger at DEBUG: no record of the
    server's (wiremcp's, uvicorn's) holds a code or a token. (The test's own HTTP client traces the headers it
    receives at DEBUG, the code in a Location among them: that is the browser's side, not the server's.)"""
    caplog.set_level("DEBUG")
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        client_id = str((await register(http, oauth))["client_id"])
        code = await signed_in_code(oauth_provider, oauth, client_id)
        tokens = (await exchange(http, oauth, client_id, code)).json()
        rotated = (await refresh(http, oauth, client_id, tokens["refresh_token"])).json()
        await refresh(http, oauth, client_id, tokens["refresh_token"])  # a reuse: the family is revoked
        await exchange(http, oauth, client_id, code)  # a second use of the code
        await mcp_status(http, oauth, rotated["access_token"])
        subject = jwt.decode(tokens["access_token"], await oauth.tokens.keys.key_set()).claims["sub"]
        kept = await oauth.store.get("upstream", digest(subject))
        assert kept is not None
        provider_tokens = orjson.loads(oauth.seal.open(str(kept["sealed"]), UPSTREAM_PURPOSE))
    secrets_seen = [code, tokens["access_token"], tokens["refresh_token"], rotated["access_token"],
                    rotated["refresh_token"], provider_tokens["access_token"], provider_tokens["refresh_token"]]
    ours = [record for record in caplog.records if record.name.startswith(("wiremcp", "uvicorn"))]
    logged = "\n".join(record.getMessage() for record in ours)
    assert ours  # the server logged, at DEBUG
    for secret in secrets_seen:
        assert secret not in logged
        assert secret.split(".")[-1] not in logged  # not even a part of one
