"""The dispatcher: one JSON-RPC method in, one result out. It knows nothing about I/O.

Every transport hands it (method, params, context); the context carries the
session state (negotiated version, client capabilities, log level) and the
channel for messages related to the request.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from app import pagination
from app.errors import InvalidParams, InvalidRequest, MCPError, MethodNotFound
from app.protocol import LOG_LEVEL_RANK, negotiate
from app.types import JSONObject

if TYPE_CHECKING:
    from app.context import Context
    from app.server import MCPServer
    from app.session import ServerSession

log = logging.getLogger("mcpwire.dispatcher")

Handler = Callable[[JSONObject, "Context"], Awaitable[JSONObject]]

_EMPTY: JSONObject = {}

# Methods a client may send before the handshake completes.
_BEFORE_INITIALIZE = frozenset({"initialize", "ping"})

# Which server capability a method needs (absent: none).
_NEEDS = {
    "tools/list": "tools", "tools/call": "tools",
    "resources/list": "resources", "resources/templates/list": "resources", "resources/read": "resources",
    "resources/subscribe": "resources", "resources/unsubscribe": "resources",
    "prompts/list": "prompts", "prompts/get": "prompts",
    "completion/complete": "completions",
    "logging/setLevel": "logging",
}


def _string(params: JSONObject, key: str, method: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"{method} needs a string {key!r}")
    return value


class Dispatcher:
    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._handlers: dict[str, Handler] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/templates/list": self._templates_list,
            "resources/read": self._resources_read,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "prompts/list": self._prompts_list,
            "prompts/get": self._prompts_get,
            "completion/complete": self._complete,
            "logging/setLevel": self._set_level,
        }

    async def dispatch(self, method: str, params: JSONObject, ctx: Context) -> JSONObject:
        """The result of one request, or an MCPError."""
        handler = self._handlers.get(method)
        if handler is None:
            raise MethodNotFound(method)
        state = ctx.session.state
        if not state.initialized and method not in _BEFORE_INITIALIZE:
            raise InvalidRequest(f"Invalid Request: {method} before initialize; the session is not initialized")
        needed = _NEEDS.get(method)
        if needed is not None and needed not in self.server.capabilities():
            raise MethodNotFound(method)
        return await handler(params, ctx)

    def notify(self, method: str, params: JSONObject, session: ServerSession) -> None:
        """Client notifications other than cancelled/initialized (handled by the session)."""
        if method == "notifications/roots/list_changed":
            log.debug("client roots changed")
        # Unknown notifications are ignored, as JSON-RPC requires.

    # -- lifecycle -----------------------------------------------------------------------------
    async def _initialize(self, params: JSONObject, ctx: Context) -> JSONObject:
        state = ctx.session.state
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

    async def _ping(self, params: JSONObject, ctx: Context) -> JSONObject:
        return {}

    # -- tools ---------------------------------------------------------------------------------
    def _page(self, items: list[Any], params: JSONObject, key: str) -> JSONObject:
        chunk, next_cursor = pagination.page(items, params.get("cursor"), self.server.page_size)
        result: JSONObject = {key: [item.to_wire() for item in chunk]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def _tools_list(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page(list(self.server.tools.values()), params, "tools")

    async def _tools_call(self, params: JSONObject, ctx: Context) -> JSONObject:
        name = _string(params, "name", "tools/call")
        tool = self.server.tools.get(name)
        if tool is None:
            raise InvalidParams(f"Unknown tool: {name}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise InvalidParams("tools/call: arguments must be an object")
        return await tool.call(arguments, ctx)

    # -- resources -----------------------------------------------------------------------------
    async def _resources_list(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page(list(self.server.resources.static.values()), params, "resources")

    async def _templates_list(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page(list(self.server.resources.templates.values()), params, "resourceTemplates")

    async def _resources_read(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await self.server.resources.read(params.get("uri"), ctx)

    async def _subscribe(self, params: JSONObject, ctx: Context) -> JSONObject:
        uri = _string(params, "uri", "resources/subscribe")
        ctx.session.state.subscriptions.add(uri)
        return _EMPTY

    async def _unsubscribe(self, params: JSONObject, ctx: Context) -> JSONObject:
        uri = _string(params, "uri", "resources/unsubscribe")
        ctx.session.state.subscriptions.discard(uri)
        return _EMPTY

    # -- prompts -------------------------------------------------------------------------------
    async def _prompts_list(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page(list(self.server.prompts.values()), params, "prompts")

    async def _prompts_get(self, params: JSONObject, ctx: Context) -> JSONObject:
        name = _string(params, "name", "prompts/get")
        prompt = self.server.prompts.get(name)
        if prompt is None:
            raise InvalidParams(f"Unknown prompt: {name}")
        return await prompt.get(params.get("arguments"), ctx)

    # -- completion and logging ------------------------------------------------------------------
    async def _complete(self, params: JSONObject, ctx: Context) -> JSONObject:
        ref = params.get("ref")
        argument = params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise InvalidParams("completion/complete needs 'ref' and 'argument' objects")
        arg_name = argument.get("name")
        value = argument.get("value", "")
        if not isinstance(arg_name, str) or not isinstance(value, str):
            raise InvalidParams("completion/complete: argument needs string 'name' and 'value'")
        kind = ref.get("type")
        if kind == "ref/prompt":
            target = ref.get("name")
            prompt = self.server.prompts.get(target) if isinstance(target, str) else None
            if prompt is None:
                raise InvalidParams(f"Unknown prompt: {target}")
            if arg_name not in {a["name"] for a in prompt.arguments}:
                raise InvalidParams(f"Prompt {target} has no argument {arg_name}")
        elif kind == "ref/resource":
            target = ref.get("uri")
            template = self.server.resources.templates.get(target) if isinstance(target, str) else None
            if template is None or template.template is None:
                raise InvalidParams(f"Unknown resource template: {target}")
            if arg_name not in template.template.variables:
                raise InvalidParams(f"Resource template {target} has no variable {arg_name}")
        else:
            raise InvalidParams(f"Unknown reference type: {kind}")
        context = params.get("context")
        arguments = context.get("arguments") if isinstance(context, dict) else None
        completer = self.server.completers.get((kind, str(target), arg_name))
        if completer is None:
            return {"completion": {"values": [], "hasMore": False}}
        try:
            return await completer.complete(value, arguments if isinstance(arguments, dict) else {})
        except MCPError:
            raise
        except Exception as exc:
            log.exception("completion for %s failed", target)
            raise MCPError(-32603, "Completion failed") from exc

    async def _set_level(self, params: JSONObject, ctx: Context) -> JSONObject:
        level = params.get("level")
        if not isinstance(level, str) or level not in LOG_LEVEL_RANK:
            raise InvalidParams(f"Invalid log level: {level!r}")
        ctx.session.state.log_level = level
        return _EMPTY
