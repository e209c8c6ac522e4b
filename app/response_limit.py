"""Response size limit: a built-in middleware (``ResponseSizeLimit``) that keeps results over a size from
reaching the client.

The size is that of the result's JSON (what the wire carries inside the JSON-RPC response, without the
envelope), measured once the result comes back through the chain. Over the limit, a ``tools/call`` is
answered with a tool error (a result with ``isError``: the model reads why, and may ask for less), any
other request with a JSON-RPC error (-32603, ``data``: ``size`` and ``limit``). Each is logged as a
warning to the ``wiremcp.response_limit`` logger. Notifications have no result and pass.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import orjson

from wiremcp import stateless
from wiremcp.errors import INTERNAL_ERROR, MCPError
from wiremcp.middleware import Call, CallNext
from wiremcp.tools import error_result
from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.response_limit")


class ResponseSizeLimit:
    """A middleware that refuses results of more than ``max_bytes`` bytes of JSON to requests of ``methods``
    (default: all), as the module says. Results the middleware installed before it (outside it) make or
    grow are not measured: install it first to measure every result."""

    def __init__(self, max_bytes: int, *, methods: Iterable[str] | None = None) -> None:
        if max_bytes < 1:
            raise ValueError("ResponseSizeLimit: max_bytes must be at least 1")
        self.max_bytes = max_bytes
        self.methods = frozenset(methods) if methods is not None else None

    async def __call__(self, call: Call, call_next: CallNext) -> JSONObject | None:
        result = await call_next()
        if call.notification or result is None or (self.methods is not None and call.method not in self.methods):
            return result
        size = len(orjson.dumps(result))
        if size <= self.max_bytes:
            return result
        name = call.component_name
        log.warning("%s%s: the result is %d bytes, over the limit of %d", call.method, f" {name}" if name else "",
                    size, self.max_bytes)
        if call.method != "tools/call":
            raise MCPError(INTERNAL_ERROR, "Response too large", {"size": size, "limit": self.max_bytes})
        refused = error_result(f"The tool's result is {size} bytes, over the limit of {self.max_bytes} bytes")
        return stateless.complete(refused, call.method, call.server) if call.stateless else refused
