"""The stateless era (2026-07-28): what every result carries (``resultType``, the server's identity,
caching hints), ``server/discover``, and the handshake-era methods it does not have. What a request
declares in its ``_meta`` is ``wiremcp.envelope``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wiremcp import methods
from wiremcp.protocol import META_SERVER_INFO, SUPPORTED_VERSIONS, TASKS_EXTENSION
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.server import MCPServer

CACHEABLE = methods.CACHEABLE
"""Results that carry ``ttlMs`` and ``cacheScope`` (when complete)."""


def complete(result: JSONObject, method: str, server: MCPServer, hints: tuple[int, str] | None = None) -> JSONObject:
    """A result as the stateless era sends it: ``resultType``, the server's identity, caching hints."""
    out = {"resultType": "complete", **result}
    meta = dict(out.get("_meta") or {})
    meta[META_SERVER_INFO] = server.identity()
    out["_meta"] = meta
    if method in CACHEABLE:
        ttl, scope = hints or (server.cache_ttl_ms, server.cache_scope)
        out.setdefault("ttlMs", ttl)
        out.setdefault("cacheScope", scope)
    return out


def discover(server: MCPServer) -> JSONObject:
    # 2025-11-25's experimental ``tasks`` capability is the stateless era's tasks extension.
    capabilities = {k: v for k, v in server.capabilities().items() if k != "tasks"}
    if "tasks" in server.capabilities():
        capabilities["extensions"] = {**capabilities.get("extensions", {}), TASKS_EXTENSION: {}}
    result: JSONObject = {"supportedVersions": list(SUPPORTED_VERSIONS), "capabilities": capabilities}
    if server.instructions:
        result["instructions"] = server.instructions
    return result
