"""The composition root behind ``app:asgi`` and ``mcpwire http``: wires the transports around the core.

Only this module imports the edges; ``app.__getattr__`` loads it lazily, so importing the
core never imports a transport.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable

from app.loader import load_server
from app.request_state import RequestStateSealer
from app.server import MCPServer
from app.settings import Settings
from transports.asgi import ASGIApp
from transports.events import InMemoryEventStore
from transports.http_app import MCPHttpApp
from transports.streamable_http import HttpOptions

log = logging.getLogger("mcpwire")


def configure(server: MCPServer, settings: Settings) -> MCPServer:
    """Apply the settings that belong to the server itself (shared ``requestState`` keys)."""
    if settings.request_state_keys:
        server.request_states = RequestStateSealer.from_strings(settings.request_state_keys,
                                                                ttl=settings.request_state_ttl_seconds)
    return server


def build_auth(settings: Settings) -> Callable[[ASGIApp], ASGIApp] | None:
    """Bearer-token authentication for the MCP routes, when ``MCPWIRE_AUTH_RESOURCE`` is set."""
    if not settings.auth_resource:
        if settings.auth_jwks_url or settings.auth_introspection_url or settings.auth_static_tokens:
            raise ValueError("MCPWIRE_AUTH_RESOURCE (the canonical URL of the MCP endpoint) is required for auth")
        return None
    from auth.introspection import IntrospectionVerifier
    from auth.jwt_verifier import JWKSVerifier
    from auth.metadata import ProtectedResource
    from auth.middleware import BearerAuth
    from auth.verifier import StaticTokenVerifier, TokenVerifier

    if not settings.auth_issuer:
        raise ValueError("MCPWIRE_AUTH_ISSUER (the authorization server's issuer URL) is required for auth")
    verifier: TokenVerifier
    if settings.auth_jwks_url:
        verifier = JWKSVerifier(jwks_url=settings.auth_jwks_url, issuer=settings.auth_issuer,
                                audience=settings.auth_resource, algorithms=settings.auth_algorithms)
    elif settings.auth_introspection_url:
        if not (settings.auth_client_id and settings.auth_client_secret):
            raise ValueError("introspection needs MCPWIRE_AUTH_CLIENT_ID and MCPWIRE_AUTH_CLIENT_SECRET")
        verifier = IntrospectionVerifier(endpoint=settings.auth_introspection_url, client_id=settings.auth_client_id,
                                         client_secret=settings.auth_client_secret, audience=settings.auth_resource,
                                         issuer=settings.auth_issuer)
    elif settings.auth_static_tokens:
        log.warning("static bearer tokens are for development only")
        verifier = StaticTokenVerifier.from_pairs(settings.auth_static_tokens, issuer=settings.auth_issuer)
    else:
        raise ValueError("auth needs MCPWIRE_AUTH_JWKS_URL, MCPWIRE_AUTH_INTROSPECTION_URL or MCPWIRE_AUTH_STATIC_TOKENS")
    resource = ProtectedResource(settings.auth_resource, (settings.auth_issuer,),
                                 settings.auth_scopes_supported or settings.auth_scopes)
    return lambda app: BearerAuth(app, verifier=verifier, resource=resource, required_scopes=settings.auth_scopes)


def build_http_app(server: MCPServer, settings: Settings) -> ASGIApp:
    options = HttpOptions(json_response=settings.json_response, max_body_bytes=settings.max_message_bytes,
                          sse_after=settings.sse_after_seconds, sse_keepalive=settings.sse_keepalive_seconds,
                          sse_retry_ms=settings.sse_retry_ms)
    events = InMemoryEventStore(max_events=settings.event_store_max_events,
                                max_bytes=settings.event_store_max_bytes,
                                max_age=settings.event_store_max_age_seconds)
    mcp = MCPHttpApp(configure(server, settings), path=settings.path, options=options, events=events,
                     idle_timeout=settings.session_idle_seconds, max_sessions=settings.max_sessions,
                     legacy_sse_path="/sse" if settings.legacy_sse else None,
                     allowed_hosts=settings.allowed_hosts, allowed_origins=settings.allowed_origins,
                     authenticate=build_auth(settings))
    return mcp


def build_asgi(settings: Settings | None = None) -> ASGIApp:
    """The default deployment: the server named by ``MCPWIRE_SERVER`` at ``MCPWIRE_PATH``."""
    settings = settings or Settings.from_env()
    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr, level=settings.log_level,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return build_http_app(load_server(settings.server), settings)


def serve_stdio(server: MCPServer, settings: Settings) -> None:
    from transports.stdio import serve_stdio as serve

    asyncio.run(serve(configure(server, settings), max_message_bytes=settings.max_message_bytes,
                      drain_seconds=settings.stdio_drain_seconds))


def serve_http(server: MCPServer, *, host: str, port: int, settings: Settings) -> None:
    import uvicorn

    uvicorn.run(build_http_app(server, settings), host=host, port=port, log_level=settings.log_level.lower(),
                lifespan="on")
