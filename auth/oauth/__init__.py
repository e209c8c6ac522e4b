"""The OAuth server: an authorization server wiremcp runs in front of the company's identity provider, so that MCP
clients can sign users in with it (``OAuthServer``; ``wiremcp.auth.oauth.presets`` for the common providers)."""

from wiremcp.auth.oauth.clients import Client
from wiremcp.auth.oauth.presets import github, preset
from wiremcp.auth.oauth.server import Identity, OAuthServer, default_identity, upstream_token
from wiremcp.auth.oauth.upstream import Discovery, Upstream

__all__ = ["Client", "Discovery", "Identity", "OAuthServer", "Upstream", "default_identity", "github", "preset", "upstream_token"]
