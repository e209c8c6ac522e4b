"""The server definition API: ``MCPServer`` and its decorators. What serves it is its ``Runtime``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import PydanticUserError

from wiremcp.completions import Completer
from wiremcp.errors import DefinitionError
from wiremcp.prompts import Prompt
from wiremcp.resources import Resource, Resources
from wiremcp.runtime import Runtime
from wiremcp.tools import TaskStart, TaskSupport, Tool
from wiremcp.types import JSONObject

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C")


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
                 cache_scope: Literal["public", "private"] = "private", filter_lists_by_scope: bool = True) -> None:
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
        self.filter_lists_by_scope = filter_lists_by_scope
        """With authentication on, lists show only the tools, prompts and resources the caller's scopes allow."""
        self.tools: dict[str, Tool] = {}
        self.prompts: dict[str, Prompt] = {}
        self.resources = Resources(lambda: self._list_changed("resources"))
        self.completers: dict[tuple[str, str, str], Completer] = {}
        self._capabilities: JSONObject | None = None
        self.runtime: Runtime = Runtime(self)
        """What serves this server: one with the in-memory defaults until a ``Runtime`` is made for it (with
        its stores, bus and replicas: ``Runtime(server, ...)`` replaces it)."""
        self._default_runtime = self.runtime

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

    # -- what serves it -------------------------------------------------------------------------
    def served_by(self, runtime: Runtime) -> None:
        """``runtime`` serves this server from now on (``Runtime`` calls it as it is made)."""
        self.runtime = runtime

    @property
    def has_own_runtime(self) -> bool:
        """Whether a ``Runtime`` was made for this server (else it has the in-memory defaults)."""
        return self.runtime is not self._default_runtime

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
            self.add_tool(_defined("tool", fn, lambda: Tool(
                fn, name=name, title=title, description=description, annotations=annotations, icons=icons,
                meta=meta, input_schema=input_schema, output_schema=output_schema,
                structured_output=structured_output, scopes=scopes, task_support=task_support,
                task_start=task_start)))
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
            self.resources.add(_defined("resource", fn, lambda: Resource(
                uri, fn, name=name, title=title, description=description, mime_type=mime_type, size=size,
                annotations=annotations, icons=icons, meta=meta, scopes=scopes, ttl_ms=ttl_ms,
                cache_scope=cache_scope)))
            return fn

        return register

    def remove_resource(self, uri: str) -> None:
        self.resources.remove(uri)

    def resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri`` that it changed."""
        self.runtime.changed({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})

    # -- prompts ------------------------------------------------------------------------------
    def prompt(self, name: str | None = None, *, title: str | None = None, description: str | None = None,
               icons: list[JSONObject] | None = None, meta: JSONObject | None = None,
               scopes: list[str] | None = None) -> Callable[[F], F]:
        """Register a function as a prompt; its parameters are the prompt's (string) arguments."""

        def register(fn: F) -> F:
            self.add_prompt(_defined("prompt", fn, lambda: Prompt(fn, name=name, title=title, description=description,
                                                                  icons=icons, meta=meta, scopes=scopes)))
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

    # -- serving ------------------------------------------------------------------------------
    def run(self, transport: Literal["stdio", "http"] = "stdio", *, host: str = "127.0.0.1", port: int = 8000) -> None:
        """Serve this server until stopped, with the settings of the ``WIREMCP_*`` environment: on
        stdin/stdout (as a host launches it, ``python server.py``), or with ``transport="http"``
        Streamable HTTP at ``http://{host}:{port}/mcp``. A bad setting ends the process with one line and
        exit status 2. Logs go to stderr; on stdio, anything printed before ``run()`` went to stdout."""
        from wiremcp.transports.serving.deployment import run  # the composition root, loaded only to serve

        run(self, transport, host=host, port=port)

    def _list_changed(self, kind: str) -> None:
        self._capabilities = None
        self.runtime.changed({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"})


def _defined(kind: str, fn: Callable[..., Any], make: Callable[[], C]) -> C:
    """``make()``, the component defined by ``fn``; what it refuses (a signature or annotation no schema can
    describe, a bad option) as a ``DefinitionError`` that says which ``kind`` of component, which function
    and where it is defined, in one line."""
    try:
        return make()
    except DefinitionError:
        raise
    except (TypeError, ValueError, PydanticUserError) as exc:
        code = getattr(fn, "__code__", None)
        where = f"{code.co_filename}:{code.co_firstlineno}: " if code is not None else ""
        name = getattr(fn, "__qualname__", repr(fn))
        said = str(exc).strip()
        why = said.splitlines()[0] if said else type(exc).__name__
        for said_already in (f"{kind} {name}: ", f"{name}: "):
            why = why.removeprefix(said_already)
        raise DefinitionError(f"{where}{kind} {name}: {why}") from exc
