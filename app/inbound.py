"""Inbound classification: which era a message speaks, decided once, where it enters the core.

Every transport hands each decoded message to ``classify`` with the facts only it knows (over HTTP,
the request's headers) and gets back an ``Inbound``, whose ``stateless`` the rest of the core reads,
or an ``Outcome`` that rejects it before anything runs. The era is derived here and nowhere else:

- a request or notification whose ``_meta`` names a protocol version speaks the stateless era
  (2026-07-28), on any transport, whatever session it arrives on;
- over HTTP, so does a message that names a non-handshake ``MCP-Protocol-Version`` header outside
  any session (no ``Mcp-Session-Id``), so that a malformed stateless request is answered as one;
- everything else speaks the handshake era.

A stateless request's envelope (the state its ``_meta`` declares) is read here too, and over HTTP its
mirrored headers are checked against the body (``wiremcp.mirrored_headers``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from wiremcp import jsonrpc
from wiremcp.access import called_tool
from wiremcp.envelope import envelope
from wiremcp.errors import INVALID_REQUEST, BadRequest, MCPError
from wiremcp.mirrored_headers import Headers, check
from wiremcp.outcome import Outcome
from wiremcp.protocol import HANDSHAKE_VERSIONS, META_VERSION
from wiremcp.state import SessionState

if TYPE_CHECKING:
    from wiremcp.server import MCPServer
    from wiremcp.tools import Tool

Message = jsonrpc.Message | list[jsonrpc.Message]


class NotOnePerPost(BadRequest):
    """The stateless era over HTTP takes one request or notification per POST."""

    def __init__(self) -> None:
        super().__init__(INVALID_REQUEST,
                         "Invalid Request: the stateless era takes one request or notification per POST")


@dataclass(slots=True)
class Inbound:
    """A message as the core serves it: the message and the era it speaks."""

    message: Message
    stateless: bool = False
    envelope: SessionState | None = None
    """A stateless-era request's declared state (its ``_meta``); None otherwise."""
    tool: Tool | None = None
    """The tool a stateless ``tools/call`` names, where it was looked up as the call came in (over HTTP, to
    check its mirrored headers): the access gate judges the call on this lookup, not on another."""

    @property
    def request(self) -> jsonrpc.Request:
        assert isinstance(self.message, jsonrpc.Request), "only a request has a request"
        return self.message


def classify(message: Message, server: MCPServer, headers: Headers | None = None) -> Inbound | Outcome:
    """The era ``message`` speaks, and a stateless request's envelope; or the rejection of a stateless
    request whose ``_meta`` (or, over HTTP, whose mirrored headers) are wrong. ``headers``: the request's
    headers over HTTP; None on a transport without them (stdio, in memory)."""
    # The era, told here and nowhere else:
    if isinstance(message, jsonrpc.Request | jsonrpc.Notification):
        meta = message.params.get("_meta")
        stateless = isinstance(meta, dict) and META_VERSION in meta
    else:
        stateless = False  # a response, a batch, or a malformed message (answered by its own reply)
    if not stateless and headers is not None and not isinstance(message, list | jsonrpc.Invalid):
        version = headers("mcp-protocol-version")
        stateless = version is not None and version not in HANDSHAKE_VERSIONS and headers("mcp-session-id") is None
    if not stateless:
        return Inbound(message)
    if isinstance(message, jsonrpc.Notification):
        return Inbound(message, stateless=True)
    if not isinstance(message, jsonrpc.Request):
        return Outcome.failed(None, NotOnePerPost())
    tool = called_tool(message.params, server) if headers is not None and message.method == "tools/call" else None
    try:
        state = check(headers, message, tool) if headers is not None else envelope(message.params)
    except MCPError as exc:
        return Outcome.failed(message.id, exc)
    return Inbound(message, stateless=True, envelope=state, tool=tool)
