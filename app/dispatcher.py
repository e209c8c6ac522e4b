"""The dispatcher: one JSON-RPC method in, one result out. It knows nothing about I/O.

Every transport hands it (method, params, context); the context carries the
session state (negotiated version, client capabilities, log level) and the
channel for messages related to the request.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import orjson

from wiremcp import access, completions, input_rounds, methods, pagination, skill_methods, stateless
from wiremcp.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    InvalidParams,
    InvalidRequest,
    MCPError,
    MethodNotFound,
    MissingClientCapability,
    ResourceNotFound,
)
from wiremcp.input_required import INPUT_CAPABLE, InputRequired
from wiremcp.protocol import (
    LOG_LEVEL_RANK,
    META_SUBSCRIPTION,
    TASKS_EXTENSION,
    at_least,
    negotiate,
)
from wiremcp.subscriptions import Filter
from wiremcp.task_runner import declares_extension, require_extension
from wiremcp.tool_search import listed as listed_tools
from wiremcp.types import JSONObject
from wiremcp.views import ViewKind

if TYPE_CHECKING:
    from wiremcp.context import Context
    from wiremcp.runtime import Runtime
    from wiremcp.session import ServerSession
    from wiremcp.tasks import TaskRecord

log = logging.getLogger("wiremcp.dispatcher")

Handler = Callable[[JSONObject, "Context"], Awaitable[JSONObject]]

_EMPTY: JSONObject = {}



def _wire(item: Any, stateless: bool) -> JSONObject:
    """An item as a list shows it; the stateless era has no ``execution.taskSupport`` (its tasks are an
    extension the server decides on per request)."""
    out: JSONObject = item.to_wire()
    if stateless and "execution" in out:
        out = {k: v for k, v in out.items() if k != "execution"}
    return out


def _has_tasks(ctx: Context) -> bool:
    """Whether this handshake-era session negotiated 2025-11-25's tasks (older clients know none: a task
    tool is an ordinary tool to them, a ``task`` param means nothing)."""
    return "tasks" in ctx.state.server_capabilities


def _string(params: JSONObject, key: str, method: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"{method} needs a string {key!r}")
    return value


_MAX_CACHED_PAGES = 256

Era = Literal["handshake", "stateless"]
_HANDLERS: list[tuple[str, Era | None, str]] = []
"""(method, era or None for both, the ``Dispatcher`` attribute that handles it), as ``handles`` declares them."""

H = TypeVar("H", bound=Callable[..., Awaitable[JSONObject]])


def handles(method: str, era: Era | None = None) -> Callable[[H], H]:
    """Mark a ``Dispatcher`` method as the handler of ``method`` (in ``era`` only, or in every era the method
    exists in, as ``wiremcp.methods`` declares them)."""
    def mark(handler: H) -> H:
        _HANDLERS.append((method, era, handler.__name__))
        return handler

    return mark


class Dispatcher:
    """The handlers of every method of both eras, for the server its runtime serves."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.server = runtime.server
        self._pages: dict[tuple[str, str | None, int, bool], JSONObject] = {}
        self._handlers: dict[str, Handler] = self._handlers_of("handshake", methods.HANDSHAKE)
        self._stateless_handlers: dict[str, Handler] = self._handlers_of("stateless", methods.STATELESS)

    def _handlers_of(self, era: Era, served: frozenset[str]) -> dict[str, Handler]:
        """The handlers of the methods ``served`` in ``era``: an era's own handler of a method before the one of
        both eras."""
        found: dict[str, Handler] = {}
        for method, only, attribute in sorted(_HANDLERS, key=lambda declared: declared[1] is None):
            if method in served and only in (None, era) and method not in found:
                found[method] = getattr(self, attribute)
        return found

    def methods(self) -> tuple[frozenset[str], frozenset[str]]:
        """The methods each era serves: (handshake era, stateless era)."""
        return frozenset(self._handlers), frozenset(self._stateless_handlers)

    async def dispatch(self, method: str, params: JSONObject, ctx: Context) -> JSONObject:
        """The result of one request, or an MCPError."""
        if ctx.stateless:
            return await self._dispatch_stateless(method, params, ctx)
        handler = self._handlers.get(method)
        if handler is None:
            raise MethodNotFound(method)
        if not ctx.state.initialized and method not in methods.BEFORE_INITIALIZE:
            raise InvalidRequest(f"Invalid Request: {method} before initialize; the session is not initialized")
        self._gate(method)
        if method in methods.EXPERIMENTAL_TASKS and not _has_tasks(ctx):
            raise MethodNotFound(method)  # tasks came with 2025-11-25
        if method in INPUT_CAPABLE:
            try:
                return await handler(params, ctx)
            except InputRequired as exc:  # served with real requests to the client
                return await input_rounds.with_client_requests(handler, params, ctx, exc)
        return await handler(params, ctx)

    def _gate(self, method: str) -> None:
        needed = methods.NEEDS.get(method)
        if needed is not None and needed not in self.server.capabilities():
            raise MethodNotFound(method)

    # -- the stateless era -------------------------------------------------------------------------
    async def _dispatch_stateless(self, method: str, params: JSONObject, ctx: Context) -> JSONObject:
        handler = self._stateless_handlers.get(method)
        if handler is None:
            raise MethodNotFound(method)
        self._gate(method)
        if method in INPUT_CAPABLE:
            input_rounds.open_inputs(method, params, ctx, self.runtime.request_states)
        try:
            result = await handler(params, ctx)
        except InputRequired as exc:
            if method not in INPUT_CAPABLE:
                log.error("%s asked the client for input, which only tools/call, prompts/get and "
                          "resources/read may do", method)
                raise MCPError(INTERNAL_ERROR, "Internal error") from None
            return input_rounds.input_required_result(exc, method, params, ctx, self.runtime.request_states)
        except ResourceNotFound as exc:  # the stateless era's code for it is -32602
            raise InvalidParams(exc.message, exc.data) from None
        return stateless.complete(result, method, self.server)

    @handles("server/discover")
    async def _discover(self, params: JSONObject, ctx: Context) -> JSONObject:
        return stateless.discover(self.server)

    @handles("subscriptions/listen")
    async def _listen(self, params: JSONObject, ctx: Context) -> JSONObject:
        """``subscriptions/listen``: acknowledge, then forward the opted-in changes until the end. Tasks the
        caller follows (``taskIds``, the tasks extension) start with their current state."""
        requested = params.get("notifications")
        tasks = await self._followed_tasks(requested, ctx)
        wanted = Filter(requested, self.server.capabilities(), [task.task_id for task in tasks],
                        readable=lambda uri: access.readable(uri, ctx))
        for uri in wanted.honoured.get("resourceSubscriptions", ()):
            found = self.server.resources.find(uri)
            if found is not None:
                found[0].watch(uri)
        tag = {META_SUBSCRIPTION: ctx.request_id}
        self.runtime.watch_skills()
        subscription = self.runtime.backend.bus.subscribe()
        try:
            await ctx.send_notification("notifications/subscriptions/acknowledged",
                                        {"_meta": tag, "notifications": wanted.honoured})
            for task in tasks:
                await ctx.send_notification("notifications/tasks", {**task.to_2026_07_28(), "_meta": tag})
            async for event in subscription:
                if wanted.wants(event):
                    event_params = event.get("params")
                    params_out = {**event_params, "_meta": tag} if isinstance(event_params, dict) else {"_meta": tag}
                    await ctx.send_notification(event["method"], params_out)
        finally:
            subscription.close()
        return {"_meta": tag}  # the server ended the subscription (shutting down)

    async def _followed_tasks(self, requested: Any, ctx: Context) -> list[TaskRecord]:
        """The caller's tasks a listen request asks to follow (``notifications.taskIds``)."""
        wanted = requested.get("taskIds") if isinstance(requested, dict) else None
        if wanted is None:
            return []
        if not isinstance(wanted, list):
            raise InvalidParams("Invalid params: notifications.taskIds must be an array of task ids")
        if wanted:
            require_extension(ctx)
        if "tasks" not in self.server.capabilities():
            return []
        return await self.runtime.task_methods.owned(wanted, ctx)

    def notify(self, method: str, params: JSONObject, session: ServerSession) -> None:
        """Client notifications other than cancelled/initialized (handled by the session)."""
        if method == "notifications/roots/list_changed":
            log.debug("client roots changed")
        # Unknown notifications are ignored, as JSON-RPC requires.

    # -- lifecycle -----------------------------------------------------------------------------
    @handles("initialize")
    async def _initialize(self, params: JSONObject, ctx: Context) -> JSONObject:
        state = ctx.state
        if state.initialized:
            raise InvalidRequest("Invalid Request: the session is already initialized")
        caps = params.get("capabilities", {})
        info = params.get("clientInfo", {})
        if not isinstance(caps, dict) or not isinstance(info, dict):
            raise InvalidParams("initialize: capabilities and clientInfo must be objects")
        state.protocol_version = negotiate(params.get("protocolVersion"))
        state.client_capabilities = caps
        state.client_info = info
        capabilities = self.server.capabilities()
        if "tasks" in capabilities and not at_least(state.protocol_version, "2025-11-25"):
            capabilities = {k: v for k, v in capabilities.items() if k != "tasks"}  # tasks came in 2025-11-25
        state.server_capabilities = sorted(capabilities)
        state.initialized = True
        result: JSONObject = {
            "protocolVersion": state.protocol_version,
            "capabilities": capabilities,
            "serverInfo": self.server.info(),
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    @handles("ping")
    async def _ping(self, params: JSONObject, ctx: Context) -> JSONObject:
        return {}

    # -- tools ---------------------------------------------------------------------------------
    def _page(self, items: Sequence[Any], params: JSONObject, key: str, *, everything: bool,
              stateless: bool = False) -> JSONObject:
        """One page of a list. A page of an unfiltered list (``everything``) is serialized once and kept
        until the list changes (``forget_lists``): its items go out as pre-encoded JSON."""
        cursor = params.get("cursor")
        cache_key = (key, cursor, self.server.page_size, stateless) if everything and (
            cursor is None or isinstance(cursor, str)) else None
        if cache_key is not None:
            cached = self._pages.get(cache_key)
            if cached is not None:
                return dict(cached)
        chunk, next_cursor = pagination.page(items, cursor, self.server.page_size)
        result: JSONObject = {key: orjson.Fragment(orjson.dumps([_wire(item, stateless) for item in chunk]))}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        if cache_key is not None and len(self._pages) < _MAX_CACHED_PAGES:
            self._pages[cache_key] = result
        return dict(result)

    def forget_lists(self) -> None:
        """A list changed: its pages are serialized anew."""
        self._pages = {}

    def _listing(self, items: list[Any], params: JSONObject, ctx: Context, key: str,
                 kind: ViewKind = "resources") -> JSONObject:
        visible = access.visible(items, ctx, kind)
        # ``execution.taskSupport`` is for sessions that negotiated 2025-11-25's tasks (the stateless era's
        # tasks are an extension, decided per request).
        return self._page(visible, params, key, everything=visible is items, stateless=not _has_tasks(ctx))

    @handles("tools/list")
    async def _tools_list(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._listing(listed_tools(self.server, ctx), params, ctx, "tools", "tools")

    @handles("tools/call")
    async def _tools_call(self, params: JSONObject, ctx: Context) -> JSONObject:
        tool = access.tool(params.get("name"), ctx)
        name = tool.name
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise InvalidParams("tools/call: arguments must be an object")
        if tool.task_support != "forbidden":
            if ctx.stateless:
                # The tasks extension: the server decides, for clients that declare it; a legacy ``task``
                # param means nothing here.
                if declares_extension(ctx):
                    return await self.runtime.task_runner.call(tool, arguments, ctx)
                if tool.task_support == "required":
                    raise MissingClientCapability({"extensions": {TASKS_EXTENSION: {}}})
            elif _has_tasks(ctx):
                # 2025-11-25 tasks: the client asks (``params.task``).
                task = params.get("task")
                if task is None and tool.task_support == "required":
                    raise MCPError(METHOD_NOT_FOUND, f"Tool {name} must be called as a task (params.task)")
                if task is not None:
                    return await self.runtime.task_runner.call(tool, arguments, ctx, task)
        elif not ctx.stateless and params.get("task") is not None and _has_tasks(ctx):
            raise MCPError(METHOD_NOT_FOUND, f"Tool {name} cannot run as a task")
        return await tool.call(arguments, ctx)

    # -- resources -----------------------------------------------------------------------------
    @handles("resources/list")
    async def _resources_list(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._listing(self.server.resources.listed(), params, ctx, "resources")

    @handles("resources/templates/list")
    async def _templates_list(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._listing(list(self.server.resources.templates.values()), params, ctx, "resourceTemplates")

    @handles("resources/read")
    async def _resources_read(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await self.server.resources.read(params.get("uri"), ctx)

    @handles("resources/subscribe")
    async def _subscribe(self, params: JSONObject, ctx: Context) -> JSONObject:
        """Subscribing is reading later: the same resource, the same right (unknown: -32002, like a read)."""
        uri = params.get("uri")
        resource, _ = access.resource(uri, ctx, "resources/subscribe")
        ctx.state.subscriptions.add(str(uri))
        resource.watch(str(uri))
        return _EMPTY

    @handles("resources/unsubscribe")
    async def _unsubscribe(self, params: JSONObject, ctx: Context) -> JSONObject:
        uri = _string(params, "uri", "resources/unsubscribe")
        ctx.state.subscriptions.discard(uri)
        return _EMPTY

    # -- prompts -------------------------------------------------------------------------------
    @handles("prompts/list")
    async def _prompts_list(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._listing(list(self.server.prompts.values()), params, ctx, "prompts", "prompts")

    @handles("prompts/get")
    async def _prompts_get(self, params: JSONObject, ctx: Context) -> JSONObject:
        prompt = access.prompt(params.get("name"), ctx)
        return await prompt.get(params.get("arguments"), ctx)

    # -- completion and logging ------------------------------------------------------------------
    @handles("logging/setLevel")
    async def _set_level(self, params: JSONObject, ctx: Context) -> JSONObject:
        level = params.get("level")
        if not isinstance(level, str) or level not in LOG_LEVEL_RANK:
            raise InvalidParams(f"Invalid log level: {level!r}")
        ctx.state.log_level = level
        return _EMPTY

    # -- handlers that live in their own modules ---------------------------------------------------
    @handles("completion/complete")
    async def _complete(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await completions.complete(params, ctx)

    @handles("skills/list")
    async def _skills_list(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await skill_methods.list_skills(params, ctx)

    @handles("skills/get")
    async def _skills_get(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await skill_methods.get_skill(params, ctx)

    @handles("resources/directory/read")
    async def _directory_read(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await skill_methods.read_directory(params, ctx)

    @handles("tasks/get", "handshake")
    async def _task_get(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await self.runtime.task_methods.get(params, ctx)

    @handles("tasks/get", "stateless")
    async def _task_get_detailed(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await self.runtime.task_methods.get_detailed(params, ctx)

    @handles("tasks/result")
    async def _task_result(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await self.runtime.task_methods.result(params, ctx)

    @handles("tasks/list")
    async def _task_list(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await self.runtime.task_methods.list(params, ctx)

    @handles("tasks/cancel", "handshake")
    async def _task_cancel(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await self.runtime.task_methods.cancel(params, ctx)

    @handles("tasks/cancel", "stateless")
    async def _task_cancel_ack(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await self.runtime.task_methods.cancel_ack(params, ctx)

    @handles("tasks/update")
    async def _task_update(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await self.runtime.task_methods.update(params, ctx)
