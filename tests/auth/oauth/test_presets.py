"""The providers' presets: configuration only, each a discovery URL or GitHub's endpoints."""

from __future__ import annotations

import pytest

from wiremcp.auth.oauth.presets import discovery_url, github


@pytest.mark.parametrize(("name", "options", "url"), [
    ("google", {}, "https://accounts.google.com/.well-known/openid-configuration"),
    ("microsoft", {"tenant": "contoso.onmicrosoft.com"},
     "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0/.well-known/openid-configuration"),
    ("auth0", {"domain": "acme.eu.auth0.com"}, "https://acme.eu.auth0.com/.well-known/openid-configuration"),
    ("okta", {"domain": "acme.okta.com"}, "https://acme.okta.com/oauth2/default/.well-known/openid-configuration"),
    ("keycloak", {"realm_url": "https://sso.acme.com/realms/staff/"},
     "https://sso.acme.com/realms/staff/.well-known/openid-configuration"),
])
def test_each_openid_connect_preset_names_its_discovery_document(name: str, options: dict[str, str], url: str) -> None:
    assert discovery_url(name, **options) == url


def test_a_preset_missing_an_option_or_unknown_is_one_clear_line() -> None:
    with pytest.raises(ValueError, match="the keycloak preset needs realm_url"):
        discovery_url("keycloak")
    with pytest.raises(ValueError, match="no preset 'gitlab': one of github, auth0, google"):
        discovery_url("gitlab")


def test_github_is_plain_oauth_with_the_user_read_from_its_api_by_id() -> None:
    upstream = github(client_id="id", client_secret="secret")
    assert not upstream.openid
    assert upstream.userinfo_url == "https://api.github.com/user"
    assert upstream.subject_claim == "id"
    assert "code_challenge_method=S256" in upstream.sign_in_url(redirect_uri="https://m/cb", state="s",
                                                                code_challenge="c" * 43, nonce="n")
