"""The server definition API: ``MCPServer`` and its decorators."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from wiremcp.completions import Completer
from wiremcp.observer import RequestObserver, joined, listed
from wiremcp.prompts import Prompt
from wiremcp.request_state import RequestStateSealer
from wiremcp.resources import Resource, Resources
from wiremcp.subscriptions import InMemorySubscriptionBus, SubscriptionBus
from wiremcp.tools import TaskStart, TaskSupport, Tool
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.dispatcher import Dispatcher
    from wiremcp.session import ServerSession
    from wiremcp.task_methods import TaskMethods
    from wiremcp.task_runner import TaskRunner

F = TypeVar("F", bound=Callable[..., Any])


class MCPServer:
    """Tools, resources, prompts and completions, defined once and served over any transport.

    >>> server = MCPServer("demo")
    >>> @server.tool()
    ... async def add(a: int, b: int) -> int:
    ...     return a + b
    """

    def __init__(self, name: str, version: str = "0.1.0", *, title: str | None = None,
                 description: str | None = None, instructions: str | None = None, website_url: str | None = None,
                 icons: list[JSONObject] | None = None, page_size: int = 100,
                 request_timeout: float = 300.0, cache_ttl_ms: int = 0,
                 cache_scope: Literal["public", "private"] = "private",
                 request_state_keys: Sequence[bytes] | None = None, request_state_ttl: float = 600.0,
                 bus: SubscriptionBus | None = None, filter_lists_by_scope: bool = True) -> None:
        if page_size < 1:
            raise ValueError("page_size must be positive")
        self.name = name
        self.version = version
        self.title = title
        self.description = description
        self.instructions = instructions
        self.website_url = website_url
        self.icons = icons
        self.page_size = page_size
        self.request_timeout = request_timeout
        """How long a handler waits for the client to answer a request (elicitation, sampling, roots)."""
        if cache_ttl_ms < 0 or cache_scope not in ("public", "private"):
            raise ValueError("cache_ttl_ms must be >= 0 and cache_scope 'public' or 'private'")
        self.cache_ttl_ms = cache_ttl_ms
        """The ``ttlMs`` stateless-era clients get on discover and list results (0: do not reuse)."""
        self.cache_scope = cache_scope
        """``private`` unless every caller may share the answers (lists that vary by user must stay private)."""
        self.request_states = RequestStateSealer(request_state_keys, ttl=request_state_ttl)
        """Seals ``requestState``; replicas that share the keys can finish each other's exchanges."""
        self.filter_lists_by_scope = filter_lists_by_scope
        """With authentication on, lists show only the tools, prompts and resources the caller's scopes allow."""
        self.bus: SubscriptionBus = bus or InMemorySubscriptionBus()
        """Where change events go to ``subscriptions/listen`` streams."""
        self.tools: dict[str, Tool] = {}
        self.prompts: dict[str, Prompt] = {}
        self.resources = Resources(lambda: self._list_changed("resources"))
        self.completers: dict[tuple[str, str, str], Completer] = {}
        self.observer: RequestObserver | None = None
        """Sees every request (metrics, tracing); see ``observe``."""
        self._sessions: weakref.WeakSet[ServerSession] = weakref.WeakSet()
        self._dispatcher: Dispatcher | None = None
        self._task_runner: TaskRunner | None = None
        self._task_methods: TaskMethods | None = None
        self._capabilities: JSONObject | None = None

    # -- identity ---------------------------------------------------------------------------
    def info(self) -> JSONObject:
        out: JSONObject = {"name": self.name, "version": self.version}
        for key, value in (("title", self.title), ("description", self.description), ("icons", self.icons),
                           ("websiteUrl", self.website_url)):
            if value:
                out[key] = value
        return out

    def identity(self) -> JSONObject:
        """``serverInfo`` for the stateless era's result ``_meta`` (name and version; title if set)."""
        out: JSONObject = {"name": self.name, "version": self.version}
        if self.title:
            out["title"] = self.title
        return out

    def capabilities(self) -> JSONObject:
        """What this server can do, as declared to clients: only what is actually there."""
        if self._capabilities is None:
            self._capabilities = self._compute_capabilities()
        return self._capabilities

    def _compute_capabilities(self) -> JSONObject:
        caps: JSONObject = {"logging": {}}
        if self.tools:
            caps["tools"] = {"listChanged": True}
        if self.resources:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self.prompts:
            caps["prompts"] = {"listChanged": True}
        if self.completers:
            caps["completions"] = {}
        if any(tool.task_support != "forbidden" for tool in self.tools.values()):
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        return caps

    @property
    def has_task_runner(self) -> bool:
        return self._task_runner is not None

    @property
    def task_methods(self) -> TaskMethods:
        """Answers the ``tasks/*`` requests of both eras for ``task_runner``."""
        if self._task_methods is None:
            from wiremcp.task_methods import TaskMethods

            self._task_methods = TaskMethods(self.task_runner)
        return self._task_methods

    @property
    def task_runner(self) -> TaskRunner:
        """Runs task-augmented tool calls (2025-11-25); its ``store`` may be replaced (e.g. Redis)."""
        if self._task_runner is None:
            from wiremcp.task_runner import TaskRunner

            self._task_runner = TaskRunner(self)
        return self._task_runner

    @property
    def dispatcher(self) -> Dispatcher:
        if self._dispatcher is None:
            from wiremcp.dispatcher import Dispatcher

            self._dispatcher = Dispatcher(self)
        return self._dispatcher

    # -- tools --------------------------------------------------------------------------------
    def tool(self, name: str | None = None, *, title: str | None = None, description: str | None = None,
             annotations: JSONObject | None = None, icons: list[JSONObject] | None = None,
             meta: JSONObject | None = None, input_schema: JSONObject | None = None,
             output_schema: JSONObject | None = None, structured_output: bool | None = None,
             scopes: list[str] | None = None, task_support: TaskSupport = "forbidden",
             task_start: TaskStart = "call") -> Callable[[F], F]:
        """Register a function as a tool. Its signature is the input schema, its return annotation the output.
        ``task_support``: whether the tool may (``optional``) or must (``required``) run as a task the client
        polls (both eras' tasks: see ``Tool.task_support``); ``task_start``: whether the task starts with the
        call or when the handler calls ``ctx.start_task()``."""

        def register(fn: F) -> F:
            self.add_tool(Tool(fn, name=name, title=title, description=description, annotations=annotations,
                               icons=icons, meta=meta, input_schema=input_schema, output_schema=output_schema,
                               structured_output=structured_output, scopes=scopes, task_support=task_support,
                               task_start=task_start))
            return fn

        return register

    def add_tool(self, tool: Tool) -> None:
        self.tools[tool.name] = tool
        self._list_changed("tools")

    def remove_tool(self, name: str) -> None:
        del self.tools[name]
        self._list_changed("tools")

    # -- resources ----------------------------------------------------------------------------
    def resource(self, uri: str, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None, size: int | None = None,
                 annotations: JSONObject | None = None, icons: list[JSONObject] | None = None,
                 meta: JSONObject | None = None, scopes: list[str] | None = None, ttl_ms: int | None = None,
                 cache_scope: Literal["public", "private"] | None = None) -> Callable[[F], F]:
        """Register a resource at ``uri``; a URI with ``{variables}`` (RFC 6570) registers a template.
        ``ttl_ms`` and ``cache_scope`` are the caching hints of its reads (stateless era)."""

        def register(fn: F) -> F:
            self.resources.add(Resource(uri, fn, name=name, title=title, description=description,
                                        mime_type=mime_type, size=size, annotations=annotations, icons=icons,
                                        meta=meta, scopes=scopes, ttl_ms=ttl_ms, cache_scope=cache_scope))
            return fn

        return register

    def remove_resource(self, uri: str) -> None:
        self.resources.remove(uri)

    def resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri`` that it changed."""
        message: JSONObject = {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                               "params": {"uri": uri}}
        for session in list(self._sessions):
            if session.state.wants(message):
                session.post(message)
        self.bus.publish(message)

    # -- prompts ------------------------------------------------------------------------------
    def prompt(self, name: str | None = None, *, title: str | None = None, description: str | None = None,
               icons: list[JSONObject] | None = None, meta: JSONObject | None = None,
               scopes: list[str] | None = None) -> Callable[[F], F]:
        """Register a function as a prompt; its parameters are the prompt's (string) arguments."""

        def register(fn: F) -> F:
            self.add_prompt(Prompt(fn, name=name, title=title, description=description, icons=icons, meta=meta,
                                   scopes=scopes))
            return fn

        return register

    def add_prompt(self, prompt: Prompt) -> None:
        self.prompts[prompt.name] = prompt
        self._list_changed("prompts")

    def remove_prompt(self, name: str) -> None:
        del self.prompts[name]
        self._list_changed("prompts")

    # -- completions --------------------------------------------------------------------------
    def completion(self, *, argument: str, prompt: str | None = None,
                   resource_template: str | None = None) -> Callable[[F], F]:
        """Register ``fn(value, arguments) -> list[str]`` completing one argument of a prompt or template."""
        if (prompt is None) == (resource_template is None):
            raise ValueError("give exactly one of prompt= or resource_template=")
        key = ("ref/prompt", prompt, argument) if prompt is not None else ("ref/resource", resource_template, argument)

        def register(fn: F) -> F:
            self.completers[(key[0], str(key[1]), key[2])] = Completer(fn)
            self._capabilities = None
            return fn

        return register

    # -- observers ----------------------------------------------------------------------------
    def observe(self, observer: RequestObserver) -> None:
        """Have ``observer`` see every request from now on (after those already observing)."""
        if observer not in listed(self.observer):
            self.observer = joined((*listed(self.observer), observer))

    def unobserve(self, observer: RequestObserver) -> None:
        self.observer = joined(tuple(o for o in listed(self.observer) if o is not observer))

    @property
    def observers(self) -> tuple[RequestObserver, ...]:
        return listed(self.observer)

    # -- serving ------------------------------------------------------------------------------
    def run(self, transport: Literal["stdio", "http"] = "stdio", *, host: str = "127.0.0.1", port: int = 8000) -> None:
        """Serve this server until stopped, with the settings of the ``WIREMCP_*`` environment: on
        stdin/stdout (as a host launches it, ``python server.py``), or with ``transport="http"``
        Streamable HTTP at ``http://{host}:{port}/mcp``. A bad setting ends the process with one line and
        exit status 2. Logs go to stderr; on stdio, anything printed before ``run()`` went to stdout."""
        from wiremcp.transports.serving.deployment import run  # the composition root, loaded only to serve

        run(self, transport, host=host, port=port)

    # -- sessions -----------------------------------------------------------------------------
    def attach(self, session: ServerSession) -> None:
        self._sessions.add(session)

    def detach(self, session: ServerSession) -> None:
        self._sessions.discard(session)

    def compact_sessions(self) -> None:
        """Rebuild the set of attached sessions at the size it needs now: a set keeps the table of its
        largest size after items leave it (for after many sessions ended at once). In place: a new set, made
        among the memory just freed, would hold the arena it landed in for as long as the server lives."""
        left = list(self._sessions)
        self._sessions.clear()
        self._sessions.update(left)

    def _list_changed(self, kind: str) -> None:
        self._capabilities = None
        if self._dispatcher is not None:
            self._dispatcher.forget_lists()
        message: JSONObject = {"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"}
        for session in list(self._sessions):
            if session.state.wants(message):
                session.post(message)
        self.bus.publish(message)
