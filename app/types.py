"""Type aliases shared by the protocol core."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeAlias

JSON: TypeAlias = Any
"""Any JSON value as decoded by the wire layer."""

JSONObject: TypeAlias = dict[str, Any]
"""A decoded JSON object (a message, params, a result)."""

RequestId: TypeAlias = str | int
"""JSON-RPC request ids: strings or integers, never null."""

Send: TypeAlias = Callable[[JSONObject], Awaitable[None]]
"""Writes one JSON-RPC message towards the client."""


class StreamControl(Protocol):
    """What a transport lets a handler do with the stream carrying its request (HTTP SSE only)."""

    def close_stream(self) -> bool:
        """Close the connection now, keeping the stream resumable; False if there is nothing to close."""
        ...
