"""Which endpoint an HTTP request is for: the MCP endpoint at its path, the 2024-11-05 HTTP+SSE pair if
enabled, else 404. It runs after the Host/Origin guard and authentication (``MCPHttpApp``)."""

from __future__ import annotations

from collections.abc import Awaitable

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

    def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> Awaitable[None]:
        """The endpoint's answer to the request, handed back to be awaited by the layer in front (an ASGI app
        all the same: what it returns is awaited), so that no frame of this one's is resumed with the
        request's at each turn it waits."""
        path = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):] or "/"
        if path == self.path or path == self.path + "/":
            return self.endpoint.answer(scope, receive, send)
        if self.legacy is not None and path == self.legacy_sse_path:
            return self.legacy.stream(scope, receive, send)
        if self.legacy is not None and path == self.legacy_messages_path:
            return self.legacy.message(scope, receive, send)
        return respond_error(send, 404, -32600, "Not Found")
