"""Which clients the OAuth server knows and where it may send users back: exact redirect URIs, loopback ones on
any port, dynamic registration's rules and its limit per address, a client_id URL that cannot name a metadata
document."""

from __future__ import annotations

import pytest

from wiremcp.auth.oauth.client_metadata import redirect_uri_problem
from wiremcp.auth.oauth.clients import REGISTRATION_TTL, Client, ClientError, Registrations
from wiremcp.auth.oauth.metadata_fetcher import MetadataFetcher
from wiremcp.grant_store import InMemoryGrantStore


@pytest.mark.parametrize(("registered", "asked", "allowed"), [
    ("https://app.example.com/cb", "https://app.example.com/cb", True),
    ("https://app.example.com/cb", "https://app.example.com/cb/", False),
    ("https://app.example.com/cb", "https://app.example.com/cb?x=1", False),
    ("https://app.example.com/cb", "https://evil.example.com/cb", False),
    ("https://app.example.com/cb", "https://app.example.com.evil.com/cb", False),
    ("https://app.example.com:443/cb", "https://app.example.com:8443/cb", False),  # not loopback: exact
    ("http://127.0.0.1/callback", "http://127.0.0.1:53124/callback", True),  # RFC 8252 7.3: any port
    ("http://127.0.0.1:3000/callback", "http://127.0.0.1:53124/callback", True),
    ("http://localhost:3000/callback", "http://localhost:9999/callback", True),
    ("http://[::1]/cb", "http://[::1]:7000/cb", True),
    ("http://127.0.0.1/callback", "http://127.0.0.1:53124/other", False),
    ("http://127.0.0.1/callback", "http://localhost:53124/callback", False),  # another host
    ("http://127.0.0.1/callback", "http://127.0.0.1.evil.com:53124/callback", False),
    ("http://127.0.0.1/callback", "http://user@127.0.0.1:53124/callback", False),
    ("http://127.0.0.1/callback", "https://127.0.0.1:53124/callback", False),
])
def test_a_redirect_uri_matches_exactly_or_as_loopback_on_any_port(registered: str, asked: str,
                                                                  allowed: bool) -> None:
    assert Client("c", (registered,)).redirect_allowed(asked) is allowed


@pytest.mark.parametrize(("uri", "problem"), [
    ("https://app.example.com/cb", None),
    ("http://127.0.0.1:3000/cb", None),
    ("http://localhost:3000/cb", None),
    ("com.example.app:/oauth", "is neither an https URI nor an http URI on localhost"),
    ("http://app.example.com/cb", "is neither an https URI nor an http URI on localhost"),
    ("https://app.example.com/cb#x", "has a fragment"),
    ("javascript:alert(1)", "is neither an https URI nor an http URI on localhost"),
    ("data:text/html,hi", "is neither an https URI nor an http URI on localhost"),
    ("/relative", "is not an absolute URI"),
])
def test_what_may_be_a_redirect_uri_at_registration(uri: str, problem: str | None) -> None:
    """The one rule every client is held to, registered or described by a metadata document."""
    assert redirect_uri_problem(uri) == problem


async def test_a_client_registers_itself_and_is_found_with_its_secret() -> None:
    registrations = Registrations(InMemoryGrantStore())
    client, response = await registrations.register(
        {"redirect_uris": ["http://127.0.0.1:4000/cb"], "client_name": "CLI", "token_endpoint_auth_method": "none",
         "grant_types": ["authorization_code", "refresh_token"]}, "10.0.0.1")
    assert client.public
    assert "client_secret" not in response
    assert (await registrations.find(client.client_id)).client_name == "CLI"
    confidential, answer = await registrations.register({"redirect_uris": ["https://app.example.com/cb"]}, "10.0.0.1")
    found = await registrations.find(confidential.client_id)
    assert found.secret_matches(answer["client_secret"])
    assert not found.secret_matches("nope")
    assert answer["token_endpoint_auth_method"] == "client_secret_basic"


@pytest.mark.parametrize(("document", "error"), [
    ({}, "invalid_redirect_uri"),
    ({"redirect_uris": []}, "invalid_redirect_uri"),
    ({"redirect_uris": ["http://evil.example.com/cb"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["https://a.example.com/cb"], "token_endpoint_auth_method": "private_key_jwt"},
     "invalid_client_metadata"),
    ({"redirect_uris": ["https://a.example.com/cb"], "grant_types": ["client_credentials"]}, "invalid_client_metadata"),
    ({"redirect_uris": ["https://a.example.com/cb"], "response_types": ["token"]}, "invalid_client_metadata"),
    ({"redirect_uris": ["https://a.example.com/cb"], "client_uri": "javascript:alert(1)"}, "invalid_client_metadata"),
    ({"redirect_uris": ["https://a.example.com/cb"], "client_name": "x" * 501}, "invalid_client_metadata"),
])
async def test_a_registration_that_breaks_a_rule_is_refused(document: dict[str, object], error: str) -> None:
    with pytest.raises(ClientError) as refused:
        await Registrations(InMemoryGrantStore()).register(document, "10.0.0.1")
    assert refused.value.error == error


async def test_one_address_registers_a_bounded_number_of_clients_an_hour() -> None:
    registrations = Registrations(InMemoryGrantStore(), per_source=3)
    for _ in range(3):
        await registrations.register({"redirect_uris": ["https://a.example.com/cb"]}, "10.0.0.1")
    with pytest.raises(ClientError) as refused:
        await registrations.register({"redirect_uris": ["https://a.example.com/cb"]}, "10.0.0.1")
    assert refused.value.error == "too_many_registrations"
    await registrations.register({"redirect_uris": ["https://a.example.com/cb"]}, "10.0.0.2")  # another address


async def test_unknown_clients_and_switched_off_ways_are_invalid_client() -> None:
    with pytest.raises(ClientError, match="unknown client_id"):
        await Registrations(InMemoryGrantStore()).find("nobody")
    with pytest.raises(ClientError, match="does not accept client metadata documents"):
        await Registrations(InMemoryGrantStore()).find("https://app.example.com/client.json")
    off = Registrations(InMemoryGrantStore(), dynamic=False)
    with pytest.raises(ClientError, match="dynamic client registration is off"):
        await off.register({"redirect_uris": ["https://a.example.com/cb"]}, "10.0.0.1")
    pre = Registrations(InMemoryGrantStore(), dynamic=False, preregistered={"ops": Client("ops", ("https://o/cb",))})
    assert (await pre.find("ops")).registered_by == "operator"


@pytest.mark.parametrize(("client_id", "problem"), [
    ("http://app.example.com/client.json", "the client_id URL is not https"),
    ("HTTP://app.example.com/client.json", "the client_id URL is not https"),
    ("ftp://app.example.com/client.json", "the client_id URL is not https"),
    ("https://app.example.com", "the client_id URL has no path"),
    ("https://app.example.com/c.json#x", "the client_id URL has a fragment"),
    ("https:///client.json", "the client_id URL has no host"),
    ("https://app.example.com:x/c.json", "the client_id URL is not a valid URL"),
])
async def test_a_client_id_url_that_cannot_name_a_metadata_document_says_why(client_id: str, problem: str) -> None:
    async with MetadataFetcher() as fetcher:  # never asked: the URL is refused before
        registrations = Registrations(InMemoryGrantStore(), fetcher)
        with pytest.raises(ClientError) as refused:
            await registrations.find(client_id)
    assert (refused.value.error, refused.value.description) == (
        "invalid_client", f"{problem}, so it cannot name a client metadata document")


async def test_a_preregistered_client_id_may_be_any_url_and_other_ids_are_unknown() -> None:
    odd = Client("http://ops.example.com", ("https://o/cb",))
    async with MetadataFetcher() as fetcher:
        registrations = Registrations(InMemoryGrantStore(), fetcher, preregistered={odd.client_id: odd})
        assert await registrations.find("http://ops.example.com") is odd
        with pytest.raises(ClientError, match=r"^unknown client_id$"):
            await registrations.find("urn:example:client")


async def test_a_client_that_registered_itself_is_kept_while_it_is_used() -> None:
    class Clock:
        now = 0.0

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    registrations = Registrations(InMemoryGrantStore(clock=clock))
    client, _ = await registrations.register({"redirect_uris": ["https://a.example.com/cb"]}, "10.0.0.1")
    clock.now = REGISTRATION_TTL - 10
    await registrations.renew(await registrations.find(client.client_id))  # a user signs in through it
    clock.now = REGISTRATION_TTL + 10
    assert (await registrations.find(client.client_id)).client_id == client.client_id
    clock.now = 2 * REGISTRATION_TTL
    with pytest.raises(ClientError, match="unknown client_id"):
        await registrations.find(client.client_id)
