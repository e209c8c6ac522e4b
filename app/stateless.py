"""The stateless era (2026-07-28): per-request ``_meta``, and what every result carries.

A request that names its protocol version in ``_meta`` is self-describing: its
capabilities, client info and log level come with it, and nothing is inferred from
earlier requests on the same connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wiremcp.errors import InvalidMeta, UnsupportedProtocolVersion
from wiremcp.protocol import (
    LOG_LEVEL_RANK,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    META_VERSION,
    SUPPORTED_VERSIONS,
    TASKS_EXTENSION,
    is_stateless,
)
from wiremcp.state import SessionState
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.server import MCPServer

CACHEABLE = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list",
                       "resources/templates/list", "resources/read"})
"""Results that carry ``ttlMs`` and ``cacheScope`` (when complete)."""

REMOVED = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})
"""Handshake-era methods that do not exist in the stateless era."""


def declares_stateless(params: JSONObject) -> bool:
    """Whether a request describes itself with the stateless era's ``_meta``."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and META_VERSION in meta


def meta_version(params: JSONObject) -> Any:
    meta = params.get("_meta")
    return meta.get(META_VERSION) if isinstance(meta, dict) else None


def request_state(params: JSONObject, principal: Any = None) -> SessionState:
    """The state a stateless request declares, after checking its ``_meta`` (the spec's order: required
    fields first, -32602; then the version, -32022)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise InvalidMeta("Invalid params: _meta with io.modelcontextprotocol/protocolVersion and "
                          "io.modelcontextprotocol/clientCapabilities is required")
    version = meta.get(META_VERSION)
    capabilities = meta.get(META_CAPABILITIES)
    if not isinstance(version, str) or not version:
        raise InvalidMeta(f"Invalid params: _meta[{META_VERSION!r}] is required")
    if not isinstance(capabilities, dict):
        raise InvalidMeta(f"Invalid params: _meta[{META_CAPABILITIES!r}] is required (an object; {{}} for none)")
    if version not in SUPPORTED_VERSIONS or not is_stateless(version):
        raise UnsupportedProtocolVersion(version, SUPPORTED_VERSIONS)
    info = meta.get(META_CLIENT_INFO)
    level = meta.get(META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVEL_RANK:
        raise InvalidMeta(f"Invalid params: unknown log level {level!r}")
    return SessionState(protocol_version=version, client_capabilities=capabilities,
                        client_info=info if isinstance(info, dict) else {}, log_level=level,
                        initialized=True, ready=True, principal=principal)


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
