"""Settings from ``MCPWIRE_*`` environment variables, each with an embedded default."""

from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_SERVER = "app.demo:server"


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None


@dataclass(frozen=True, slots=True)
class Settings:
    server: str = DEFAULT_SERVER
    """``MCPWIRE_SERVER``: the server to serve, as ``MODULE:ATTR``."""
    log_level: str = "INFO"
    """``MCPWIRE_LOG_LEVEL``: the level of the framework's own logs (on stderr)."""
    max_message_bytes: int = 4 << 20
    """``MCPWIRE_MAX_MESSAGE_BYTES``: the largest message accepted (a stdio line, an HTTP body)."""
    stdio_drain_seconds: float = 0.5
    """``MCPWIRE_STDIO_DRAIN_SECONDS``: how long requests in flight may finish after stdin closes."""

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            server=os.environ.get("MCPWIRE_SERVER") or DEFAULT_SERVER,
            log_level=(os.environ.get("MCPWIRE_LOG_LEVEL") or "INFO").upper(),
            max_message_bytes=_int("MCPWIRE_MAX_MESSAGE_BYTES", 4 << 20),
            stdio_drain_seconds=_float("MCPWIRE_STDIO_DRAIN_SECONDS", 0.5),
        )
