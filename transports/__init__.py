"""Transports: the edges that carry JSON-RPC messages between clients and the core.

What users compose is exported here: ``MCPHttpApp`` (the Streamable HTTP ASGI app, both eras, to mount
in your own Starlette or FastAPI app) with its ``HttpOptions``, ``serve_stdio`` and the in-memory
``Client`` for tests. Each is imported on first use, so importing one transport loads no other.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wiremcp.transports.http_app import MCPHttpApp
    from wiremcp.transports.memory import Client
    from wiremcp.transports.stdio import serve_stdio
    from wiremcp.transports.streamable_http import HttpOptions

__all__ = ["Client", "HttpOptions", "MCPHttpApp", "serve_stdio"]

_HOMES = {"Client": "memory", "HttpOptions": "streamable_http", "MCPHttpApp": "http_app", "serve_stdio": "stdio"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
