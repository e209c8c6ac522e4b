"""The inlet: where every inbound frame enters the core, on every transport and in both eras.

A frame is decoded (``jsonrpc.decode``), classified (``wiremcp.inbound.classify``, with the transport's
headers when it has them: over HTTP) and sorted by kind here, and nowhere else; the transport says what it
does with each kind by implementing ``Handlers``:

- ``request``: a request to serve (``wiremcp.entry.serve``), in the era ``Inbound.stateless`` says;
- ``notification``: a notification (``wiremcp.entry.notify``), its era classified once, here;
- ``response``: the client's answer to a request of the server's (``ServerSession.handle_response``);
- ``batch``: a JSON-RPC batch, each item already classified or rejected (``wiremcp.entry.serve_batch``);
- ``malformed``: a frame that is not JSON-RPC (its ``reply``, if it has one, is the error to send);
- ``rejected``: a message refused before anything runs (a stateless request whose ``_meta`` or mirrored
  headers are wrong), with the answer to send.

Each handler is given the ``Caller``: who sent the frame and from where, read once by the transport (over
HTTP, from the ASGI scope at the top of the request) and handed down from there. Today's transports:
``wiremcp.connection.Connection`` (stdio, in memory, the legacy HTTP+SSE transport: one client per message
stream) and the Streamable HTTP endpoint (one frame per POST, both eras). A new transport plugs in by
implementing ``Handlers`` (or by feeding a ``Connection``); every request it serves goes through
``wiremcp.entry.serve``, so the runtime's requests in flight, and with them the drain, see its calls.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, NamedTuple, Protocol

from wiremcp import jsonrpc
from wiremcp.errors import INVALID_REQUEST
from wiremcp.inbound import Inbound, classify
from wiremcp.mirrored_headers import Headers
from wiremcp.outcome import Outcome
from wiremcp.principal import Principal, key_of

if TYPE_CHECKING:
    from wiremcp.server import MCPServer


class Caller(NamedTuple):
    """Who sent a frame: the verified principal (None without authentication) and the client's address (None
    where the transport has none). (A tuple: made for every HTTP request, and cheaper to make than a frozen
    dataclass.)"""

    principal: Principal | None = None
    peer: str | None = None

    @property
    def owner(self) -> str | None:
        """The identity a session made by this caller is bound to (``Principal.key``; None: anonymous)."""
        return key_of(self.principal)


NOBODY = Caller()
"""The caller on a transport without authentication or addresses (stdio, in memory unless told otherwise)."""


class Handlers(Protocol):
    """What a transport does with each kind of inbound message; the inlet (``take``) calls exactly one of
    these per frame. Each returns what to await (an ``async def`` method's coroutine, or one it hands on)."""

    def request(self, inbound: Inbound, caller: Caller) -> Awaitable[None]:
        """A request, classified: serve it (``Inbound.stateless`` tells its era)."""

    def notification(self, inbound: Inbound, caller: Caller) -> Awaitable[None]:
        """A notification (``inbound.message``), classified."""

    def response(self, response: jsonrpc.Response, caller: Caller) -> Awaitable[None]:
        """The client's response to a request of the server's."""

    def batch(self, items: list[Inbound | Outcome], caller: Caller) -> Awaitable[None]:
        """A JSON-RPC batch: each item classified (an ``Inbound``), or refused with its answer (an
        ``Outcome``: a malformed item's reply, a rejected item, a batched ``initialize``), in order."""

    def malformed(self, invalid: jsonrpc.Invalid, caller: Caller) -> Awaitable[None]:
        """A frame that is not a JSON-RPC message (its ``reply`` is the error to send, when there is one)."""

    def rejected(self, outcome: Outcome, caller: Caller) -> Awaitable[None]:
        """A message refused before anything runs; ``outcome.message`` is the answer."""


def take(frame: bytes | str, server: MCPServer, handlers: Handlers, caller: Caller = NOBODY,
         headers: Headers | None = None) -> Awaitable[None]:
    """Decode ``frame``, classify it (with ``headers``, over HTTP) and hand it to the one handler of its kind;
    what that handler returns is awaited by the transport (``await take(...)``), with no frame of the inlet's
    own between them: a request's chain of coroutines is resumed at every turn it waits."""
    decoded = jsonrpc.decode(frame)
    kind = type(decoded)
    if kind is jsonrpc.Request or kind is jsonrpc.Notification:  # the most frames, sorted first
        inbound = classify(decoded, server, headers)
        if isinstance(inbound, Outcome):
            return handlers.rejected(inbound, caller)
        return (handlers.request if kind is jsonrpc.Request else handlers.notification)(inbound, caller)
    if isinstance(decoded, list):
        return handlers.batch(batch_items(decoded, server), caller)
    if isinstance(decoded, jsonrpc.Invalid):
        return handlers.malformed(decoded, caller)
    assert isinstance(decoded, jsonrpc.Response)
    refused = classify(decoded, server, headers)  # a response outside any session, in the stateless era
    if isinstance(refused, Outcome):
        return handlers.rejected(refused, caller)
    return handlers.response(decoded, caller)


def batch_items(items: list[jsonrpc.Message], server: MCPServer) -> list[Inbound | Outcome]:
    """A batch's messages as ``wiremcp.entry.serve_batch`` takes them: each classified, or refused with its
    answer, in order."""
    return [sorted_ for item in items if (sorted_ := _item(item, server)) is not None]


def _item(item: jsonrpc.Message, server: MCPServer) -> Inbound | Outcome | None:
    """One message of a batch, classified as a single message would be (a batch carries no headers of its
    own), or refused: ``initialize`` is never batched, whatever its era; a malformed item is answered by its
    reply, or left out when it has none."""
    if isinstance(item, jsonrpc.Request) and item.method == "initialize":
        return Outcome(jsonrpc.error(item.id, INVALID_REQUEST, "initialize must not be batched"))
    if isinstance(item, jsonrpc.Invalid):
        return Outcome(item.reply) if item.reply is not None else None
    return classify(item, server)


def forwarded_response(raw: bytes) -> jsonrpc.Response | None:
    """A client's response that another replica received (and sorted, in its inlet) for a request this
    replica's handler sent; None if ``raw`` is not one."""
    decoded = jsonrpc.decode(raw)
    return decoded if isinstance(decoded, jsonrpc.Response) else None
