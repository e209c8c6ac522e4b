"""The identity providers teams sign in with, as configuration: each preset is an ``Upstream`` (or the discovery
document it is read from), given this server's client id and secret at the provider. What to register at each
provider is one redirect URI: this server's ``/oauth/callback``.
"""

from __future__ import annotations

from typing import Any

import httpx

from wiremcp.auth.oauth.upstream import Upstream


def github(*, client_id: str, client_secret: str) -> Upstream:
    """GitHub (an OAuth App or a GitHub App's user authorization): plain OAuth 2, the user read from its API by
    numeric id (a login can be renamed). Scopes: ``read:user user:email``."""
    return Upstream(client_id=client_id, client_secret=client_secret,
                    authorize_url="https://github.com/login/oauth/authorize",
                    token_url="https://github.com/login/oauth/access_token",
                    userinfo_url="https://api.github.com/user", scopes=("read:user", "user:email"),
                    subject_claim="id", name="GitHub")


DISCOVERY = {
    "google": ("https://accounts.google.com/.well-known/openid-configuration", "Google"),
    "microsoft": ("https://login.microsoftonline.com/{tenant}/v2.0/.well-known/openid-configuration",
                  "Microsoft Entra ID"),
    "auth0": ("https://{domain}/.well-known/openid-configuration", "Auth0"),
    "okta": ("https://{domain}/oauth2/default/.well-known/openid-configuration", "Okta"),
    "keycloak": ("{realm_url}/.well-known/openid-configuration", "Keycloak"),
}
"""Each OpenID Connect preset: its discovery URL (with the placeholders its options fill in) and its name."""

OPTIONS = {"google": (), "microsoft": ("tenant",), "auth0": ("domain",), "okta": ("domain",),
           "keycloak": ("realm_url",)}
"""What each OpenID Connect preset needs besides the client id and secret."""


def discovery_url(preset: str, **options: str) -> str:
    """The discovery URL of a preset (``microsoft``: ``tenant=``, its id or domain; ``auth0``, ``okta``: ``domain=``;
    ``keycloak``: ``realm_url=``, e.g. ``https://sso.example.com/realms/staff``), refused with one clear line when
    an option is missing."""
    if preset not in DISCOVERY:
        raise ValueError(f"no preset {preset!r}: one of github, {', '.join(sorted(DISCOVERY))}")
    missing = [name for name in OPTIONS[preset] if not options.get(name)]
    if missing:
        raise ValueError(f"the {preset} preset needs {', '.join(missing)}")
    template, _ = DISCOVERY[preset]
    return template.format(**{name: options[name].rstrip("/") for name in OPTIONS[preset]})


async def preset(name: str, *, client_id: str, client_secret: str, client: httpx.AsyncClient | None = None,
                 **options: Any) -> Upstream:
    """The ``Upstream`` of a preset by name (``github``, ``google``, ``microsoft``, ``auth0``, ``okta``,
    ``keycloak``), its discovery document read for the OpenID Connect ones."""
    if name == "github":
        return github(client_id=client_id, client_secret=client_secret)
    url = discovery_url(name, **{k: str(v) for k, v in options.items() if k in OPTIONS.get(name, ())})
    return await Upstream.discover(url, client_id=client_id, client_secret=client_secret, name=DISCOVERY[name][1],
                                   client=client)


def the_option(name: str) -> str | None:
    """The one option a preset needs besides the client (``WIREMCP_OAUTH_TENANT`` gives it), or None."""
    options = OPTIONS.get(name, ())
    return options[0] if options else None
