"""Protocol revisions and the facts that differ between them."""

from __future__ import annotations

LATEST_HANDSHAKE_VERSION = "2025-11-25"
LATEST_STATELESS_VERSION = "2026-07-28"

STATELESS_VERSIONS: tuple[str, ...] = ("2026-07-28",)
"""Stateless revisions: every request carries its version, capabilities and client info in ``_meta``."""

HANDSHAKE_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Revisions negotiated with ``initialize``, newest first."""

SUPPORTED_VERSIONS: tuple[str, ...] = STATELESS_VERSIONS + HANDSHAKE_VERSIONS

# Per-request ``_meta`` keys of the stateless era.
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
"""The Agent Skills extension's identifier (SEP-2640, ``capabilities.extensions``)."""

BATCH_VERSIONS = frozenset({"2025-03-26"})
"""Revisions whose clients may send JSON-RPC batches."""

LOG_LEVELS: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LOG_LEVEL_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}


def negotiate(requested: object) -> str:
    """The version to answer ``initialize`` with: the requested one if supported, else our latest."""
    if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS:
        return requested
    return LATEST_HANDSHAKE_VERSION


def at_least(version: str, minimum: str) -> bool:
    """Revisions are dates, so they compare as strings."""
    return version >= minimum


def is_stateless(version: object) -> bool:
    """A stateless-era revision (anything from 2026-07-28 on is served as one)."""
    return isinstance(version, str) and version >= LATEST_STATELESS_VERSION
