"""Transports: the edges that carry JSON-RPC messages between clients and the dispatcher."""

from transports.memory import Client
from transports.stdio import serve_stdio

__all__ = ["Client", "serve_stdio"]
