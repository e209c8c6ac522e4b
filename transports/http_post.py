"""Streamable HTTP's POST, past its checks: the inlet's handlers (``wiremcp.inlet.Handlers``) for one POST.

The endpoint (``wiremcp.transports.streamable_http``) reads the body and hands it to the inlet, which decodes,
classifies and sorts it; this says which part of the endpoint serves each kind, in which era.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from wiremcp import jsonrpc
from wiremcp.errors import INVALID_REQUEST
from wiremcp.inbound import Inbound
from wiremcp.inlet import Caller
from wiremcp.outcome import Outcome
from wiremcp.transports.asgi import Receive, Scope, SendASGI, respond_json
from wiremcp.transports.outcomes import http_status

if TYPE_CHECKING:
    from wiremcp.transports.streamable_http import StreamableHTTPEndpoint


class PostHandlers:
    """What the endpoint does with each kind of message one POST carries: the inlet's handlers
    (``wiremcp.inlet.Handlers``) for that POST, made by the endpoint for each POST. The stateless era's
    requests and notifications go to ``StatelessHandler``; the handshake era's, past ``initialize``, need the
    session the request names."""

    __slots__ = ("body", "endpoint", "receive", "scope", "send")

    def __init__(self, endpoint: StreamableHTTPEndpoint, body: bytes, scope: Scope, receive: Receive,
                 send: SendASGI) -> None:
        self.endpoint = endpoint
        self.body = body
        self.scope = scope
        self.receive = receive
        self.send = send

    def request(self, inbound: Inbound, caller: Caller) -> Awaitable[None]:
        # Handed on, not awaited here: no frame of this one's between the endpoint and what serves it.
        endpoint = self.endpoint
        if inbound.stateless:
            return endpoint.stateless.handle(inbound, caller, self.scope, self.receive, self.send)
        if inbound.request.method == "initialize":
            return endpoint._initialize(inbound, caller, self.scope, self.send)
        return endpoint._request(inbound, caller, self.scope, self.receive, self.send)

    async def notification(self, inbound: Inbound, caller: Caller) -> None:
        note = inbound.message
        assert isinstance(note, jsonrpc.Notification)
        if inbound.stateless:
            await self.endpoint.stateless.handle(inbound, caller, self.scope, self.receive, self.send)
        elif (live := await self.endpoint._session(self.scope, self.send, caller)) is not None:
            await self.endpoint._notified(live, note, caller, self.send)

    async def response(self, response: jsonrpc.Response, caller: Caller) -> None:
        if (live := await self.endpoint._session(self.scope, self.send, caller)) is not None:
            await self.endpoint._responded(live, response, self.body, self.send)

    async def batch(self, items: list[Inbound | Outcome], caller: Caller) -> None:
        if (live := await self.endpoint._session(self.scope, self.send, caller)) is not None:
            await self.endpoint._batch(live, items, caller, self.send)

    async def malformed(self, invalid: jsonrpc.Invalid, caller: Caller) -> None:
        await respond_json(self.send, 400, invalid.reply or jsonrpc.error(None, INVALID_REQUEST, "Invalid Request"))

    async def rejected(self, outcome: Outcome, caller: Caller) -> None:
        """A stateless request rejected before it runs (a handshake-era message is never rejected here)."""
        await respond_json(self.send, http_status(outcome, stateless=True), outcome.message)
