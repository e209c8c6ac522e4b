"""The composition root: wires transports (and later auth) around the core for ``app:asgi``.

Only this module imports the edges; it is loaded lazily by ``app.__getattr__``.
"""

from __future__ import annotations

from typing import Any

from app.server import MCPServer
from app.settings import Settings


def build_asgi(settings: Settings | None = None) -> Any:
    raise NotImplementedError("Streamable HTTP is not built yet (issue 3)")


def serve_http(server: MCPServer, *, host: str, port: int, settings: Settings) -> None:
    raise NotImplementedError("Streamable HTTP is not built yet (issue 3)")
