"""The server definition API: ``MCPServer`` (its decorators: ``wiremcp.definitions``). What serves it is its ``Runtime``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from wiremcp import apps, composition, views
from wiremcp.completions import Completer
from wiremcp.component import definition_site
from wiremcp.definitions import Definitions
from wiremcp.errors import DefinitionError
from wiremcp.lifespan import Lifespan
from wiremcp.middleware import MiddlewareFn
from wiremcp.mount import Mount, MountHop
from wiremcp.prompts import Prompt
from wiremcp.protocol import SKILLS_EXTENSION
from wiremcp.resources import Resources
from wiremcp.runtime import Runtime
from wiremcp.skill_set import SkillSet, Source
from wiremcp.skills import from_memory
from wiremcp.tool_search import Searcher, ToolSearch
from wiremcp.tools import Tool
from wiremcp.transforms import Transform, served
from wiremcp.types import JSONObject
from wiremcp.views import View

M = TypeVar("M", bound=MiddlewareFn)


class MCPServer(Definitions):
    """Tools, resources, prompts and completions, defined once and served over any transport.

    >>> server = MCPServer("demo")
    >>> @server.tool
    ... async def add(a: int, b: int) -> int:
    ...     return a + b

    A decorator is written bare (``@server.tool``) or with options (``@server.tool(title="Add")``). What cannot
    be registered as written (a duplicate name, something not a function, a bad option) raises
    ``DefinitionError`` as it is registered, with the ``file:line`` of the definition (and of the first one,
    for a duplicate)."""

    def __init__(self, name: str, version: str = "0.1.0", *, title: str | None = None,
                 description: str | None = None, instructions: str | None = None, website_url: str | None = None,
                 icons: list[JSONObject] | None = None, page_size: int = 100,
                 request_timeout: float = 300.0, cache_ttl_ms: int = 0,
                 cache_scope: Literal["public", "private"] = "private", filter_lists_by_scope: bool = True,
                 error_details: bool = False, lifespan: Lifespan | None = None,
                 tool_search: ToolSearch | None = None) -> None:
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
        if lifespan is not None and not callable(lifespan):
            raise DefinitionError(f"{definition_site()}: MCPServer {name}: lifespan is a function of the server that "
                                  "returns an async context manager (@contextlib.asynccontextmanager)")
        self.lifespan = lifespan
        """What the server opens before it serves and closes after (``wiremcp.lifespan``): ``lifespan(server)``,
        an async context manager, entered once per process by whichever way it is served."""
        self.lifespan_state: Any = None
        """What its lifespan yielded, while it runs (a handler reads it as ``ctx.lifespan_state``)."""
        """Show clients the type and text of unexpected exceptions (development only: they can hold secrets).
        Off, a client gets a generic message and a reference that names the traceback in the log
        (``wiremcp.failures``); ``WIREMCP_ERROR_DETAILS=true`` turns it on for a deployment."""
        self.defined_tools: dict[str, Tool] = {}
        self.tools: dict[str, Tool] = self.defined_tools
        self.transforms: dict[str, Transform] = {}
        self.from_upstream = False
        """Whether its catalog is an upstream's, listed as it serves and whenever the upstream changes it (a
        remote child's): a transform may name a tool it does not list (yet)."""
        self.tools_version = 0
        """One more at every change of the tools served here (a mounted or remote child's too): what a tool
        search's index is checked against (``wiremcp.tool_search``)."""
        self.searchers: list[Searcher] = []
        """The tool searches served here: over the whole catalog (``tool_search``), or a mount's."""
        self.prompts: dict[str, Prompt] = {}
        self.resources = Resources(lambda: self.list_changed("resources"))
        self.skill_set = SkillSet(self.resources, self.resource_updated)
        """The skills served (``skills``, ``skill``, ``add_skill``): their files are resources too."""
        self.completers: dict[tuple[str, str, str], Completer] = {}
        self.views: dict[str, View] = {}
        """Named subsets of the catalog, by name, each for the callers of one team (``view``)."""
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
        its backend: ``Runtime(server, backend=...)`` replaces it)."""
        self._default_runtime = self.runtime
        self.tool_search = tool_search
        """How this server offers its catalog through search (``wiremcp.tool_search``); None: listed whole."""
        if tool_search is not None:
            if not isinstance(tool_search, ToolSearch):
                raise DefinitionError(f"{definition_site()}: MCPServer {name}: tool_search takes a ToolSearch(...), "
                                      f"not {tool_search!r}")
            self._search(Searcher(tool_search, self, tool_search.name, tool_search.pinned))

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
            raise DefinitionError(f"{definition_site()}: middleware {middleware!r} is not callable as (call, call_next)")
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

    def view(self, name: str, *, tools: Sequence[str] = (), prompts: Sequence[str] = (),
             resources: Sequence[str] = (), scopes: Sequence[str] = (), groups: Sequence[str] = (),
             tool_search: ToolSearch | None = None) -> None:
        """A named subset of this server's catalog for one team (``wiremcp.views``): callers holding one of
        ``scopes``, or in one of ``groups`` (their token's ``groups`` claim), see only the ``tools``, ``prompts``
        and ``resources`` (shell-style patterns over names and URIs as served here, ``github_*``) of their views.
        Callers whom no view names see the whole catalog. ``tool_search``: the view's callers are listed its
        search tool (which finds what their views show) and its pinned tools instead."""
        where = definition_site()
        if tool_search is not None and not isinstance(tool_search, ToolSearch):
            raise DefinitionError(f"{where}: view {name}: tool_search takes a ToolSearch(...), not {tool_search!r}")
        made = views.make(name, where, tools=tools, prompts=prompts, resources=resources, scopes=scopes,
                          groups=groups, search=tool_search)
        if made.name in self.views:
            raise DefinitionError(f"{where}: view {made.name} is already defined on {self.name}")
        if tool_search is not None and not any(s.covers is None and s.tool.name == tool_search.name
                                               for s in self.searchers):
            searcher = Searcher(tool_search, self, tool_search.name, ())
            searcher.views_only = True
            self._search(searcher)
        self.views[made.name] = made

    # -- composition -------------------------------------------------------------------------------
    def mount(self, child: MCPServer, prefix: str | None = None, *, namespace: str | None = None,
              replace: bool = False, tool_search: ToolSearch | None = None) -> None:
        """Serve ``child``'s tools, prompts, resources, completions and skills here, under ``prefix`` (see
        ``wiremcp.mount``): ``<prefix>_<name>`` for tools and prompts, ``<scheme>://<prefix>/...`` for URIs
        (no prefix: under their own names). ``namespace`` is ``prefix`` under FastMCP 3's name for it.
        Live: what the child changes later is served here at once. Its scopes and middleware are kept. A name
        this server already serves raises ``DefinitionError``, as does mounting a server in itself, and
        mounting a server or a prefix mounted already, unless ``replace`` (that mount is taken away first).
        ``tool_search`` (or else the child's own): the child's tools are offered here through a search tool,
        ``<prefix>_search_tools``, and listed only if pinned (``pinned`` names them as the child does)."""
        here = definition_site()
        if namespace is not None:
            if prefix is not None:
                raise DefinitionError(f"{here}: mount: give the prefix as prefix= or as namespace=, not both")
            prefix = namespace
        if not isinstance(child, MCPServer):
            raise DefinitionError(f"{here}: mount: {child!r} is not an MCPServer")
        if tool_search is not None and not isinstance(tool_search, ToolSearch):
            raise DefinitionError(f"{here}: mount {child.name}: tool_search takes a ToolSearch(...), not {tool_search!r}")
        if child is self or self._within(child):
            raise DefinitionError(f"{here}: mount {child.name} in {self.name}: a server cannot be mounted in itself")
        for mounted in list(self._mounts):
            if mounted.child is child or (prefix is not None and mounted.prefix == prefix):
                if not replace:
                    raise DefinitionError(f"{here}: mount {child.name} in {self.name}: that server or prefix "
                                          f"{prefix!r} is mounted already at {mounted.defined_at}; pass replace=True "
                                          "to replace that mount")
                self._unmount(mounted)
        mount = Mount(self, child, prefix)
        mount.sync()
        self._mounts.append(mount)
        child._mounted_in.append(mount)
        search = tool_search if tool_search is not None else child.tool_search
        if search is not None:
            try:
                self._search(Searcher(search, self, mount.name(search.name), [mount.name(p) for p in search.pinned],
                                      lambda: mount.tools, f"the tools of {child.name}"), mount)
            except DefinitionError:
                self._unmount(mount)
                raise
        self._pipeline_changed()

    @property
    def mounts(self) -> tuple[Mount, ...]:
        """The servers mounted here, each with its prefix."""
        return tuple(self._mounts)

    def _search(self, searcher: Searcher, mount: Mount | None = None) -> None:
        """Serve ``searcher``'s search tool here (a tool of that name already served is refused)."""
        self.add_tool(searcher.tool)
        searcher.mount = mount
        self.searchers.append(searcher)
        self.list_changed("tools")

    def remove_tool(self, name: str) -> None:
        """Stop serving the tool ``name``; a search tool taken away takes its search with it (what it covered is
        listed again)."""
        self.searchers = [s for s in self.searchers if s.tool.name != name]
        super().remove_tool(name)

    def _unmount(self, mount: Mount) -> None:
        """Stop serving what ``mount`` serves here."""
        for searcher in [s for s in self.searchers if s.mount is mount]:
            self.searchers.remove(searcher)
            self.defined_tools.pop(searcher.tool.name, None)
        mount.clear()
        self._mounts.remove(mount)
        mount.child._mounted_in.remove(mount)
        self._pipeline_changed()

    def _within(self, other: MCPServer) -> bool:
        """Whether this server is mounted, directly or not, in ``other``."""
        return any(m.parent is other or m.parent._within(other) for m in self._mounted_in)

    def serves(self, kind: str, key: str) -> bool:
        """Whether a tool or prompt of that name, or a resource or template at that URI, is served here
        (``kind``: ``tools``, ``prompts`` or ``resources``)."""
        if kind == "resources":
            return key in self.resources.static or key in self.resources.templates
        return key in (self.defined_tools if kind == "tools" else self.prompts)

    def _may_serve(self, tool: str) -> bool:
        if self.from_upstream:
            return True
        for mount in self._mounts:
            inner = tool if mount.prefix is None else tool.removeprefix(f"{mount.prefix}_")
            if (mount.prefix is None or inner != tool) and inner not in mount.child.tools and mount.child._may_serve(inner):
                return True
        return False

    def _mounted(self, kind: str, key: str, where: str) -> None:
        for mount in self._mounts:
            if key in getattr(mount, kind):
                raise DefinitionError(f"{where}: {kind[:-1]} {key}: served here from the mounted {mount.child.name} "
                                      f"(mounted at {mount.defined_at})")

    # -- what serves it -------------------------------------------------------------------------
    def served_by(self, runtime: Runtime) -> None:
        """``runtime`` serves this server from now on (``Runtime`` calls it as it is made)."""
        self.runtime = runtime

    @property
    def has_own_runtime(self) -> bool:
        """Whether a ``Runtime`` was made for this server (else it has the in-memory defaults)."""
        return self.runtime is not self._default_runtime

    def resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri`` that it changed."""
        self.runtime.changed({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
        for mount in self._mounted_in:
            mount.parent.resource_updated(mount.uri(uri))

    # -- skills (SEP-2640) -----------------------------------------------------------------------
    def skills(self, folder: str | Path, *, prefix: str | None = None, scopes: list[str] | None = None,
               list_files: bool = False, refresh_seconds: float | None = 2.0, replace: bool = False) -> list[str]:
        """Serve every skill folder (a folder with a ``SKILL.md``) under ``folder``, nested ones too, at
        ``skill://[prefix/]<path from folder>/SKILL.md``; their URIs. Folders that appear, change or go are
        served as they are now within ``refresh_seconds`` (None: read once). ``list_files``: supporting files
        appear in ``resources/list`` too (each ``SKILL.md`` always does). A skill the Agent Skills spec or
        SEP-2640 refuses raises ``SkillError`` (a ``DefinitionError``) with the path and the reason, and so does
        a skill already served from elsewhere, unless ``replace`` (then it is served from here instead)."""
        source = Source(prefix, list(scopes or []), list_files, refresh_seconds, root=Path(folder))
        return [skill.uri for skill in self.skill_set.add(source, replace=replace)]

    def skill(self, folder: str | Path, *, prefix: str | None = None, scopes: list[str] | None = None,
              list_files: bool = False, refresh_seconds: float | None = 2.0, replace: bool = False) -> str:
        """Serve the one skill in ``folder`` (its name is the folder's) at ``skill://[prefix/]<name>/SKILL.md``;
        its URI. As ``skills`` otherwise."""
        source = Source(prefix, list(scopes or []), list_files, refresh_seconds, folder=Path(folder))
        return self.skill_set.add(source, replace=replace)[0].uri

    def add_skill(self, markdown: str, *, files: Mapping[str, str | bytes] | None = None, prefix: str | None = None,
                  scopes: list[str] | None = None, list_files: bool = False, replace: bool = False) -> str:
        """Serve a skill made here: ``markdown`` is its ``SKILL.md`` (frontmatter first), ``files`` its other
        files by path (``references/GUIDE.md``); its URI, ``skill://[prefix/]<name>/SKILL.md``. Adding it
        again under the same URI is refused, unless ``replace``."""
        made = from_memory(markdown, files, prefix=prefix, scopes=scopes, list_files=list_files)
        return self.skill_set.add(Source(prefix, made.scopes, list_files, None, made=made), replace=replace)[0].uri

    def remove_skill(self, uri: str) -> None:
        """Stop serving the skill at ``uri`` (its ``SKILL.md``'s, or its root ``skill://<path>``)."""
        self.skill_set.remove(uri)

    # -- serving ------------------------------------------------------------------------------
    def run(self, transport: Literal["stdio", "http", "streamable-http"] = "stdio", *, host: str = "127.0.0.1",
            port: int = 8000) -> None:
        """Serve this server until stopped, with the settings of the ``WIREMCP_*`` environment: on
        stdin/stdout (as a host launches it, ``python server.py``), or with ``transport="http"`` (also
        spelt ``"streamable-http"``) Streamable HTTP at ``http://{host}:{port}/mcp``. A bad setting ends the
        process with one line and exit status 2. Logs go to stderr; on stdio, anything printed before
        ``run()`` went to stdout."""
        composition.part("run")(self, transport, host=host, port=port)

    def list_changed(self, kind: str) -> None:
        """Tools, prompts, resources or completions (``kind``) were added or removed: clients that want to hear
        of it and the servers this one is mounted in hear of it."""
        self._capabilities = None
        if kind == "tools":
            self.tools = served(self.defined_tools, self.transforms)
            self.tools_version += 1
        if kind != "completions":
            self.runtime.changed({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"})
        for mount in self._mounted_in:
            mount.sync(kind)

