"""The OAuth server from the settings (``WIREMCP_OAUTH_*``): the identity provider, the rules for who may sign in,
and the server in front of the MCP app. Part of the composition root: only it imports ``wiremcp.auth.oauth``."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from wiremcp.transports.serving.settings import ConfigError, Settings

if TYPE_CHECKING:
    from wiremcp.auth.oauth import OAuthServer
    from wiremcp.auth.oauth.upstream import Discovery, Upstream


def build_oauth(settings: Settings) -> OAuthServer | None:
    """The OAuth server, when ``WIREMCP_OAUTH_PROVIDER`` is set; every mistake in its settings is one line."""
    if not settings.oauth_provider:
        return None
    from wiremcp.auth.oauth import OAuthServer
    from wiremcp.auth.oauth.rules import group_scopes, rule

    if not settings.auth_resource:
        raise ConfigError("WIREMCP_OAUTH_PROVIDER needs WIREMCP_AUTH_RESOURCE (the canonical URL of the MCP endpoint)")
    if settings.auth_jwks_url or settings.auth_introspection_url or settings.auth_static_tokens:
        raise ConfigError("WIREMCP_OAUTH_PROVIDER issues the tokens itself: unset WIREMCP_AUTH_JWKS_URL, "
                          "WIREMCP_AUTH_INTROSPECTION_URL and WIREMCP_AUTH_STATIC_TOKENS")
    if not settings.oauth_client_id or not settings.oauth_client_secret:
        raise ConfigError("WIREMCP_OAUTH_PROVIDER needs WIREMCP_OAUTH_CLIENT_ID and WIREMCP_OAUTH_CLIENT_SECRET "
                          "(this server's registration at the provider)")
    from wiremcp.auth.oauth.server import checked_url

    try:
        checked_url("resource", settings.auth_resource)
    except ValueError as exc:
        raise ConfigError(f"WIREMCP_AUTH_RESOURCE: {exc}") from None
    issuer = settings.oauth_issuer or _origin(settings.auth_resource)
    try:
        scopes_by_group = group_scopes(settings.oauth_group_scopes) if settings.oauth_group_scopes else None
    except ValueError as exc:
        raise ConfigError(f"WIREMCP_OAUTH_GROUP_SCOPES: {exc}") from None
    upstream = _upstream(settings)
    try:
        return OAuthServer(issuer=issuer, resource=settings.auth_resource, upstream=upstream,
                           secret=settings.oauth_secret or None,
                           scopes=settings.auth_scopes_supported or settings.auth_scopes,
                           identity=rule(allowed_email_domains=settings.oauth_allowed_email_domains,
                                         scopes_by_group=scopes_by_group),
                           client_metadata=settings.oauth_client_metadata,
                           dynamic_registration=settings.oauth_dynamic_registration,
                           access_ttl=settings.oauth_access_token_seconds)
    except ValueError as exc:
        name = "WIREMCP_OAUTH_SECRET" if "secret" in str(exc) else \
            "WIREMCP_OAUTH_ISSUER" if "issuer" in str(exc) else "WIREMCP_AUTH_RESOURCE"
        raise ConfigError(f"{name}: {exc}") from None


TENANT = {"tenant": "the tenant's id or domain", "domain": "the provider's domain, e.g. acme.okta.com",
          "realm_url": "the realm's URL, e.g. https://sso.example.com/realms/staff"}
"""What ``WIREMCP_OAUTH_TENANT`` is for each kind of preset option."""


def _upstream(settings: Settings) -> Upstream | Discovery:
    from wiremcp.auth.oauth.presets import DISCOVERY, discovery_url, github, the_option
    from wiremcp.auth.oauth.upstream import Discovery, Upstream

    provider, client_id, secret = settings.oauth_provider, settings.oauth_client_id, settings.oauth_client_secret
    scopes = settings.oauth_upstream_scopes or None
    subject = settings.oauth_subject_claim or None
    if provider == "github":
        upstream = github(client_id=client_id, client_secret=secret)
        return replace(upstream, scopes=scopes or upstream.scopes, subject_claim=subject or upstream.subject_claim)
    if provider == "oauth2":
        missing = [name for name, value in (("WIREMCP_OAUTH_AUTHORIZE_URL", settings.oauth_authorize_url),
                                            ("WIREMCP_OAUTH_TOKEN_URL", settings.oauth_token_url),
                                            ("WIREMCP_OAUTH_USERINFO_URL", settings.oauth_userinfo_url)) if not value]
        if missing:
            raise ConfigError(f"WIREMCP_OAUTH_PROVIDER=oauth2 needs {', '.join(missing)}")
        return Upstream(client_id=client_id, client_secret=secret, authorize_url=settings.oauth_authorize_url,
                        token_url=settings.oauth_token_url, userinfo_url=settings.oauth_userinfo_url,
                        scopes=scopes or ("openid", "email", "profile"), subject_claim=subject or "sub",
                        name=_origin(settings.oauth_authorize_url))
    if provider == "oidc":
        if not settings.oauth_discovery_url:
            raise ConfigError("WIREMCP_OAUTH_PROVIDER=oidc needs WIREMCP_OAUTH_DISCOVERY_URL")
        url, name = settings.oauth_discovery_url, None
    else:
        option = the_option(provider)
        if option is not None and not settings.oauth_tenant:
            raise ConfigError(f"WIREMCP_OAUTH_PROVIDER={provider} needs WIREMCP_OAUTH_TENANT ({TENANT[option]})")
        url, name = discovery_url(provider, **({option: settings.oauth_tenant} if option else {})), DISCOVERY[provider][1]
    return Discovery(url, client_id=client_id, client_secret=secret, scopes=scopes or ("openid", "email", "profile"),
                     name=name, subject_claim=subject or "sub")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
