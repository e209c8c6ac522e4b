"""Transports: the edges that carry JSON-RPC messages between clients and the core.

What users compose is exported here: ``MCPHttpApp`` (the Streamable HTTP ASGI app, both eras, to mount
in your own Starlette or FastAPI app) with its ``HttpOptions``, ``serve_stdio``, the in-memory
``Client`` for tests, and ``remote``, another server (over HTTP or launched on stdio) to mount in a gateway, with
``ClientCredentials`` for a gateway that signs itself in to one, and ``from_openapi``, an HTTP API's operations as tools. Each is imported on first use, so importing one transport loads no other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wiremcp.exports import lazy_exports

if TYPE_CHECKING:
    from wiremcp.transports.gateway import remote
    from wiremcp.transports.http_app import MCPHttpApp
    from wiremcp.transports.memory import Client
    from wiremcp.transports.oauth_client import ClientCredentials
    from wiremcp.transports.openapi import from_openapi
    from wiremcp.transports.stdio import serve_stdio
    from wiremcp.transports.streamable_http import HttpOptions

__all__ = ["Client", "ClientCredentials", "HttpOptions", "MCPHttpApp", "from_openapi", "remote",
           "serve_stdio"]

_HOMES = {"Client": "memory", "ClientCredentials": "oauth_client", "HttpOptions": "streamable_http",
          "MCPHttpApp": "http_app", "from_openapi": "openapi", "remote": "gateway", "serve_stdio": "stdio"}

__getattr__ = lazy_exports(__name__, _HOMES)
