"""Client ID Metadata Documents: the ``client_id`` URL's shape and the document's validation."""

from __future__ import annotations

import pytest

from tests.support.client_site import EXAMPLE_URL as URL
from tests.support.client_site import document
from wiremcp.auth.oauth.client_metadata import (
    ClientMetadata,
    ClientMetadataError,
    InvalidClientMetadata,
    is_metadata_url,
    url_problem,
)


# -- the URL ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("url", [
    URL, "https://example.com/client", "https://example.com:8443/a/b.json", "https://example.com/c?v=1",
    "HTTPS://example.com/client", "https://127.0.0.1/client", "https://[::1]:4443/client"])
def test_metadata_urls(url: str) -> None:
    assert is_metadata_url(url)


@pytest.mark.parametrize(("url", "problem"), [
    ("http://example.com/client", "the client_id URL is not https"),
    ("my-client", "the client_id URL is not https"),
    ("ftp://example.com/client", "the client_id URL is not https"),
    ("https://example.com", "the client_id URL has no path"),
    ("https://example.com/", "the client_id URL has no path"),
    ("https://example.com/client#x", "the client_id URL has a fragment"),
    ("https://example.com/client#", "the client_id URL has a fragment"),
    ("https://user:pw@example.com/client", "the client_id URL has a user name or password"),
    ("https://user@example.com/client", "the client_id URL has a user name or password"),
    ("https://example.com/a/../client", "the client_id URL has a dot segment in its path"),
    ("https://example.com/./client", "the client_id URL has a dot segment in its path"),
    ("https://example.com/a/%2E%2E/client", "the client_id URL has a dot segment in its path"),
    ("https:///client", "the client_id URL has no host"),
    ("https://example.com:port/client", "the client_id URL is not a valid URL"),
    ("https://[::1/client", "the client_id URL is not a valid URL"),
    ("https://example.com/a client", "the client_id URL contains whitespace, control characters or backslashes"),
    ("https://example.com\\@evil.com/client",
     "the client_id URL contains whitespace, control characters or backslashes"),
])
def test_not_metadata_urls(url: str, problem: str) -> None:
    assert not is_metadata_url(url)
    assert url_problem(url) == problem


# -- the document -----------------------------------------------------------------------------------------
def test_a_valid_document() -> None:
    metadata = ClientMetadata.validated(document(scope="files:read"), URL)
    assert metadata == ClientMetadata(
        client_id=URL, client_name="Example MCP Client",
        redirect_uris=("http://127.0.0.1:3000/callback", "http://localhost:3000/callback"),
        client_uri="https://app.example.com", logo_uri="https://app.example.com/logo.png",
        grant_types=("authorization_code",), response_types=("code",), token_endpoint_auth_method="none",
        scope="files:read")
    assert metadata.document["client_name"] == "Example MCP Client"
    assert metadata.host == "app.example.com"


def test_the_defaults_of_a_minimal_document() -> None:
    minimal = {"client_id": URL, "client_name": "Minimal", "redirect_uris": ["https://app.example.com/cb"]}
    metadata = ClientMetadata.validated(minimal, URL)
    assert (metadata.grant_types, metadata.response_types) == (("authorization_code",), ("code",))
    assert metadata.token_endpoint_auth_method == "none"
    assert (metadata.client_uri, metadata.logo_uri, metadata.scope) == (None, None, None)


def test_extra_properties_are_kept_in_the_document() -> None:
    metadata = ClientMetadata.validated(document(software_id="x", grant_types=["authorization_code",
                                                                                "refresh_token"]), URL)
    assert metadata.document["software_id"] == "x"
    assert metadata.grant_types == ("authorization_code", "refresh_token")
    with pytest.raises(TypeError):
        metadata.document["client_name"] = "changed"  # type: ignore[index]


@pytest.mark.parametrize(("value", "reason"), [
    ([document()], "the client metadata document is not a JSON object"),
    ("text", "the client metadata document is not a JSON object"),
    (document(client_id=URL + "?"), "the client metadata document's client_id is not the URL it was fetched from"),
    (document(client_id=URL.upper()),
     "the client metadata document's client_id is not the URL it was fetched from"),
    (document(client_id=None), "the client metadata document has no client_id"),
    (document(client_name=None), "the client metadata document has no client_name"),
    (document(client_name="  "), "the client metadata document has no client_name"),
    (document(client_name=7), "the client metadata document has no client_name"),
    (document(redirect_uris=None), "the client metadata document has no redirect_uris"),
    (document(redirect_uris=[]), "the client metadata document has no redirect_uris"),
    (document(redirect_uris="https://app.example.com/cb"), "the client metadata document has no redirect_uris"),
    (document(redirect_uris=["/callback"]),
     "the client metadata document's redirect URI '/callback' is not an absolute URI"),
    (document(redirect_uris=["https://app.example.com/cb#x"]),
     "the client metadata document's redirect URI 'https://app.example.com/cb#x' has a fragment"),
    (document(redirect_uris=["http://app.example.com/cb"]),
     "the client metadata document's redirect URI 'http://app.example.com/cb' is neither an https URI nor an "
     "http URI on localhost"),
    (document(redirect_uris=["javascript:alert(1)"]),
     "the client metadata document's redirect URI 'javascript:alert(1)' is neither an https URI nor an http URI "
     "on localhost"),
    (document(redirect_uris=[3]), "the client metadata document's redirect URI '3' is not a non-empty string"),
    (document(redirect_uris=["https://app.example.com/a b"]),
     "the client metadata document's redirect URI 'https://app.example.com/a b' contains whitespace or control "
     "characters"),
    (document(token_endpoint_auth_method="client_secret_basic"),
     "the client metadata document's token_endpoint_auth_method 'client_secret_basic' needs a shared secret, "
     "which a metadata document cannot establish"),
    (document(token_endpoint_auth_method="client_secret_post"),
     "the client metadata document's token_endpoint_auth_method 'client_secret_post' needs a shared secret, "
     "which a metadata document cannot establish"),
    (document(token_endpoint_auth_method="private_key_jwt", jwks_uri="https://app.example.com/jwks"),
     "the client metadata document's token_endpoint_auth_method 'private_key_jwt' is not supported: only "
     "public clients (none) are"),
    (document(client_secret="s3cret"),
     "the client metadata document has a client_secret, which a metadata document must not have"),
    (document(client_secret_expires_at=0),
     "the client metadata document has a client_secret, which a metadata document must not have"),
    (document(grant_types=["refresh_token"]),
     "the client metadata document's grant_types do not include authorization_code"),
    (document(grant_types=["authorization_code", "implicit"]),
     "the client metadata document's grant_types include 'implicit', which OAuth 2.1 does not have"),
    (document(grant_types="authorization_code"), "the client metadata document's grant_types is not a list of strings"),
    (document(response_types=["code", "token"]),
     "the client metadata document's response type 'token' is not supported: only code is"),
    (document(scope=["a"]), "the client metadata document's scope is not a string"),
    (document(logo_uri="logo.png"), "the client metadata document's logo_uri is not an absolute http(s) URL"),
    (document(client_uri="javascript:alert(1)"),
     "the client metadata document's client_uri is not an absolute http(s) URL"),
])
def test_invalid_documents(value: object, reason: str) -> None:
    with pytest.raises(InvalidClientMetadata) as refused:
        ClientMetadata.validated(value, URL)
    assert refused.value.reason == reason
    assert isinstance(refused.value, ClientMetadataError)


def test_a_long_value_is_quoted_short() -> None:
    with pytest.raises(InvalidClientMetadata) as refused:
        ClientMetadata.validated(document(redirect_uris=["/" + "x" * 500]), URL)
    assert len(refused.value.reason) < 200
