"""The browser's side of the OAuth server, attacked: a client or redirect URI it does not know is an error page,
never a redirect; every other refusal goes back to the client with ``state`` and ``iss``; the sign-in is bound to
the browser that started it; the consent form needs its CSRF token; a consent is answered once and remembered.

A client named by its metadata document (a ``client_id`` URL) is fetched by the real fetcher from a real HTTPS
client site (``tests/support/client_site.py``, with a certificate authority made for the module): a URL that cannot
name a document, and each refusal of the fetcher, is an error page saying why.

A real identity provider signs the user in (django-oauth-toolkit, started once for this module); the user agent is
HTTP (``tests/support/oauth_flow.py``), so that a test can send what a browser would not.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from html import unescape
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.client_site import ClientSite, document, json_answer, serving_site
from tests.support.oauth_flow import REDIRECT, Provider, UserAgent, authorize_url, query, serving
from tests.support.tls import Certificates, make_certificates
from wiremcp.auth.oauth.metadata_fetcher import MAX_BYTES, TIMEOUT, MetadataFetcher
from wiremcp.auth.oauth.server import Identity, OAuthServer
from wiremcp.transports.asgi import SendASGI

pytestmark = pytest.mark.timeout(120)



async def registered(oauth: OAuthServer, redirect_uri: str = REDIRECT) -> str:
    client, _ = await oauth.registrations.register({"redirect_uris": [redirect_uri], "client_name": "Notes CLI",
                                                    "token_endpoint_auth_method": "none"}, "test")
    return client.client_id


async def test_an_unknown_client_or_a_redirect_uri_it_did_not_register_is_a_page_not_a_redirect(
        oauth_provider: Provider) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        client_id = await registered(oauth)
        unknown = await http.get(authorize_url(oauth, "nobody"))
        elsewhere = await http.get(authorize_url(oauth, client_id, redirect_uri="https://evil.example.com/cb"))
        other_port_not_loopback = await http.get(authorize_url(oauth, client_id, redirect_uri="http://127.0.0.2:1/callback"))
        missing = await http.get(authorize_url(oauth, client_id, redirect_uri=None))
    assert (unknown.status_code, "unknown client_id" in unknown.text) == (400, True)
    for page in (elsewhere, other_port_not_loopback):
        assert page.status_code == 400
        assert "not one the client registered" in page.text
        assert "location" not in page.headers
    assert missing.status_code == 400
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


@pytest.mark.parametrize(("overrides", "error", "description"), [
    ({"code_challenge": None}, "invalid_request", "PKCE is required"),
    ({"code_challenge_method": "plain"}, "invalid_request", "PKCE is required"),
    ({"code_challenge": "short"}, "invalid_request", "not an S256 challenge"),
    ({"response_type": "token"}, "unsupported_response_type", "response_type is code"),
    ({"resource": "https://other.example.com/mcp"}, "invalid_target", "issues tokens for"),
    ({"scope": "notes:read admin"}, "invalid_scope", "unknown scopes: admin"),
])
async def test_a_bad_request_goes_back_to_the_client_with_its_error_state_and_issuer(
        oauth_provider: Provider, overrides: dict[str, str | None], error: str, description: str) -> None:
    async with serving(oauth_provider) as oauth, httpx.AsyncClient() as http:
        answer = await http.get(authorize_url(oauth, await registered(oauth), **overrides))
    assert answer.status_code == 302
    location = answer.headers["location"]
    assert location.startswith(REDIRECT + "?")
    back = query(location)
    assert (back["error"], back["state"], back["iss"]) == (error, "st-1", oauth.issuer)
    assert description in back["error_description"]


async def test_a_signed_in_user_who_allows_gets_a_code_and_state_and_is_not_asked_again(oauth_provider: Provider) -> None:
    agent = UserAgent(oauth_provider)
    try:
        async with serving(oauth_provider) as oauth:
            client_id = await registered(oauth)
            page = await agent.consent_page(authorize_url(oauth, client_id))
            for shown in ("Notes CLI", "which registered itself", "127.0.0.1:1", "notes:read", oauth_provider.idp.email,
                          "an application on this computer"):
                assert shown in page.response.text, shown
            assert "form-action 'self' http://127.0.0.1:1" in page.response.headers["content-security-policy"]
            back = query((await agent.answer(page)).headers["location"])
            again = await agent.follow(authorize_url(oauth, client_id, state="st-2"))
    finally:
        await agent.aclose()
    assert set(back) == {"code", "state", "iss"}
    assert (back["state"], back["iss"]) == ("st-1", oauth.issuer)
    assert again.is_redirect  # remembered: no page
    assert query(again.headers["location"])["state"] == "st-2"


async def test_a_user_who_denies_sends_the_client_access_denied(oauth_provider: Provider) -> None:
    agent = UserAgent(oauth_provider)
    try:
        async with serving(oauth_provider) as oauth:
            page = await agent.consent_page(authorize_url(oauth, await registered(oauth)))
            back = query((await agent.answer(page, "deny")).headers["location"])
    finally:
        await agent.aclose()
    assert (back["error"], back["state"]) == ("access_denied", "st-1")


async def test_a_consent_without_its_csrf_token_or_from_another_browser_is_refused(oauth_provider: Provider) -> None:
    victim, attacker = UserAgent(oauth_provider), UserAgent(oauth_provider)
    try:
        async with serving(oauth_provider) as oauth:
            page = await victim.consent_page(authorize_url(oauth, await registered(oauth)))
            forged = await victim.answer(page, csrf=None)
            wrong = await victim.answer(page, csrf="x" * 43)
            elsewhere = await attacker.answer(page)  # the form replayed from another browser (its own cookie)
            still_good = await victim.answer(page)
            twice = await victim.answer(page)
    finally:
        await victim.aclose()
        await attacker.aclose()
    for refused in (forged, wrong, elsewhere):
        assert refused.status_code == 403, refused.text
        assert "not confirmed from the page this server showed" in refused.text
    assert still_good.is_redirect  # the refusals spent nothing
    assert "code" in query(still_good.headers["location"])
    assert twice.status_code == 400
    assert "already answered" in twice.text


async def test_a_callback_with_an_unknown_state_or_in_another_browser_is_refused(oauth_provider: Provider) -> None:
    victim, attacker = UserAgent(oauth_provider), UserAgent(oauth_provider)
    try:
        async with serving(oauth_provider) as oauth:
            client_id = await registered(oauth)
            unknown = await victim.http.get(oauth.url("callback") + "?code=x&state=made-up")
            # the attacker starts a sign-in, and lures the victim's browser to its callback URL
            started = await attacker.http.get(authorize_url(oauth, client_id))
            at_provider = started.headers["location"]
            to_callback = await attacker.follow(at_provider, until=oauth.url("callback"))
            lured = await victim.http.get(to_callback.headers["location"])
    finally:
        await victim.aclose()
        await attacker.aclose()
    assert unknown.status_code == 400
    assert "expired or was already completed" in unknown.text
    assert lured.status_code == 403
    assert "started in another browser" in lured.text


async def test_a_user_the_operators_rule_refuses_is_sent_back_with_access_denied(oauth_provider: Provider) -> None:
    agent = UserAgent(oauth_provider)
    try:
        async with serving(oauth_provider, identity=lambda claims: None) as oauth:
            answer = await agent.follow(authorize_url(oauth, await registered(oauth)))
    finally:
        await agent.aclose()
    back = query(answer.headers["location"])
    assert (back["error"], back["error_description"]) == ("access_denied", "this user may not use this server")


async def test_scopes_the_rule_does_not_allow_are_not_granted(oauth_provider: Provider) -> None:
    agent = UserAgent(oauth_provider)
    rule = lambda claims: Identity(str(claims["sub"]), frozenset({"notes:read"}))  # noqa: E731
    try:
        async with serving(oauth_provider, scopes=("notes:read", "notes:write"), identity=rule) as oauth:
            client_id = await registered(oauth)
            page = await agent.consent_page(authorize_url(oauth, client_id, scope="notes:read notes:write"))
            only_write = await agent.follow(authorize_url(oauth, client_id, scope="notes:write", state="w"))
    finally:
        await agent.aclose()
    assert "notes:read" in page.response.text
    assert "notes:write" not in page.response.text
    assert query(only_write.headers["location"])["error"] == "access_denied"




# -- clients named by their metadata document ------------------------------------------------------------
@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(Path(tmp_path_factory.mktemp("tls")))


@pytest.fixture
async def site(certificates: Certificates) -> AsyncIterator[ClientSite]:
    async with serving_site(certificates) as out:
        yield out


@contextlib.asynccontextmanager
async def trusting(oauth_provider: Provider, certificates: Certificates, **fetcher: Any) -> AsyncIterator[OAuthServer]:
    """The OAuth server with a fetcher that may reach the client site (a loopback address) and trusts its
    authority (``fetcher``: more of its settings)."""
    async with MetadataFetcher(allow_private_networks=True, verify=str(certificates.ca), **fetcher) as own, \
            serving(oauth_provider, client_metadata=own) as oauth:
        yield oauth


def refusal(page: httpx.Response) -> str:
    """What an error page says (it must be one: 400, no redirect)."""
    assert page.status_code == 400, (page.status_code, page.headers, page.text)
    assert "location" not in page.headers
    said = re.search(r"<p>(.*)</p>", page.text)
    assert said is not None, page.text
    return unescape(said.group(1))


@pytest.mark.parametrize(("client_id", "problem"), [
    ("http://app.example.com/client.json", "the client_id URL is not https"),
    ("https://app.example.com", "the client_id URL has no path"),
    ("https://app.example.com/", "the client_id URL has no path"),
    ("https://app.example.com/client.json#main", "the client_id URL has a fragment"),
    ("https://me:pw@app.example.com/client.json", "the client_id URL has a user name or password"),
    ("https://app.example.com/a/../client.json", "the client_id URL has a dot segment in its path"),
])
async def test_a_client_id_url_that_cannot_name_a_metadata_document_is_refused_with_its_problem(
        oauth_provider: Provider, client_id: str, problem: str) -> None:
    async with serving(oauth_provider, client_metadata=True) as oauth, httpx.AsyncClient() as http:
        page = await http.get(authorize_url(oauth, client_id))
    assert refusal(page) == f"{problem}, so it cannot name a client metadata document"
    assert "<title>Invalid client</title>" in page.text


async def test_by_default_a_client_id_url_on_a_private_address_is_not_fetched(oauth_provider: Provider,
                                                                              site: ClientSite) -> None:
    url = site.serve("/client.json", host="127.0.0.1", redirect_uris=[REDIRECT])
    async with serving(oauth_provider, client_metadata=True) as oauth, httpx.AsyncClient() as http:
        page = await http.get(authorize_url(oauth, url))
    assert refusal(page) == ("the client's metadata document: the client_id URL's host resolves to a loopback "
                             "address (127.0.0.1)")
    assert site.hits["/client.json"] == 0


async def held_answer(site: ClientSite, send: SendASGI) -> None:
    await site.release.wait()
    await json_answer(document(site.url("/client.json")))(send)


@pytest.mark.parametrize(("answer", "reason", "timeout"), [
    (lambda site: json_answer({}, status=302, headers=[("location", site.url("/elsewhere.json"))]),
     "the client_id URL redirected (302), and redirects are not followed", TIMEOUT),
    (lambda site: json_answer(document(site.url("/client.json"), padding="x" * MAX_BYTES)),
     f"the client_id URL's document is larger than {MAX_BYTES} bytes", TIMEOUT),
    (lambda site: json_answer(document("https://other.example.com/client.json")),
     "the client metadata document's client_id is not the URL it was fetched from", TIMEOUT),
    (lambda site: json_answer({"error": "gone"}, status=404), "the client_id URL answered 404, not 200", TIMEOUT),
    (lambda site: lambda send: held_answer(site, send), "the client_id URL did not answer within 0.5 s", 0.5),
], ids=["redirect", "too large", "another client_id", "not found", "too slow"])
async def test_a_metadata_document_the_fetcher_refuses_is_an_error_page_saying_why(
        oauth_provider: Provider, certificates: Certificates, site: ClientSite, answer: Any, reason: str,
        timeout: float) -> None:
    site.handlers["/client.json"] = answer(site)
    async with trusting(oauth_provider, certificates, timeout=timeout) as oauth, httpx.AsyncClient() as http:
        page = await http.get(authorize_url(oauth, site.url("/client.json")))
        site.release.set()  # a held answer may go now
    assert refusal(page) == f"the client's metadata document: {reason}"
    assert site.hits["/client.json"] == 1


async def test_a_redirect_uri_the_metadata_document_does_not_list_is_refused(
        oauth_provider: Provider, certificates: Certificates, site: ClientSite) -> None:
    url = site.serve("/client.json", redirect_uris=[REDIRECT])
    async with trusting(oauth_provider, certificates) as oauth, httpx.AsyncClient() as http:
        elsewhere = await http.get(authorize_url(oauth, url, redirect_uri="https://evil.example.com/callback"))
        other_path = await http.get(authorize_url(oauth, url, redirect_uri="http://127.0.0.1:1/other"))
        listed = await http.get(authorize_url(oauth, url))
    for page in (elsewhere, other_path):
        assert refusal(page) == "The redirect_uri is not one the client registered."
    assert listed.is_redirect  # to the provider's sign-in
    assert site.hits["/client.json"] == 1  # cached, in the server's store
    assert await oauth.store.get("metadata", url) == document(url, redirect_uris=[REDIRECT])


@pytest.mark.parametrize(("changed", "said"), [
    ({"redirect_uris": ["https://app.example.com/callback"]},
     "The redirect_uri is no longer one the client registered."),
    ({"client_id": "https://other.example.com/client.json"}, "the client's metadata document: the client metadata "
                                                             "document's client_id is not the URL it was fetched from"),
])
async def test_a_metadata_document_that_changes_during_the_sign_in_is_read_again_at_the_callback(
        oauth_provider: Provider, certificates: Certificates, site: ClientSite, changed: dict[str, object],
        said: str) -> None:
    url = site.url("/client.json")
    no_store = [("cache-control", "no-store")]
    site.handlers["/client.json"] = json_answer(document(url, redirect_uris=[REDIRECT]), headers=no_store)
    agent = UserAgent(oauth_provider)
    try:
        async with trusting(oauth_provider, certificates) as oauth:
            to_callback = await agent.follow(authorize_url(oauth, url), until=oauth.url("callback"))
            site.handlers["/client.json"] = json_answer(document(url, **{"redirect_uris": [REDIRECT], **changed}),
                                                        headers=no_store)
            page = await agent.http.get(to_callback.headers["location"])
    finally:
        await agent.aclose()
    assert refusal(page) == said
    assert site.hits["/client.json"] == 2


async def test_a_provider_that_cannot_be_read_is_a_page_for_the_user_and_a_warning_for_the_operator(
        caplog: pytest.LogCaptureFixture) -> None:
    from wiremcp.auth.oauth.upstream import Discovery

    oauth = OAuthServer(issuer="http://127.0.0.1:8080", resource="http://127.0.0.1:8080/mcp",
                        upstream=Discovery("http://127.0.0.1:9/.well-known/openid-configuration", client_id="c",
                                           client_secret="s"))
    client_id = await registered(oauth)
    transport = httpx.ASGITransport(app=oauth.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as http:
        page = await http.get(authorize_url(oauth, client_id))
    assert page.status_code == 502
    assert "the discovery document at http://127.0.0.1:9/.well-known/openid-configuration could not be read" in page.text
    assert any(r.name == "wiremcp.oauth" and r.levelname == "WARNING" and "a sign-in could not start" in r.getMessage()
               for r in caplog.records)
