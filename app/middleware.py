"""Middleware: code that runs around every request and notification the server is sent, in both eras and on
every transport, and that sees them as MCP (a method, its params, the caller, the component named), not as
bytes.

A middleware is an async callable ``(call, call_next)``. ``call`` (a ``Call``) is the message on its way in;
``await call_next()`` hands it on (to the next middleware, at the end to the server) and returns the result.
A middleware may

- look and pass it on: ``return await call_next()``;
- answer it itself: return a result without calling ``call_next``;
- refuse it: raise an ``MCPError`` (``RateLimited``, ``InvalidParams``, ...), which becomes the JSON-RPC error;
- change what goes in (assign ``call.params`` before ``call_next``) or what comes out (change the result).

``server.add_middleware(m)`` installs one; the first installed is the outermost (it sees the message first and
the result last). ``Middleware`` is a base class with a hook per method (``on_tools_call``...) for those who
prefer it. What each case looks like to a middleware:

- a JSON-RPC batch (2025-03-26): each of its requests and notifications goes through the chain on its own,
  concurrently, with ``call.batch`` set;
- a task-augmented ``tools/call``: the chain sees the call that starts the task, and its result is the task
  (``CreateTaskResult``, or the stateless era's task result); the tool then runs in the background, outside
  the chain; the ``tasks/*`` requests that follow it go through the chain like any other request;
- a stateless-era tool call that asks for input: the round that asks returns ``resultType: input_required``
  through the chain, and each retry (``call.retry``: it carries ``inputResponses``/``requestState``) goes
  through the chain again as a request of its own; in the handshake era the questions travel on the
  request's stream and the chain sees one call;
- a notification: ``call.notification`` is set, ``call_next`` returns None once the server handled it, and
  what the middleware returns is dropped (nothing answers a notification); a middleware that does not call
  ``call_next`` drops it.

With no middleware installed, none of this runs: a request costs one attribute check more.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from wiremcp import access, methods
from wiremcp.component import definition_site
from wiremcp.errors import DefinitionError
from wiremcp.input_required import INPUT_CAPABLE
from wiremcp.types import JSONObject, RequestId

if TYPE_CHECKING:
    from wiremcp.context import Context
    from wiremcp.principal import Principal
    from wiremcp.runtime import Runtime
    from wiremcp.server import MCPServer
    from wiremcp.session import ServerSession

class CallNext(Protocol):
    """Hands the call on; returns its result (None for a notification)."""

    def __call__(self) -> Awaitable[JSONObject | None]: ...


class MiddlewareFn(Protocol):
    def __call__(self, call: Call, call_next: CallNext, /) -> Awaitable[JSONObject | None]: ...


class Call:
    """One request or notification on its way through the middleware."""

    __slots__ = ("_component", "batch", "ctx", "method", "params", "peer", "principal", "request_id", "runtime",
                 "server", "session", "stateless")

    def __init__(self, server: MCPServer, method: str, params: JSONObject, *, ctx: Context | None = None,
                 request_id: RequestId | None = None, principal: Principal | None = None,
                 session: ServerSession | None = None, stateless: bool = False, peer: str | None = None,
                 batch: bool = False, runtime: Runtime | None = None) -> None:
        self.server = server
        """The server the message is for (with ``server.mount``, the parent; a child's middleware sees its own)."""
        self.runtime: Runtime = runtime or server.runtime
        """What serves the message: the runtime of the server it arrived at, whose stores (the buckets of
        ``RateLimit``) and observers a middleware uses; a mounted child's middleware gets its parent's."""
        self.method = method
        self.params = params
        """What the request carries; assign a new object to change what the server gets."""
        self.ctx = ctx
        """The request's ``Context`` (None for a notification)."""
        self.request_id = request_id
        self.principal = principal
        """Who sent it, as authentication established it (None: no authentication: stdio, open HTTP)."""
        self.session = session if not stateless else None
        """The handshake-era session it came on (None in the stateless era, even on a stream that has a
        session: stdio, in memory)."""
        self.stateless = stateless
        """Whether it speaks the stateless era (2026-07-28)."""
        self.peer = peer
        """The client's address over HTTP (the ASGI ``client`` host); None on stdio and in memory."""
        self.batch = batch
        """It came in a JSON-RPC batch."""
        self._component: Any = _UNKNOWN

    @property
    def notification(self) -> bool:
        return self.request_id is None

    @property
    def name(self) -> str | None:
        """The tool or prompt a ``tools/call`` or ``prompts/get`` names."""
        value = self.params.get("name")
        return value if isinstance(value, str) else None

    @property
    def uri(self) -> str | None:
        """The URI a ``resources/*``, ``skills/get`` or ``resources/directory/read`` names."""
        value = self.params.get("uri")
        return value if isinstance(value, str) else None

    @property
    def arguments(self) -> JSONObject:
        """The arguments of a ``tools/call`` or ``prompts/get`` (empty when there are none)."""
        value = self.params.get("arguments")
        return value if isinstance(value, dict) else {}

    @property
    def retry(self) -> bool:
        """A stateless-era retry of a request that asked for input (it brings ``inputResponses`` or
        ``requestState``). Not ``tasks/update``, which brings ``inputResponses`` too, to a task."""
        return self.stateless and self.method in INPUT_CAPABLE and (
            "inputResponses" in self.params or "requestState" in self.params)

    @property
    def task(self) -> bool:
        """A handshake-era ``tools/call`` that asks to run as a task (``params.task``)."""
        return self.params.get("task") is not None

    @property
    def component(self) -> Any:
        """The tool, prompt, resource (or template), skill or skill directory the message names, as this
        server has it; None if it names none, or one the server does not have. Finding it decides nothing:
        whether the caller may use it is decided later, by the server (``wiremcp.access``)."""
        if self._component is _UNKNOWN:
            self._component = access.named(self.method, self.params, self.server)
        return self._component

    @property
    def component_name(self) -> str | None:
        """The name (tools, prompts) or URI (the rest) of ``component``, as the message gave it."""
        declared = methods.BY_NAME.get(self.method)
        return self.name if declared is not None and declared.names_component == "name" else self.uri

    def __repr__(self) -> str:
        return f"<Call {self.method} {self.component_name or ''}>".replace(" >", ">")


_UNKNOWN: Any = object()


def chain(middleware: Sequence[MiddlewareFn], call: Call, last: CallNext) -> Awaitable[JSONObject | None]:
    """Run ``call`` through ``middleware`` (outermost first), then ``last``."""

    def step(index: int) -> CallNext:
        if index == len(middleware):
            return last

        def call_next() -> Awaitable[JSONObject | None]:
            return middleware[index](call, step(index + 1))

        return call_next

    return step(0)()


_KINDS = frozenset({"on_message", "on_request", "on_notification"})
"""The hooks of every message, of every request, of every notification: no method's hook, whatever a client
names its method."""


_FASTMCP_HOOKS = {"on_call_tool": "on_tools_call", "on_list_tools": "on_tools_list",
                  "on_read_resource": "on_resources_read", "on_list_resources": "on_resources_list",
                  "on_list_resource_templates": "on_resources_templates_list", "on_get_prompt": "on_prompts_get",
                  "on_list_prompts": "on_prompts_list"}
"""FastMCP's names of method hooks, which name no MCP method here, and the hook each one is."""


class Middleware:
    """A middleware with a hook per kind of message, for those who prefer overriding methods.

    Every message goes through ``on_message``, then ``on_request`` or ``on_notification``, then the hook of
    its method, named after it: ``on_tools_call`` for ``tools/call``, ``on_resources_read``,
    ``on_notifications_cancelled``... Each has the signature ``(call, call_next)`` and by default hands the
    call on. Override the ones you need. A hook under FastMCP's name for it (``on_call_tool``), which would
    never run, is refused as the class is defined (``DefinitionError``), naming the hook it means."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for fastmcp_name, hook in _FASTMCP_HOOKS.items():
            method = cls.__dict__.get(fastmcp_name)
            if method is not None:
                raise DefinitionError(f"{definition_site(method)}: middleware {cls.__qualname__}: {fastmcp_name} is "
                                      f"FastMCP's name, and would never run: the hook of "
                                      f"{hook.removeprefix('on_').replace('_', '/')} is {hook}(self, call, call_next)")

    async def __call__(self, call: Call, call_next: CallNext) -> JSONObject | None:
        async def kind() -> JSONObject | None:
            async def method() -> JSONObject | None:
                name = "on_" + call.method.replace("/", "_")
                hook = getattr(self, name, None) if name not in _KINDS else None  # (a method named "request")
                return await hook(call, call_next) if hook is not None else await call_next()

            if call.notification:
                return await self.on_notification(call, method)
            return await self.on_request(call, method)

        return await self.on_message(call, kind)

    async def on_message(self, call: Call, call_next: CallNext) -> JSONObject | None:
        return await call_next()

    async def on_request(self, call: Call, call_next: CallNext) -> JSONObject | None:
        return await call_next()

    async def on_notification(self, call: Call, call_next: CallNext) -> JSONObject | None:
        return await call_next()
