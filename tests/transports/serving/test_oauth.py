"""The OAuth server from the settings: each provider's settings make its ``Upstream``; each mistake is one line
naming the setting to fix."""

from __future__ import annotations

import dataclasses

import pytest

from wiremcp.auth.oauth.upstream import Discovery, Upstream
from wiremcp.transports.serving.oauth import build_oauth
from wiremcp.transports.serving.settings import ConfigError, Settings

BASE = Settings(auth_resource="https://mcp.example.com/mcp", oauth_provider="github", oauth_client_id="id",
                oauth_client_secret="secret")


def made(**changes: object) -> object:
    oauth = build_oauth(dataclasses.replace(BASE, **changes))  # type: ignore[arg-type]
    assert oauth is not None
    return oauth


def test_off_unless_a_provider_is_named() -> None:
    assert build_oauth(Settings()) is None


def test_each_provider_makes_its_upstream() -> None:
    github = made().upstream  # type: ignore[attr-defined]
    assert isinstance(github, Upstream)
    assert (github.subject_claim, github.scopes) == ("id", ("read:user", "user:email"))
    oidc = made(oauth_provider="oidc", oauth_discovery_url="https://idp.example.com/.well-known/openid-configuration",
                oauth_upstream_scopes=("openid", "email", "groups")).upstream  # type: ignore[attr-defined]
    assert isinstance(oidc, Discovery)
    assert oidc.url == "https://idp.example.com/.well-known/openid-configuration"
    entra = made(oauth_provider="microsoft", oauth_tenant="contoso.onmicrosoft.com").upstream  # type: ignore[attr-defined]
    assert entra.url == "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0/.well-known/openid-configuration"
    plain = made(oauth_provider="oauth2", oauth_authorize_url="https://idp/a", oauth_token_url="https://idp/t",
                 oauth_userinfo_url="https://idp/u", oauth_subject_claim="login").upstream  # type: ignore[attr-defined]
    assert (plain.authorize_url, plain.subject_claim, plain.name) == ("https://idp/a", "login", "https://idp")


def test_the_issuer_is_the_resources_origin_unless_set() -> None:
    assert made().issuer == "https://mcp.example.com"  # type: ignore[attr-defined]
    assert made(oauth_issuer="https://login.example.com/mcp-auth").issuer == "https://login.example.com/mcp-auth"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("changes", "line"), [
    ({"auth_resource": ""}, "WIREMCP_OAUTH_PROVIDER needs WIREMCP_AUTH_RESOURCE"),
    ({"auth_jwks_url": "https://idp/jwks"}, "unset WIREMCP_AUTH_JWKS_URL"),
    ({"auth_static_tokens": ("t=alice",)}, "issues the tokens itself"),
    ({"oauth_client_secret": ""}, "needs WIREMCP_OAUTH_CLIENT_ID and WIREMCP_OAUTH_CLIENT_SECRET"),
    ({"oauth_provider": "oidc"}, "WIREMCP_OAUTH_PROVIDER=oidc needs WIREMCP_OAUTH_DISCOVERY_URL"),
    ({"oauth_provider": "oauth2", "oauth_authorize_url": "https://idp/a"},
     "oauth2 needs WIREMCP_OAUTH_TOKEN_URL, WIREMCP_OAUTH_USERINFO_URL"),
    ({"oauth_provider": "keycloak"}, "WIREMCP_OAUTH_PROVIDER=keycloak needs WIREMCP_OAUTH_TENANT (the realm's URL"),
    ({"oauth_provider": "microsoft"},
     "WIREMCP_OAUTH_PROVIDER=microsoft needs WIREMCP_OAUTH_TENANT (the tenant's id or domain)"),
    ({"oauth_group_scopes": ("engineers",)}, "WIREMCP_OAUTH_GROUP_SCOPES: a group's scopes are written"),
    ({"oauth_secret": "too-short"}, "WIREMCP_OAUTH_SECRET: the OAuth secret is 32 bytes"),
    ({"oauth_issuer": "http://login.example.com"}, "WIREMCP_OAUTH_ISSUER: the OAuth issuer is an https URL"),
    ({"auth_resource": "http://mcp.example.com/mcp"}, "WIREMCP_AUTH_RESOURCE: the OAuth resource is an https URL"),
])
def test_a_mistake_is_one_line_naming_the_setting(changes: dict[str, object], line: str) -> None:
    with pytest.raises(ConfigError) as refused:
        made(**changes)
    assert str(refused.value).startswith(line) if line.startswith("WIREMCP_") else line in str(refused.value)
    assert "\n" not in str(refused.value)
