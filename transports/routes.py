"""Which endpoint an HTTP request is for: the MCP endpoint at its path, the 2024-11-05 HTTP+SSE pair if
enabled, else 404. It runs after the Host/Origin guard and authentication (``MCPHttpApp``)."""

from __future__ import annotations

from wiremcp.transports.asgi import Receive, Scope, SendASGI, respond_error
from wiremcp.transports.legacy_sse import LegacySSEEndpoints
from wiremcp.transports.streamable_http import StreamableHTTPEndpoint


class Routes:
    def __init__(self, endpoint: StreamableHTTPEndpoint, path: str, legacy: LegacySSEEndpoints | None = None,
                 legacy_sse_path: str | None = None, legacy_messages_path: str | None = None) -> None:
        self.endpoint = endpoint
        self.path = path
        self.legacy = legacy
        self.legacy_sse_path = legacy_sse_path
        self.legacy_messages_path = legacy_messages_path

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        path = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):] or "/"
        if path == self.path or path == self.path + "/":
            await self.endpoint(scope, receive, send)
        elif self.legacy is not None and path == self.legacy_sse_path:
            await self.legacy.stream(scope, receive, send)
        elif self.legacy is not None and path == self.legacy_messages_path:
            await self.legacy.message(scope, receive, send)
        else:
            await respond_error(send, 404, -32600, "Not Found")
