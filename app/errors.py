"""Protocol errors: exceptions that become JSON-RPC error responses, and tool errors."""

from __future__ import annotations

import math
import sys
import types
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
URL_ELICITATION_REQUIRED = -32042
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
RATE_LIMITED = -32023


class MCPError(Exception):
    """Raised anywhere below the dispatcher to answer the request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class InvalidParams(MCPError):
    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INVALID_PARAMS, message, data)


class MethodNotFound(MCPError):
    def __init__(self, method: str) -> None:
        super().__init__(METHOD_NOT_FOUND, f"Method not found: {method}")


class InvalidRequest(MCPError):
    def __init__(self, message: str) -> None:
        super().__init__(INVALID_REQUEST, message)


class ResourceNotFound(MCPError):
    def __init__(self, uri: str) -> None:
        super().__init__(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})


class BadRequest(MCPError):
    """An error that the stateless era answers with HTTP 400 (malformed ``_meta``, header mismatch, ...)."""


class InvalidMeta(BadRequest):
    def __init__(self, message: str) -> None:
        super().__init__(INVALID_PARAMS, message)


class HeaderMismatch(BadRequest):
    def __init__(self, message: str) -> None:
        super().__init__(HEADER_MISMATCH, f"Header mismatch: {message}")


class UnsupportedProtocolVersion(BadRequest):
    def __init__(self, requested: object, supported: tuple[str, ...]) -> None:
        super().__init__(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                         {"supported": list(supported), "requested": requested})


class MissingClientCapability(BadRequest):
    """The request needs a client capability the client did not declare (``_meta`` in the stateless era,
    ``initialize`` in the handshake era): -32021 with ``data.requiredCapabilities`` in both eras, as
    2026-07-28 names it (HTTP 400 there; the handshake era answers JSON-RPC errors with 200). A handler that
    can do without catches it: ``except MissingClientCapability``; ``capability`` names what was missing."""

    def __init__(self, required: dict[str, Any]) -> None:
        self.capability = ", ".join(
            f"{name}.{sub}" if isinstance(value, dict) and (sub := next(iter(value), None)) else name
            for name, value in sorted(required.items()))
        super().__init__(MISSING_CLIENT_CAPABILITY,
                         f"Missing required client capability: {self.capability}",
                         {"requiredCapabilities": required})


class InsufficientScope(MCPError):
    """The caller's token lacks scopes this component needs (HTTP answers 403 with a step-up challenge)."""

    def __init__(self, scopes: list[str]) -> None:
        super().__init__(INVALID_REQUEST, f"Forbidden: this needs the scopes {' '.join(scopes)}",
                         {"requiredScopes": scopes})
        self.scopes = scopes


class RateLimited(MCPError):
    """The caller sent too much, too fast: -32023 with ``data.retryAfterMs`` (and ``limit``/``remaining`` when
    given), as the draft SEP-3304 names it; HTTP answers 429 with ``Retry-After`` in both eras."""

    def __init__(self, retry_after: float, *, limit: int | None = None, remaining: int | None = None,
                 message: str = "Rate limited") -> None:
        self.retry_after = max(0.0, retry_after)
        """Seconds until the caller may try again."""
        data: dict[str, Any] = {"retryAfterMs": math.ceil(self.retry_after * 1000)}
        if limit is not None:
            data["limit"] = limit
        if remaining is not None:
            data["remaining"] = remaining
        super().__init__(RATE_LIMITED, f"{message}: retry after {data['retryAfterMs']} ms", data)
        self.limit = limit
        self.remaining = remaining


class ToolError(Exception):
    """Raised by a tool to report a failure to the model as a result with ``isError: true``. Raised by a
    resource, a prompt or a completion, it keeps its words too: there, it is that kind's error below."""


class ResourceError(MCPError):
    """Raised by a resource to refuse a read in its own words: the JSON-RPC error -32603 with this message
    (and ``data``, when given), in both eras. ``ResourceNotFound`` is -32002; any other exception is masked
    (``wiremcp.failures``)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INTERNAL_ERROR, message, data)


class PromptError(MCPError):
    """Raised by a prompt to refuse ``prompts/get`` in its own words: -32603 with this message (and ``data``)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INTERNAL_ERROR, message, data)


class CompletionError(MCPError):
    """Raised by a completion to refuse ``completion/complete`` in its own words: -32603 with this message
    (and ``data``)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INTERNAL_ERROR, message, data)


class ClientError(MCPError):
    """The client answered a server-to-client request with an error."""


class ClientTimeout(TimeoutError):
    """The client did not answer a server-to-client request in time."""


class DefinitionError(TypeError, ValueError):
    """A tool, resource or prompt that cannot be registered as it is written: the message says which, where
    it is defined, and why (raised as it is registered; ``wiremcp stdio|http`` print it as one line, and so
    does ``python server.py`` when nothing catches it: ``say_uncaught_definition_errors``)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        say_uncaught_definition_errors()


def say_uncaught_definition_errors() -> None:
    """Have the interpreter print a ``DefinitionError`` that nothing caught (a server file run as ``python
    server.py``, whose module-level decorator refused a tool) as its one line on stderr, exit status 2, not
    a traceback through the decorators: the message already says where and why. Any other exception goes to
    the hook there was. Installed once, by the first ``DefinitionError`` made."""
    previous = sys.excepthook
    if getattr(previous, "_says_definition_errors", False):
        return

    def hook(kind: type[BaseException], error: BaseException, traceback: types.TracebackType | None) -> None:
        if not isinstance(error, DefinitionError):
            previous(kind, error, traceback)
            return
        sys.stderr.write(f"wiremcp: error: {error}\n")
        raise SystemExit(2)

    hook._says_definition_errors = True  # type: ignore[attr-defined]
    sys.excepthook = hook
