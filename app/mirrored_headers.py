"""The stateless era's mirrored headers: over HTTP, the headers mirrored from the body
(``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``) must be there and must match
it, or the request gets -32020 (HTTP 400).

The checks run in the order the spec's validation implies: the version header first, then the
required ``_meta`` fields (-32602), then header against ``_meta`` (-32020), then the version itself
(-32022), then the method, name and parameter headers.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wiremcp import jsonrpc, methods
from wiremcp.envelope import envelope, require_fields
from wiremcp.errors import HeaderMismatch
from wiremcp.header_params import MAX_SAFE_INTEGER
from wiremcp.protocol import META_VERSION
from wiremcp.state import SessionState

if TYPE_CHECKING:
    from wiremcp.tools import Tool

Headers = Callable[[str], "str | None"]
"""A request's headers as the transport read them: a lower-case name to its value (None: absent)."""

NAMED = methods.MIRRORED_NAME
"""Methods whose ``Mcp-Name`` header mirrors a parameter (the tasks extension's: the task id)."""

_SENTINEL_START, _SENTINEL_END = "=?base64?", "?="
_VISIBLE = re.compile(r"[\t\x20-\x7e]*")
_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def decode(value: str, name: str) -> str:
    """A header value as sent: plain visible ASCII, or ``=?base64?...?=`` around UTF-8."""
    if value.isascii() and value.isprintable() and not value.startswith(_SENTINEL_START):
        return value  # the common case, without a regular expression
    if not _VISIBLE.fullmatch(value):
        raise HeaderMismatch(f"{name} header value has invalid characters")
    if value.startswith(_SENTINEL_START) and value.endswith(_SENTINEL_END) and len(value) >= 11:
        encoded = value[len(_SENTINEL_START):-len(_SENTINEL_END)]
        if len(encoded) % 4 or not _B64.fullmatch(encoded):
            raise HeaderMismatch(f"{name} header has a malformed base64 sentinel value")
        try:
            return base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise HeaderMismatch(f"{name} header has a malformed base64 sentinel value") from None
    return value


def _matches(sent: str, body: Any, kind: str) -> bool:
    if kind == "boolean":
        return isinstance(body, bool) and sent == ("true" if body else "false")
    if kind == "integer":
        if isinstance(body, bool) or not isinstance(body, int | float) or abs(body) > MAX_SAFE_INTEGER:
            return False
        try:
            return float(sent) == float(body)
        except ValueError:
            return False
    return isinstance(body, str) and sent == body


def _required(headers: Headers, name: str) -> str:
    value = headers(name.lower())
    if value is None:
        raise HeaderMismatch(f"the {name} header is missing")
    return value.strip(" \t")


def check(headers: Headers, request: jsonrpc.Request, tool: Tool | None = None) -> SessionState:
    """Validate a stateless request's headers against its body; returns the state its ``_meta`` declares.
    ``tool``: the tool a ``tools/call`` names, as the access gate found it (``wiremcp.access.called_tool``),
    whose parameter headers are checked too; None for another method, or a tool the server does not have."""
    params = request.params
    version_header = _required(headers, "MCP-Protocol-Version")
    meta = require_fields(params)
    version = meta[META_VERSION]
    if version_header != version:
        raise HeaderMismatch(f"MCP-Protocol-Version header value {version_header!r} does not match body value "
                             f"{version!r}")
    state = envelope(params, meta)
    method = _required(headers, "Mcp-Method")
    if method != request.method:
        raise HeaderMismatch(f"Mcp-Method header value {method!r} does not match body value {request.method!r}")
    key = NAMED.get(request.method)
    if key is not None:
        sent = decode(_required(headers, "Mcp-Name"), "Mcp-Name")
        if sent != params.get(key):
            raise HeaderMismatch(f"Mcp-Name header value {sent!r} does not match body value {params.get(key)!r}")
    if request.method == "tools/call" and tool is not None and tool.header_params:
        arguments = params.get("arguments")
        for param in tool.header_params:
            body = param.value(arguments)
            if body is None:
                continue  # absent or null: no header is expected
            name = f"Mcp-Param-{param.header}"
            raw = headers(name.lower())
            if raw is None:
                raise HeaderMismatch(f"{name} header is missing but the body's argument is present")
            sent = decode(raw.strip(" \t"), name)
            if not _matches(sent, body, param.type):
                raise HeaderMismatch(f"{name} header value {sent!r} does not match body value {body!r}")
    return state
