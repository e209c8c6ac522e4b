"""The server definition API: ``MCPServer`` and its decorators. What serves it is its ``Runtime``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from wiremcp import apps
from wiremcp.completions import Completer
from wiremcp.component import defined
from wiremcp.errors import DefinitionError
from wiremcp.middleware import MiddlewareFn
from wiremcp.mount import Mount, MountHop
from wiremcp.prompts import Prompt
from wiremcp.protocol import SKILLS_EXTENSION
from wiremcp.resources import Resource, Resources
from wiremcp.runtime import Runtime
from wiremcp.skill_set import SkillSet, Source
from wiremcp.skills import from_memory
from wiremcp.tools import TaskStart, TaskSupport, Tool
from wiremcp.types import JSONObject

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound=MiddlewareFn)


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
                 cache_scope: Literal["public", "private"] = "private", filter_lists_by_scope: bool = True,
                 error_details: bool = False) -> None:
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
        self.error_details = error_details
        """Show clients the type and text of unexpected exceptions (development only: they can hold secrets).
        Off, a client gets a generic message and a reference that names the traceback in the log
        (``wiremcp.failures``); ``WIREMCP_ERROR_DETAILS=true`` turns it on for a deployment."""
        self.tools: dict[str, Tool] = {}
        self.prompts: dict[str, Prompt] = {}
        self.resources = Resources(lambda: self.list_changed("resources"))
        self.skill_set = SkillSet(self.resources, self.resource_updated)
        """The skills served (``skills``, ``skill``, ``add_skill``): their files are resources too."""
        self.completers: dict[tuple[str, str, str], Completer] = {}
        self._middleware: list[MiddlewareFn] = []
        self._mounts: list[Mount] = []
        """The servers mounted here (``mount``)."""
        self._mounted_in: list[Mount] = []
        """Where this server is mounted."""
        self.pipeline: tuple[MiddlewareFn, ...] = ()
        """What runs around the handler of every request and notification: the middleware, outermost first,
        then (with mounted servers) their middleware for what they serve (``wiremcp.mount.MountHop``)."""
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
        extensions: JSONObject = {}
        if self.skill_set:
            caps.setdefault("resources", {"subscribe": True, "listChanged": True})
            extensions[SKILLS_EXTENSION] = {"directoryRead": True}
        if any(apps.view_of(t.meta) for t in self.tools.values()) or any(
                r.mime_type == apps.MIME_TYPE for r in self.resources.static.values()):
            extensions[apps.EXTENSION] = {}
        if extensions:
            caps["extensions"] = extensions
        return caps

    def check(self) -> None:
        """What can only be checked once everything is registered (``wiremcp`` runs it before serving):
        every tool's ``ui://`` view is a resource of this server. ``DefinitionError`` says which is not."""
        for tool in self.tools.values():
            view = apps.view_of(tool.meta)
            if view is not None and self.resources.find_static(view) is None:
                raise DefinitionError(f"tool {tool.name}: its view {view} is not a resource of this server "
                                      "(register it with server.app)")

    # -- middleware ------------------------------------------------------------------------------
    def add_middleware(self, middleware: M) -> M:
        """Run ``middleware`` (``(call, call_next)``, see ``wiremcp.middleware``) around every request and
        notification, inside those added before it; returns it, so that it works as a decorator too."""
        if not callable(middleware):
            raise DefinitionError(f"middleware {middleware!r} is not callable as (call, call_next)")
        self._middleware.append(middleware)
        self._pipeline_changed()
        return middleware

    @property
    def middleware(self) -> tuple[MiddlewareFn, ...]:
        """The middleware added, outermost first."""
        return tuple(self._middleware)

    def _pipeline_changed(self) -> None:
        hop: tuple[MiddlewareFn, ...] = (MountHop(self._mounts),) if any(m.child.pipeline for m in self._mounts) else ()
        self.pipeline = (*self._middleware, *hop)
        for mount in self._mounted_in:
            mount.parent._pipeline_changed()

    # -- composition -------------------------------------------------------------------------------
    def mount(self, child: MCPServer, prefix: str | None = None) -> None:
        """Serve ``child``'s tools, prompts, resources, completions and skills here, under ``prefix`` (see
        ``wiremcp.mount``): ``<prefix>_<name>`` for tools and prompts, ``<scheme>://<prefix>/...`` for URIs
        (no prefix: under their own names).
        Live: what the child changes later is served here at once. Its scopes and middleware are kept. A name
        this server already serves raises ``DefinitionError``, as does mounting a server in itself."""
        if child is self or self._within(child):
            raise DefinitionError(f"mount {child.name} in {self.name}: a server cannot be mounted in itself")
        if any(m.child is child or (prefix is not None and m.prefix == prefix) for m in self._mounts):
            raise DefinitionError(f"mount {child.name} in {self.name}: that server or prefix {prefix!r} is mounted")
        mount = Mount(self, child, prefix)
        mount.sync()
        self._mounts.append(mount)
        child._mounted_in.append(mount)
        self._pipeline_changed()

    def _within(self, other: MCPServer) -> bool:
        """Whether this server is mounted, directly or not, in ``other``."""
        return any(m.parent is other or m.parent._within(other) for m in self._mounted_in)

    def serves(self, kind: str, key: str) -> bool:
        """Whether a tool or prompt of that name, or a resource or template at that URI, is served here
        (``kind``: ``tools``, ``prompts`` or ``resources``)."""
        if kind == "resources":
            return key in self.resources.static or key in self.resources.templates
        return key in (self.tools if kind == "tools" else self.prompts)

    def _mounted(self, kind: str, key: str) -> None:
        for mount in self._mounts:
            if key in getattr(mount, kind):
                raise DefinitionError(f"{kind[:-1]} {key}: served here from the mounted {mount.child.name}")

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
             task_start: TaskStart = "call", ui: str | None = None,
             visibility: Sequence[apps.Visibility] | None = None) -> Callable[[F], F]:
        """Register a function as a tool. Its signature is the input schema, its return annotation the output.
        ``task_support``: whether the tool may (``optional``) or must (``required``) run as a task the client
        polls (both eras' tasks: see ``Tool.task_support``); ``task_start``: whether the task starts with the
        call or when the handler calls ``ctx.start_task()``. ``ui``: the ``ui://`` view (``server.app``) that
        hosts supporting MCP Apps render its results in; ``visibility``: who may call it, ``model``, ``app``
        (the view only) or both (the default)."""

        def register(fn: F) -> F:
            self.add_tool(defined("tool", fn, lambda: Tool(
                fn, name=name, title=title, description=description, annotations=annotations, icons=icons,
                meta=apps.tool_meta(ui, visibility, meta) if ui is not None else _no_visibility(visibility, meta), input_schema=input_schema, output_schema=output_schema,
                structured_output=structured_output, scopes=scopes, task_support=task_support,
                task_start=task_start)))
            return fn

        return register

    def add_tool(self, tool: Tool) -> None:
        self._mounted("tools", tool.name)
        self.tools[tool.name] = tool
        self.list_changed("tools")

    def remove_tool(self, name: str) -> None:
        del self.tools[name]
        self.list_changed("tools")

    # -- resources ----------------------------------------------------------------------------
    def resource(self, uri: str, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None, size: int | None = None,
                 annotations: JSONObject | None = None, icons: list[JSONObject] | None = None,
                 meta: JSONObject | None = None, scopes: list[str] | None = None, ttl_ms: int | None = None,
                 cache_scope: Literal["public", "private"] | None = None) -> Callable[[F], F]:
        """Register a resource at ``uri``; a URI with ``{variables}`` (RFC 6570) registers a template.
        ``ttl_ms`` and ``cache_scope`` are the caching hints of its reads (stateless era)."""

        self._mounted("resources", uri)

        def register(fn: F) -> F:
            self.resources.add(defined("resource", fn, lambda: Resource(
                uri, fn, name=name, title=title, description=description, mime_type=mime_type, size=size,
                annotations=annotations, icons=icons, meta=meta, scopes=scopes, ttl_ms=ttl_ms,
                cache_scope=cache_scope)))
            return fn

        return register

    def remove_resource(self, uri: str) -> None:
        self.resources.remove(uri)

    def app(self, uri: str, html: str | None = None, *, file: str | Path | None = None, name: str | None = None,
            title: str | None = None, description: str | None = None, connect_domains: Iterable[str] | None = None,
            resource_domains: Iterable[str] | None = None, frame_domains: Iterable[str] | None = None,
            base_uri_domains: Iterable[str] | None = None, permissions: Iterable[apps.Permission] | None = None,
            domain: str | None = None, prefers_border: bool | None = None, scopes: list[str] | None = None) -> None:
        """Serve an MCP Apps view at ``uri`` (``ui://...``): ``html``, or the current content of ``file``, as
        ``text/html;profile=mcp-app``. The origins its Content Security Policy may allow (``*_domains``), the
        browser ``permissions`` it asks for, a dedicated ``domain`` and ``prefers_border`` go in its
        ``_meta.ui``. A tool names it with ``@server.tool(ui=uri)``."""

        try:
            apps.require_ui_uri(uri, "server.app's uri")
            ui = apps.resource_meta(connect_domains=connect_domains, resource_domains=resource_domains,
                                    frame_domains=frame_domains, base_uri_domains=base_uri_domains,
                                    permissions=permissions, domain=domain, prefers_border=prefers_border)
            view = Resource(uri, apps.reader(uri, html, file, ui), name=name or uri.removeprefix(apps.SCHEME),
                            title=title, description=description, mime_type=apps.MIME_TYPE,
                            meta={"ui": ui} if ui else None, scopes=scopes)
            self._mounted("resources", uri)
        except ValueError as exc:
            caller = sys._getframe(1)
            raise DefinitionError(f"{caller.f_code.co_filename}:{caller.f_lineno}: app {uri}: {exc}") from None
        self.resources.add(view)

    def resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri`` that it changed."""
        self.runtime.changed({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
        for mount in self._mounted_in:
            mount.parent.resource_updated(mount.uri(uri))

    # -- skills (SEP-2640) -----------------------------------------------------------------------
    def skills(self, folder: str | Path, *, prefix: str | None = None, scopes: list[str] | None = None,
               list_files: bool = False, refresh_seconds: float | None = 2.0) -> list[str]:
        """Serve every skill folder (a folder with a ``SKILL.md``) under ``folder``, nested ones too, at
        ``skill://[prefix/]<path from folder>/SKILL.md``; their URIs. Folders that appear, change or go are
        served as they are now within ``refresh_seconds`` (None: read once). ``list_files``: supporting files
        appear in ``resources/list`` too (each ``SKILL.md`` always does). A skill the Agent Skills spec or
        SEP-2640 refuses raises ``SkillError`` (a ``DefinitionError``) with the path and the reason."""
        source = Source(prefix, list(scopes or []), list_files, refresh_seconds, root=Path(folder))
        return [skill.uri for skill in self.skill_set.add(source)]

    def skill(self, folder: str | Path, *, prefix: str | None = None, scopes: list[str] | None = None,
              list_files: bool = False, refresh_seconds: float | None = 2.0) -> str:
        """Serve the one skill in ``folder`` (its name is the folder's) at ``skill://[prefix/]<name>/SKILL.md``;
        its URI. As ``skills`` otherwise."""
        source = Source(prefix, list(scopes or []), list_files, refresh_seconds, folder=Path(folder))
        return self.skill_set.add(source)[0].uri

    def add_skill(self, markdown: str, *, files: Mapping[str, str | bytes] | None = None, prefix: str | None = None,
                  scopes: list[str] | None = None, list_files: bool = False) -> str:
        """Serve a skill made here: ``markdown`` is its ``SKILL.md`` (frontmatter first), ``files`` its other
        files by path (``references/GUIDE.md``); its URI, ``skill://[prefix/]<name>/SKILL.md``. Adding it
        again under the same URI is refused: ``remove_skill`` first."""
        made = from_memory(markdown, files, prefix=prefix, scopes=scopes, list_files=list_files)
        return self.skill_set.add(Source(prefix, made.scopes, list_files, None, made=made))[0].uri

    def remove_skill(self, uri: str) -> None:
        """Stop serving the skill at ``uri`` (its ``SKILL.md``'s, or its root ``skill://<path>``)."""
        self.skill_set.remove(uri)

    # -- prompts ------------------------------------------------------------------------------
    def prompt(self, name: str | None = None, *, title: str | None = None, description: str | None = None,
               icons: list[JSONObject] | None = None, meta: JSONObject | None = None,
               scopes: list[str] | None = None) -> Callable[[F], F]:
        """Register a function as a prompt; its parameters are the prompt's (string) arguments."""

        def register(fn: F) -> F:
            self.add_prompt(defined("prompt", fn, lambda: Prompt(fn, name=name, title=title, description=description,
                                                                  icons=icons, meta=meta, scopes=scopes)))
            return fn

        return register

    def add_prompt(self, prompt: Prompt) -> None:
        self._mounted("prompts", prompt.name)
        self.prompts[prompt.name] = prompt
        self.list_changed("prompts")

    def remove_prompt(self, name: str) -> None:
        del self.prompts[name]
        self.list_changed("prompts")

    # -- completions --------------------------------------------------------------------------
    def completion(self, *, argument: str, prompt: str | None = None,
                   resource_template: str | None = None) -> Callable[[F], F]:
        """Register ``fn(value, arguments) -> list[str]`` completing one argument of a prompt or template."""
        if (prompt is None) == (resource_template is None):
            raise ValueError("give exactly one of prompt= or resource_template=")
        key = ("ref/prompt", prompt, argument) if prompt is not None else ("ref/resource", resource_template, argument)

        def register(fn: F) -> F:
            self.completers[(key[0], str(key[1]), key[2])] = Completer(fn)
            self.list_changed("completions")
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

    def list_changed(self, kind: str) -> None:
        """Tools, prompts, resources or completions (``kind``) were added or removed: clients that want to hear
        of it and the servers this one is mounted in hear of it."""
        self._capabilities = None
        if kind != "completions":
            self.runtime.changed({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"})
        for mount in self._mounted_in:
            mount.sync(kind)


def _no_visibility(visibility: Sequence[str] | None, meta: JSONObject | None) -> JSONObject | None:
    if visibility is not None:
        raise ValueError("visibility= is for a tool with a view (ui=)")
    return meta
