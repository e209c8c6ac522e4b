"""Unexpected failures as a client sees them: a generic message and a short reference, never the exception's
own text (a database error, a path, a token in an f-string). The traceback goes to the server's log under the
same reference, so an operator finds it from what a user reports.

Errors meant for the client keep their words: ``ToolError`` (a result with ``isError``), ``MCPError`` and its
kin (a JSON-RPC error). Everything else is unexpected. ``MCPServer(error_details=True)`` or
``WIREMCP_ERROR_DETAILS=true`` adds the exception's type and text to the message, for development only."""

from __future__ import annotations

import logging
import secrets

from wiremcp.errors import INTERNAL_ERROR, MCPError

log = logging.getLogger("wiremcp.failures")

REFERENCE_BYTES = 4
"""A reference is this many random bytes in hex (8 characters): unique enough to find one line in a day's log,
short enough to read over the phone."""


def new_reference() -> str:
    return secrets.token_hex(REFERENCE_BYTES)


def described(what: str, failure: BaseException, *, details: bool) -> tuple[str, str]:
    """Log ``failure`` (with its traceback) under a new reference; return the message the client gets, ``what``
    and the reference (with the failure's own text only when ``details``), and the reference."""
    reference = new_reference()
    log.error("%s (reference %s)", what, reference, exc_info=failure)
    if details:
        said = str(failure)
        return f"{what}: {type(failure).__name__}{': ' + said if said else ''} (reference {reference})", reference
    return f"{what} (reference {reference})", reference


def internal_error(what: str, failure: BaseException, *, details: bool) -> MCPError:
    """An unexpected failure as a JSON-RPC error: -32603, ``described``'s message, ``data.reference``."""
    message, reference = described(what, failure, details=details)
    return MCPError(INTERNAL_ERROR, message, {"reference": reference})
