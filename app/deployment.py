"""The composition root behind ``app:asgi`` and ``mcpwire http``: wires the transports around the core.

Only this module imports the edges; ``app.__getattr__`` loads it lazily, so importing the
core never imports a transport.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from app.loader import load_server
from app.request_state import RequestStateSealer
from app.server import MCPServer
from app.settings import Settings
from transports.events import InMemoryEventStore
from transports.http_app import MCPHttpApp
from transports.streamable_http import HttpOptions


def configure(server: MCPServer, settings: Settings) -> MCPServer:
    """Apply the settings that belong to the server itself (shared ``requestState`` keys)."""
    if settings.request_state_keys:
        server.request_states = RequestStateSealer.from_strings(settings.request_state_keys,
                                                                ttl=settings.request_state_ttl_seconds)
    return server


def build_http_app(server: MCPServer, settings: Settings) -> MCPHttpApp:
    options = HttpOptions(json_response=settings.json_response, max_body_bytes=settings.max_message_bytes,
                          sse_after=settings.sse_after_seconds, sse_keepalive=settings.sse_keepalive_seconds,
                          sse_retry_ms=settings.sse_retry_ms)
    events = InMemoryEventStore(max_events=settings.event_store_max_events,
                                max_bytes=settings.event_store_max_bytes,
                                max_age=settings.event_store_max_age_seconds)
    return MCPHttpApp(configure(server, settings), path=settings.path, options=options, events=events,
                      idle_timeout=settings.session_idle_seconds, max_sessions=settings.max_sessions,
                      legacy_sse_path="/sse" if settings.legacy_sse else None,
                      allowed_hosts=settings.allowed_hosts, allowed_origins=settings.allowed_origins)


def build_asgi(settings: Settings | None = None) -> MCPHttpApp:
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
