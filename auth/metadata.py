"""OAuth 2.0 Protected Resource Metadata (RFC 9728) for the MCP endpoint.

The canonical resource URL of the endpoint (RFC 8707) is configured once: it is what the
metadata advertises as ``resource``, what tokens must carry as their audience, and where
the metadata URLs come from, so that "advertise" and "validate" can never drift apart,
whether the app runs at the root, under a prefix, or behind a proxy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

import orjson
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

WELL_KNOWN = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True, slots=True)
class ProtectedResource:
    resource: str
    """The canonical URL of the MCP endpoint, e.g. ``https://mcp.example.com/mcp``."""
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] = ()
    resource_name: str | None = None
    resource_documentation: str | None = None
    extra: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parts = urlsplit(self.resource)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
            raise ValueError(f"the resource must be an absolute http(s) URL without a fragment: {self.resource!r}")
        if not self.authorization_servers:
            raise ValueError("protected resource metadata needs at least one authorization server")

    @property
    def origin(self) -> str:
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def resource_path(self) -> str:
        return urlsplit(self.resource).path.rstrip("/")

    @property
    def metadata_url(self) -> str:
        """The path-inserted well-known URL (what the 401 challenge points to)."""
        return self.origin + WELL_KNOWN + self.resource_path

    @property
    def metadata_paths(self) -> tuple[str, ...]:
        """Where the document is served: path-inserted, and at the root."""
        return (WELL_KNOWN + self.resource_path, WELL_KNOWN) if self.resource_path else (WELL_KNOWN,)

    def document(self) -> dict[str, object]:
        doc: dict[str, object] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        scopes = [s for s in self.scopes_supported if s != "offline_access"]
        if scopes:
            doc["scopes_supported"] = scopes
        if self.resource_name:
            doc["resource_name"] = self.resource_name
        if self.resource_documentation:
            doc["resource_documentation"] = self.resource_documentation
        doc.update(self.extra)
        return doc

    def matches(self, path: str) -> bool:
        return path.rstrip("/") in self.metadata_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The document as an ASGI app of its own, for when the MCP app is mounted under a prefix: the
        well-known URLs live at the host's root, outside the mount. In a Starlette app,
        ``Route(WELL_KNOWN, resource)`` serves the root one and ``Mount(WELL_KNOWN, resource)`` the
        path-inserted one; any other path gets 404."""
        if scope["type"] != "http":
            return
        path, root = scope["path"], scope.get("root_path", "")
        if not (self.matches(path) or (root and not path.startswith(root) and self.matches(root + path))):
            await Response(b"Not Found", 404, media_type="text/plain")(scope, receive, send)
            return
        await self.serve(scope, receive, send)

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await Response(b"", 405, headers={"allow": "GET, HEAD"})(scope, receive, send)
            return
        await Response(orjson.dumps(self.document()), 200, media_type="application/json",
                       headers={"cache-control": "public, max-age=3600", "access-control-allow-origin": "*"},
                       )(scope, receive, send)
