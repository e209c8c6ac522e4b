"""Asking the client for input (elicitation, sampling, roots): one way per request, which follows from what
its context was built with (``Context.asker``), and one rule for what the client must have declared.

- ``ClientRequests`` (handshake era): a JSON-RPC request to the client on the request's own stream; the
  handler waits for the answer.
- ``InputRounds`` (stateless era): the answer this retry brought, or else the round ends with
  ``InputRequired`` and the client retries with the answer (``wiremcp.input_required``).
- A task's input (``wiremcp.task_runner.TaskBinding``): once a call has become a task, the task asks.

``require_input_capability`` is the capability rule: nothing is asked of a client that did not declare it
can answer (-32021, ``MissingClientCapability``), whichever way the request asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from wiremcp.errors import INTERNAL_ERROR, InvalidParams, MCPError, MissingClientCapability
from wiremcp.input_required import INPUT_CAPABLE, INPUT_METHODS, InputExchange, InputRequired
from wiremcp.types import JSONObject, Send

if TYPE_CHECKING:
    from wiremcp.context import Context
    from wiremcp.session import ServerSession


class Asker(Protocol):
    async def ask(self, method: str, params: JSONObject | None, timeout: float | None) -> JSONObject:
        """The client's answer to an input request (``method`` is one of ``INPUT_METHODS``)."""
        ...


def declared(capabilities: JSONObject, capability: str, sub: str | None = None) -> JSONObject:
    """The client's declared ``capability`` (with ``sub``, if named), or ``MissingClientCapability``."""
    caps = capabilities.get(capability)
    if isinstance(caps, dict) and (sub is None or isinstance(caps.get(sub), dict)):
        return caps
    raise MissingClientCapability({capability: {sub: {}} if sub else {}})


def require_input_capability(method: object, params: JSONObject | None, capabilities: JSONObject) -> None:
    """What an input request needs the client to have declared: elicitation (its form or url mode),
    sampling (with tools, with context), roots. An unknown kind of input request is the server's error."""
    params = params or {}
    if method == "elicitation/create":
        url = params.get("mode") == "url"
        caps = declared(capabilities, "elicitation", "url" if url else None)
        if not url and "form" not in caps and "url" in caps:  # a url-only client
            declared(capabilities, "elicitation", "form")
    elif method == "sampling/createMessage":
        declared(capabilities, "sampling", "tools" if "tools" in params or "toolChoice" in params else None)
        if params.get("includeContext") not in (None, "none"):
            declared(capabilities, "sampling", "context")
    elif method == "roots/list":
        declared(capabilities, "roots")
    else:
        raise MCPError(INTERNAL_ERROR, f"Invalid input request method: {method!r}; one of {sorted(INPUT_METHODS)}")


class ClientRequests:
    """Handshake era: each input request is a request to the client, sent on ``send``."""

    __slots__ = ("send", "session")

    def __init__(self, session: ServerSession, send: Send) -> None:
        self.session = session
        self.send = send

    async def ask(self, method: str, params: JSONObject | None, timeout: float | None) -> JSONObject:
        return await self.session.request_client(method, params, self.send, timeout)


class InputRounds:
    """Stateless era: the answer to the handler's next input point if the retry brought it; else the round
    ends here and the client is asked (``InputRequired``)."""

    __slots__ = ("ctx",)

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def ask(self, method: str, params: JSONObject | None, timeout: float | None) -> JSONObject:
        ctx = self.ctx
        if ctx.method not in INPUT_CAPABLE:
            raise MCPError(INTERNAL_ERROR, f"{ctx.method} cannot ask the client for input")
        if ctx.exchange is None:
            ctx.exchange = InputExchange()
        key = ctx.exchange.next_key(method)
        answer = ctx.exchange.answer(key)
        if answer is None:
            request: JSONObject = {"method": method}
            if params is not None:
                request["params"] = params
            raise InputRequired({key: request})
        if not isinstance(answer, dict):
            raise InvalidParams(f"inputResponses[{key!r}] must be an object")
        return answer


class NoChannel:
    """A handshake-era request with no session to ask through (none is served so; a guard)."""

    __slots__ = ()

    async def ask(self, method: str, params: JSONObject | None, timeout: float | None) -> JSONObject:
        raise MCPError(INTERNAL_ERROR, "this request has no channel to the client")
