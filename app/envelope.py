"""The envelope of a stateless-era request: what its ``_meta`` declares (2026-07-28).

A request that names its protocol version in ``_meta`` is self-describing: its capabilities,
client info and log level come with it, and nothing is inferred from earlier requests on the
same connection. ``envelope`` reads and checks them in the spec's order: the required fields
first (-32602), then the version (-32022).
"""

from __future__ import annotations

from wiremcp.errors import InvalidMeta, UnsupportedProtocolVersion
from wiremcp.protocol import (
    LOG_LEVEL_RANK,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_VERSION,
    STATELESS_VERSIONS,
    SUPPORTED_VERSIONS,
)
from wiremcp.state import SessionState
from wiremcp.types import JSONObject


def require_fields(params: JSONObject) -> JSONObject:
    """The ``_meta`` of a stateless request, once it has the required fields (-32602 if not)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise InvalidMeta("Invalid params: _meta with io.modelcontextprotocol/protocolVersion and "
                          "io.modelcontextprotocol/clientCapabilities is required")
    version = meta.get(META_VERSION)
    if not isinstance(version, str) or not version:
        raise InvalidMeta(f"Invalid params: _meta[{META_VERSION!r}] is required")
    if not isinstance(meta.get(META_CAPABILITIES), dict):
        raise InvalidMeta(f"Invalid params: _meta[{META_CAPABILITIES!r}] is required (an object; {{}} for none)")
    return meta


def envelope(params: JSONObject, meta: JSONObject | None = None) -> SessionState:
    """The state a stateless request declares, after checking its ``_meta`` (``meta``: already checked by
    ``require_fields``)."""
    if meta is None:
        meta = require_fields(params)
    version = meta[META_VERSION]
    if version not in STATELESS_VERSIONS:
        raise UnsupportedProtocolVersion(version, SUPPORTED_VERSIONS)
    info = meta.get(META_CLIENT_INFO)
    level = meta.get(META_LOG_LEVEL)
    if level is not None and (not isinstance(level, str) or level not in LOG_LEVEL_RANK):
        raise InvalidMeta(f"Invalid params: unknown log level {level!r}")
    return SessionState(protocol_version=version, client_capabilities=meta[META_CAPABILITIES],
                        client_info=info if isinstance(info, dict) else {}, log_level=level,
                        initialized=True, ready=True)
