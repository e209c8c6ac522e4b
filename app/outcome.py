"""How a request ended, as the core hands it back to the transport: the JSON-RPC message to send and,
when it is an error, the error itself, from which a transport derives its own signals (an HTTP status, a
step-up challenge). ``None`` in its place means the request was cancelled and has no answer."""

from __future__ import annotations

from dataclasses import dataclass

from wiremcp.errors import MCPError
from wiremcp.types import JSONObject, RequestId


@dataclass(slots=True)
class Outcome:
    message: JSONObject
    """The response: a result or a JSON-RPC error."""
    error: MCPError | None = None
    """The protocol error the request was answered with (None: a result, or an internal error)."""
    internal: bool = False
    """The handler failed unexpectedly (-32603)."""
    unavailable: bool = False
    """The request could not be served here now: a shared store (Redis) could not be reached, or the server
    shut down before it finished (-32603; HTTP: 503 with ``Retry-After``, to be retried)."""

    @classmethod
    def failed(cls, request_id: RequestId | None, error: MCPError) -> Outcome:
        """The request is answered with ``error``."""
        return cls({"jsonrpc": "2.0", "id": request_id, "error": error.to_error()}, error)
