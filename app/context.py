"""The per-request context: what a handler may ask of the client and tell it while it runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

from pydantic import BaseModel, ValidationError

from wiremcp import apps
from wiremcp.asking import Asker, ClientRequests, InputRounds, NoChannel, declared, require_input_capability
from wiremcp.input_required import InputExchange
from wiremcp.principal import Principal
from wiremcp.protocol import LOG_LEVEL_RANK, at_least
from wiremcp.schema import elicitation_schema
from wiremcp.types import JSONObject, RequestId, Send, StreamControl

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from wiremcp.server import MCPServer
    from wiremcp.session import ServerSession
    from wiremcp.state import SessionState
    from wiremcp.task_runner import TaskBinding
    from wiremcp.tools import Tool

M = TypeVar("M", bound=BaseModel)

ElicitAction = Literal["accept", "decline", "cancel"]


@dataclasses.dataclass(slots=True)
class ElicitResult(Generic[M]):
    """The user's answer to an elicitation. ``data`` is the validated model when one was given."""

    action: ElicitAction
    content: JSONObject | None = None
    data: M | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


class Context:
    """Handed to a handler that declares a parameter annotated ``Context``."""

    __slots__ = (
        "_asker",
        "_control",
        "_last_progress",
        "_principal",
        "_send",
        "_starter",
        "exchange",
        "found_tool",
        "meta",
        "method",
        "params",
        "request_id",
        "server",
        "session",
        "state",
        "stateless",
        "task",
    )

    def __init__(self, server: MCPServer, state: SessionState, request_id: RequestId, method: str,
                 params: JSONObject, send: Send, *, stateless: bool = False, session: ServerSession | None = None,
                 control: StreamControl | None = None, principal: Principal | None = None,
                 found_tool: Tool | None = None) -> None:
        self.server = server
        self._principal = principal
        self.state = state
        """The handshake session's state, or (stateless era) the state this request's ``_meta`` declares."""
        self.session = session
        """The live handshake-era session, if the request belongs to one."""
        self.request_id = request_id
        self.method = method
        self.params = params
        meta = params.get("_meta")
        self.meta: JSONObject = meta if isinstance(meta, dict) else {}
        self.stateless = stateless
        """The era this request speaks, as ``wiremcp.inbound.classify`` found it."""
        self.found_tool = found_tool
        """The tool a ``tools/call`` names, if it was looked up as the call came in (``Inbound.tool``):
        ``wiremcp.access.tool`` judges the call on that lookup."""
        self.exchange: InputExchange | None = None
        self._send = send
        self._control = control
        self._last_progress: float | None = None
        self.task: TaskBinding | None = None
        """The task this call runs as, once it is one."""
        self._starter: Callable[[], Awaitable[None]] | None = None
        self._asker: Asker | None = None

    @property
    def asker(self) -> Asker:
        """How this request asks the client for input (``wiremcp.asking``), as its era and transport call for:
        input rounds in the stateless era, requests on its stream in a handshake-era session; once the call
        is a task, the task's way. (Made when first needed: most requests never ask.)"""
        if self._asker is None:
            self._asker = InputRounds(self) if self.stateless else (
                ClientRequests(self.session, self._send) if self.session is not None else NoChannel())
        return self._asker

    # -- what the handler can read ----------------------------------------------------------
    @property
    def protocol_version(self) -> str:
        return self.state.protocol_version or ""

    @property
    def client_capabilities(self) -> JSONObject:
        return self.state.client_capabilities

    @property
    def client_info(self) -> JSONObject:
        return self.state.client_info

    @property
    def supports_apps(self) -> bool:
        """Whether the client renders MCP Apps views (declared ``io.modelcontextprotocol/ui`` with HTML): a
        tool with a view can tailor its text to clients that show only text."""
        return apps.supports_apps(self.client_capabilities)

    @property
    def session_id(self) -> str | None:
        return self.state.id

    @property
    def lifespan_state(self) -> Any:
        """What the served server's lifespan yielded (``MCPServer(lifespan=...)``; a mounted server's own is its
        ``lifespan_state``); None without one."""
        return self.server.lifespan_state

    @property
    def principal(self) -> Principal | None:
        """Who sent this request, as the transport's authentication established it (over HTTP with auth on:
        a ``Principal`` with issuer, subject, client id, scopes and claims); None without auth."""
        return self._principal

    @property
    def input_responses(self) -> JSONObject:
        """The ``inputResponses`` this request brought (answers to an earlier ``InputRequired``), by key."""
        return self.exchange.responses if self.exchange is not None else {}

    @property
    def request_state(self) -> str | None:
        """The ``request_state`` given with the ``InputRequired`` this request answers (verified)."""
        return self.exchange.app_state if self.exchange is not None else None

    @property
    def task_id(self) -> str | None:
        """The id of the task this call runs as (None: an ordinary request)."""
        return self.task.task_id if self.task is not None else None

    async def start_task(self) -> None:
        """From here on, run as a task the client polls: for a tool registered with
        ``task_start="handler"``, whose handler first does what must happen while the client waits (in the
        stateless era, gather input through ``InputRequired`` rounds), then calls this. The client gets the
        task at once; the rest of the handler runs in the background and its result becomes the task's. Does
        nothing when the call cannot become a task (the client did not declare task support, or the tool's
        task starts with the call) or already is one."""
        starter, self._starter = self._starter, None
        if starter is not None:
            await starter()

    @property
    def may_be_task(self) -> bool:
        """Whether this call is a task, or may become one (``start_task`` would start it)."""
        return self.task is not None or self._starter is not None

    def become_task(self, binding: TaskBinding, send: Send) -> None:
        """Turn this request's context into its task's: messages go to ``send``, not the request's stream,
        and the task asks the client for input."""
        self.task = binding
        self._send = send
        self._control = None
        if self.session is not None and not self.stateless:
            binding.direct = ClientRequests(self.session, send)
        self._asker = binding

    @property
    def progress_token(self) -> str | int | None:
        token = self.meta.get("progressToken")
        return token if isinstance(token, str | int) and not isinstance(token, bool) else None

    # -- notifications related to this request ---------------------------------------------
    async def forward(self, message: JSONObject) -> None:
        """Send a ready-made message on this request's stream (``tasks/result`` carrying a task's)."""
        await self._send(message)

    async def send_notification(self, method: str, params: JSONObject | None = None) -> None:
        message: JSONObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the request asked for it; values must increase."""
        token = self.progress_token
        if token is None:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            return  # the spec requires progress to increase with each notification
        self._last_progress = progress
        params: JSONObject = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and at_least(self.protocol_version, "2025-03-26"):
            params["message"] = message
        await self.send_notification("notifications/progress", params)

    async def log(self, level: str, data: Any, logger: str | None = None, *, logger_name: str | None = None) -> None:
        """Send ``notifications/message`` if the client's log level lets it through. ``logger_name`` is
        ``logger`` under the name FastMCP and the official SDK give it."""
        logger = _one_logger(logger, logger_name)
        rank = LOG_LEVEL_RANK.get(level)
        if rank is None:
            raise ValueError(f"unknown log level {level!r}")
        threshold = self.state.log_level
        if threshold is None and self.stateless:
            return  # stateless era: no logLevel in _meta means no log messages for this request
        if threshold is not None and rank < LOG_LEVEL_RANK[threshold]:
            return
        params: JSONObject = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self.send_notification("notifications/message", params)

    async def debug(self, data: Any, logger: str | None = None, *, logger_name: str | None = None) -> None:
        await self.log("debug", data, logger, logger_name=logger_name)

    async def info(self, data: Any, logger: str | None = None, *, logger_name: str | None = None) -> None:
        await self.log("info", data, logger, logger_name=logger_name)

    async def warning(self, data: Any, logger: str | None = None, *, logger_name: str | None = None) -> None:
        await self.log("warning", data, logger, logger_name=logger_name)

    async def error(self, data: Any, logger: str | None = None, *, logger_name: str | None = None) -> None:
        await self.log("error", data, logger, logger_name=logger_name)

    def close_sse_stream(self) -> bool:
        """Over HTTP, close this request's SSE connection now without ending the request (SSE polling):
        the client reconnects after the ``retry`` delay and what was sent meanwhile is replayed. Only for
        2025-11-25 clients; elsewhere (stdio, older clients) it does nothing and returns False."""
        if self._control is None or not at_least(self.protocol_version, "2025-11-25"):
            return False
        return self._control.close_stream()

    # -- requests to the client ------------------------------------------------------------
    def require_capability(self, capability: str, sub: str | None = None) -> JSONObject:
        """The client's declared capability (or sub-capability). If it was not declared, the request is
        answered with -32021 naming what was missing (``MissingClientCapability``), in both eras: nothing is
        sent to a client that cannot answer it."""
        return declared(self.client_capabilities, capability, sub)

    async def request(self, method: str, params: JSONObject | None, timeout: float | None = None) -> JSONObject:
        """Ask the client for input (``elicitation/create``, ``sampling/createMessage``, ``roots/list``) the
        way this request asks (``asker``): a request sent on this request's stream (handshake era), an
        ``InputRequired`` result answered when the client retries (stateless era), or, inside a task, the
        task waiting (``input_required``) until the client answers."""
        require_input_capability(method, params, self.client_capabilities)
        return await self.asker.ask(method, params, timeout)

    @overload
    async def elicit(self, message: str, schema: type[M], *, timeout: float | None = None) -> ElicitResult[M]: ...
    @overload
    async def elicit(self, message: str, schema: JSONObject, *,
                     timeout: float | None = None) -> ElicitResult[BaseModel]: ...
    async def elicit(self, message: str, schema: type[M] | JSONObject, *,
                     timeout: float | None = None) -> ElicitResult[M] | ElicitResult[BaseModel]:
        """Ask the user to fill in a form (form mode). ``schema`` is a pydantic model or a flat JSON Schema."""
        model = schema if isinstance(schema, type) else None
        requested = elicitation_schema(schema) if isinstance(schema, type) else schema
        params: JSONObject = {"message": message, "requestedSchema": requested}
        if at_least(self.protocol_version, "2025-11-25"):
            params = {"mode": "form", **params}
        answer = await self.request("elicitation/create", params, timeout)
        return self._elicit_result(answer, model)

    async def elicit_url(self, message: str, url: str, elicitation_id: str, *,
                         timeout: float | None = None) -> ElicitResult[BaseModel]:
        """Send the user to a URL (URL mode, 2025-11-25); ``accept`` only means they agreed to go."""
        params: JSONObject = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        answer = await self.request("elicitation/create", params, timeout)
        return self._elicit_result(answer, None)

    @staticmethod
    def _elicit_result(answer: JSONObject, model: type[M] | None) -> ElicitResult[M]:
        action = answer.get("action")
        if action not in ("accept", "decline", "cancel"):
            raise ValueError(f"the client answered the elicitation with an invalid action {action!r}")
        content = answer.get("content")
        result: ElicitResult[M] = ElicitResult(action, content if isinstance(content, dict) else None)
        if action == "accept" and model is not None:
            try:
                result.data = model.model_validate(result.content or {})
            except ValidationError as exc:
                raise ValueError(f"the elicited content does not match the requested schema: {exc}") from exc
        return result

    async def sample(self, messages: str | Sequence[JSONObject], *, max_tokens: int = 1000,
                     system_prompt: str | None = None, temperature: float | None = None,
                     stop_sequences: list[str] | None = None, model_preferences: JSONObject | None = None,
                     include_context: Literal["none", "thisServer", "allServers"] | None = None,
                     tools: list[JSONObject] | None = None, tool_choice: JSONObject | None = None,
                     metadata: JSONObject | None = None, timeout: float | None = None) -> JSONObject:
        """Ask the client's model for a completion (``sampling/createMessage``)."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params: JSONObject = {"messages": list(messages), "maxTokens": max_tokens}
        optional = {"systemPrompt": system_prompt, "temperature": temperature, "stopSequences": stop_sequences,
                    "modelPreferences": model_preferences, "includeContext": include_context, "tools": tools,
                    "toolChoice": tool_choice, "metadata": metadata}
        params.update({k: v for k, v in optional.items() if v is not None})
        return await self.request("sampling/createMessage", params, timeout)

    async def list_roots(self, *, timeout: float | None = None) -> list[JSONObject]:
        """The client's roots (``roots/list``)."""
        answer = await self.request("roots/list", None, timeout)
        roots = answer.get("roots")
        return [r for r in roots if isinstance(r, dict)] if isinstance(roots, list) else []

    async def read_resource(self, uri: str) -> list[JSONObject]:
        """Read one of this server's own resources."""
        contents: list[JSONObject] = (await self.server.resources.read(uri, self))["contents"]
        return contents


def _one_logger(logger: str | None, logger_name: str | None) -> str | None:
    """The logger a log message names, given as ``logger`` or as ``logger_name``; both is a mistake."""
    if logger is not None and logger_name is not None:
        raise TypeError("give the logger as logger= or as logger_name=, not both")
    return logger if logger is not None else logger_name
