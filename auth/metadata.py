"""OAuth 2.0 Protected Resource Metadata (RFC 9728) for the MCP endpoint.

The canonical resource URL of the endpoint (RFC 8707) is configured once: it is what the
metadata advertises as ``resource``, what tokens must carry as their audience, and where
the metadata URLs come from, so that "advertise" and "validate" can never drift apart,
whether the app runs at the root, under a prefix, or behind a proxy.

Where no token names an audience (static development tokens), no URL needs configuring: a resource
made with ``resource=""`` is the URL each request was served at (its scheme, its ``Host``, the mount's
root path and ``path``), and one without an authorization server lists none (``authorization_servers``
is optional in RFC 9728; the MCP specification asks for one because its clients get their tokens from
it, which a static token never comes from).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

import orjson
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

WELL_KNOWN = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True, slots=True)
class ProtectedResource:
    resource: str
    """The canonical URL of the MCP endpoint, e.g. ``https://mcp.example.com/mcp``; empty: the URL each
    request was served at (``served_at``), for tokens that name no audience."""
    authorization_servers: tuple[str, ...]
    """Whose tokens are accepted; none for tokens that come from no authorization server (static ones)."""
    scopes_supported: tuple[str, ...] = ()
    resource_name: str | None = None
    resource_documentation: str | None = None
    extra: dict[str, object] = field(default_factory=dict)
    path: str = "/mcp"
    """The MCP endpoint's path in its app: what an empty ``resource`` ends with."""

    def __post_init__(self) -> None:
        if not self.resource:
            if not self.path.startswith("/"):
                raise ValueError(f"the endpoint's path must start with /: {self.path!r}")
            return
        parts = urlsplit(self.resource)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
            raise ValueError(f"the resource must be an absolute http(s) URL without a fragment: {self.resource!r}")

    def served_at(self, scope: Scope) -> ProtectedResource:
        """This resource, its URL the one ``scope``'s request was served at when none is configured: the
        request's scheme and ``Host`` (which the host guard has checked), the mount's root path and ``path``."""
        if self.resource:
            return self
        host = next((value.decode("latin-1") for key, value in scope["headers"] if key == b"host"), None)
        if host is None:
            server = scope.get("server") or ("localhost", None)
            host = server[0] if server[1] is None else f"{server[0]}:{server[1]}"
        return replace(self, resource=f"{scope['scheme']}://{host}{scope.get('root_path', '')}{self.path.rstrip('/')}")

    @property
    def origin(self) -> str:
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def resource_path(self) -> str:
        return urlsplit(self.resource).path.rstrip("/") if self.resource else self.path.rstrip("/")

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
            "bearer_methods_supported": ["header"],
        }
        if self.authorization_servers:
            doc["authorization_servers"] = list(self.authorization_servers)
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
        await Response(orjson.dumps(self.served_at(scope).document()), 200, media_type="application/json",
                       headers={"cache-control": "public, max-age=3600", "access-control-allow-origin": "*"},
                       )(scope, receive, send)
