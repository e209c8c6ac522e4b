"""The server definition's decorators and registrations: ``@server.tool``, ``@server.resource``,
``@server.prompt``, ``@server.completion``, ``server.app`` and the ``add_*``/``remove_*`` they go through
(``Definitions``, the part of ``MCPServer`` that registers components).

A decorator is written bare (``@server.tool``) or with options (``@server.tool(title="Add")``); a resource
needs its URI, so a bare ``@server.resource`` is refused. What cannot be registered as written (something not
a function, a generator, a name that is not a string, a bad option) and a second component under a name or
URI already registered (unless ``replace=True``) raise ``DefinitionError`` as the module is imported, in
one line that starts with the ``file:line`` of the definition (and, for a duplicate, names the first's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from wiremcp import apps
from wiremcp.completions import Completer
from wiremcp.component import defined, definition_site, duplicate
from wiremcp.errors import DefinitionError
from wiremcp.prompts import Prompt
from wiremcp.resources import Resource, Resources
from wiremcp.tools import TaskStart, TaskSupport, Tool
from wiremcp.transforms import Arg, Transform
from wiremcp.types import JSONObject

F = TypeVar("F", bound=Callable[..., Any])
N = TypeVar("N", Tool, Prompt)


class Definitions:
    """What ``MCPServer`` serves, and how it is registered: its tools, prompts, resources and completers."""

    tools: dict[str, Tool]
    """The tools served: ``defined_tools`` with the ``transforms`` applied."""
    defined_tools: dict[str, Tool]
    """The tools defined here, mounted here or listed from the upstream, as they were written."""
    transforms: dict[str, Transform]
    """The transforms (``transform``), by the name of the tool each reshapes."""
    prompts: dict[str, Prompt]
    resources: Resources
    completers: dict[tuple[str, str, str], Completer]

    def list_changed(self, kind: str) -> None:
        """Tools, prompts, resources or completions (``kind``) were added or removed (``MCPServer``'s)."""
        raise NotImplementedError

    def _mounted(self, kind: str, key: str, where: str) -> None:
        """Refuse ``key`` if a mounted server serves it here (``MCPServer``'s)."""
        raise NotImplementedError

    def _may_serve(self, tool: str) -> bool:
        """Whether a tool of that name may be served here later: a remote child's (``MCPServer``'s)."""
        raise NotImplementedError

    # -- tools --------------------------------------------------------------------------------
    @overload
    def tool(self, name: F, /) -> F: ...

    @overload
    def tool(self, name: str | None = None, *, title: str | None = None, description: str | None = None,
             annotations: JSONObject | None = None, icons: list[JSONObject] | None = None,
             meta: JSONObject | None = None, input_schema: JSONObject | None = None,
             output_schema: JSONObject | None = None, structured_output: bool | None = None,
             scopes: list[str] | None = None, task_support: TaskSupport = "forbidden",
             task_start: TaskStart = "call", ui: str | None = None,
             visibility: Sequence[apps.Visibility] | None = None, blocking: bool | None = None,
             replace: bool = False) -> Callable[[F], F]: ...

    def tool(self, name: str | F | None = None, *, title: str | None = None, description: str | None = None,
             annotations: JSONObject | None = None, icons: list[JSONObject] | None = None,
             meta: JSONObject | None = None, input_schema: JSONObject | None = None,
             output_schema: JSONObject | None = None, structured_output: bool | None = None,
             scopes: list[str] | None = None, task_support: TaskSupport = "forbidden",
             task_start: TaskStart = "call", ui: str | None = None,
             visibility: Sequence[apps.Visibility] | None = None, blocking: bool | None = None,
             replace: bool = False) -> F | Callable[[F], F]:
        """Register a function as a tool (``@server.tool`` or ``@server.tool(...)``). Its signature is the input
        schema, its return annotation the output; its name the function's unless ``name`` is given.
        ``task_support``: whether the tool may (``optional``) or must (``required``) run as a task the client
        polls (both eras' tasks: see ``Tool.task_support``); ``task_start``: whether the task starts with the
        call or when the handler calls ``ctx.start_task()``. ``ui``: the ``ui://`` view (``server.app``) that
        hosts supporting MCP Apps render its results in; ``visibility``: who may call it, ``model``, ``app``
        (the view only) or both (the default). ``blocking``: a sync function is called on the event loop's
        thread, unless it is marked ``blocking=True`` (it waits on I/O or sleeps: its calls go to a worker
        thread) or one call holds the loop longer than ``wiremcp.threads.HOLD_LIMIT`` (then its later calls go
        to a worker); ``blocking=False`` keeps it on the loop. A tool of that name already here is refused,
        unless ``replace``."""
        bare, given = _bare("tool", name)

        def register(fn: F) -> F:
            self.add_tool(defined("tool", fn, lambda: Tool(
                fn, name=given, title=title, description=description, annotations=annotations, icons=icons,
                meta=apps.tool_meta(ui, visibility, meta) if ui is not None else _no_visibility(visibility, meta),
                input_schema=input_schema, output_schema=output_schema, structured_output=structured_output,
                scopes=scopes, task_support=task_support, task_start=task_start, blocking=blocking)),
                replace=replace)
            return fn

        return register(bare) if bare is not None else register

    def add_tool(self, tool: Tool, *, replace: bool = False) -> None:
        """Serve ``tool``; one of the same name already here is refused with a ``DefinitionError`` naming
        where each is defined, unless ``replace``."""
        for shaped in self.transforms.values():
            if shaped.name == tool.name and shaped.tool != tool.name:
                raise DefinitionError(f"{tool.defined_at}: tool {tool.name} is the name the transform of tool "
                                      f"{shaped.tool} at {shaped.defined_at} serves it under; give one another name")
        self._add("tools", self.defined_tools, tool, replace)

    def remove_tool(self, name: str) -> None:
        del self.defined_tools[name]
        self.list_changed("tools")

    def transform(self, tool: str, /, *, name: str | None = None, title: str | None = None,
                  description: str | None = None, arguments: Mapping[str, Arg] | None = None, listed: bool = True,
                  replace: bool = False) -> None:
        """Serve the tool named ``tool`` (as served here: a mounted child's under its prefix) in another shape
        (``wiremcp.transforms``): under ``name``, with ``title`` and ``description``, its ``arguments`` changed
        as each ``Arg`` says (renamed, redescribed, given a default, hidden with a value), left out of
        ``tools/list`` but callable (``listed=False``). A tool not here (and that no remote child may serve
        later), an argument it does not have, a required argument hidden without a value raise
        ``DefinitionError``; so does a second transform of one tool, unless ``replace``."""
        where = definition_site()
        made = Transform(tool, where, name=name, title=title, description=description, listed=listed,
                         arguments=arguments)
        first = self.transforms.get(made.tool)
        if first is not None and not replace:
            raise DefinitionError(f"{where}: tool {made.tool} is transformed already at {first.defined_at}; give "
                                  "one transform, or pass replace=True to replace that one")
        source = self.defined_tools.get(made.tool)
        if source is not None:
            try:
                shaped = made.made_from(source)
            except ValueError as exc:
                raise DefinitionError(f"{where}: transform {made.tool}: {exc}") from None
            other = self.defined_tools.get(shaped.name)
            moved = self.transforms.get(shaped.name)
            if other is not None and other is not source and (moved is None or moved.name in (None, shaped.name)):
                raise DefinitionError(f"{where}: transform {made.tool}: tool {shaped.name} is served here already "
                                      f"(defined at {other.defined_at})")
        elif not self._may_serve(made.tool):
            known = ", ".join(sorted(self.defined_tools)) or "none"
            raise DefinitionError(f"{where}: transform {made.tool}: no tool {made.tool} here (its tools: {known}); "
                                  "transform a tool after it is defined or mounted")
        self.transforms[made.tool] = made
        self.list_changed("tools")

    def _add(self, kind: Literal["tools", "prompts"], named: dict[str, N], component: N, replace: bool) -> None:
        """``component`` served under its name among ``named`` (the tools or the prompts): one already there
        (not the same) is refused naming where each is defined, unless ``replace``; so is a name a mounted
        server serves here."""
        self._mounted(kind, component.name, component.defined_at)
        first = named.get(component.name)
        if first is not None and first is not component and not replace:
            raise duplicate(kind[:-1], component.name, first.defined_at, component.defined_at, "another name")
        named[component.name] = component
        self.list_changed(kind)

    def remove_transform(self, tool: str) -> None:
        """Serve the tool named ``tool`` as it is again (``transform``'s); clients hear of it."""
        del self.transforms[tool]
        self.list_changed("tools")

    # -- resources ----------------------------------------------------------------------------
    def resource(self, uri: str, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None, size: int | None = None,
                 annotations: JSONObject | None = None, icons: list[JSONObject] | None = None,
                 meta: JSONObject | None = None, scopes: list[str] | None = None, ttl_ms: int | None = None,
                 cache_scope: Literal["public", "private"] | None = None, blocking: bool | None = None,
                 replace: bool = False) -> Callable[[F], F]:
        """Register a resource at ``uri``; a URI with ``{variables}`` (RFC 6570) registers a template.
        ``ttl_ms`` and ``cache_scope`` are the caching hints of its reads (stateless era). A resource (or
        template) already at ``uri`` is refused, unless ``replace``. ``blocking``: where a sync function runs,
        as for ``tool``. A resource needs its URI: a bare
        ``@server.resource`` raises ``DefinitionError``."""
        if not isinstance(uri, str):
            what = getattr(uri, "__qualname__", None) if callable(uri) else None
            said = f"resource {what}: a resource needs its URI" if what else f"resource: its URI must be a string, not {uri!r}"
            raise DefinitionError(f"{definition_site(uri)}: {said}, as in @server.resource(\"notes://{{name}}\")")
        self._mounted("resources", uri, definition_site())

        def register(fn: F) -> F:
            resource = defined("resource", fn, lambda: Resource(
                uri, fn, name=name, title=title, description=description, mime_type=mime_type, size=size,
                annotations=annotations, icons=icons, meta=meta, scopes=scopes, ttl_ms=ttl_ms,
                cache_scope=cache_scope, blocking=blocking))
            self.resources.add(resource, replace=replace)
            return fn

        return register

    def remove_resource(self, uri: str) -> None:
        self.resources.remove(uri)

    def app(self, uri: str, html: str | None = None, *, file: str | Path | None = None, name: str | None = None,
            title: str | None = None, description: str | None = None, connect_domains: Iterable[str] | None = None,
            resource_domains: Iterable[str] | None = None, frame_domains: Iterable[str] | None = None,
            base_uri_domains: Iterable[str] | None = None, permissions: Iterable[apps.Permission] | None = None,
            domain: str | None = None, prefers_border: bool | None = None, scopes: list[str] | None = None,
            replace: bool = False) -> None:
        """Serve an MCP Apps view at ``uri`` (``ui://...``): ``html``, or the current content of ``file``, as
        ``text/html;profile=mcp-app``. The origins its Content Security Policy may allow (``*_domains``), the
        browser ``permissions`` it asks for, a dedicated ``domain`` and ``prefers_border`` go in its
        ``_meta.ui``. A tool names it with ``@server.tool(ui=uri)``. A resource already at ``uri`` is refused,
        unless ``replace``."""
        here = definition_site()
        try:
            apps.require_ui_uri(uri, "server.app's uri")
            ui = apps.resource_meta(connect_domains=connect_domains, resource_domains=resource_domains,
                                    frame_domains=frame_domains, base_uri_domains=base_uri_domains,
                                    permissions=permissions, domain=domain, prefers_border=prefers_border)
            view = Resource(uri, apps.reader(uri, html, file, ui), name=name or uri.removeprefix(apps.SCHEME),
                            title=title, description=description, mime_type=apps.MIME_TYPE,
                            meta={"ui": ui} if ui else None, scopes=scopes)
        except DefinitionError:
            raise
        except ValueError as exc:
            raise DefinitionError(f"{here}: app {uri}: {exc}") from None
        view.defined_at = here
        self._mounted("resources", uri, here)
        self.resources.add(view, replace=replace)

    # -- prompts ------------------------------------------------------------------------------
    @overload
    def prompt(self, name: F, /) -> F: ...

    @overload
    def prompt(self, name: str | None = None, *, title: str | None = None, description: str | None = None,
               icons: list[JSONObject] | None = None, meta: JSONObject | None = None,
               scopes: list[str] | None = None, blocking: bool | None = None,
               replace: bool = False) -> Callable[[F], F]: ...

    def prompt(self, name: str | F | None = None, *, title: str | None = None, description: str | None = None,
               icons: list[JSONObject] | None = None, meta: JSONObject | None = None,
               scopes: list[str] | None = None, blocking: bool | None = None,
               replace: bool = False) -> F | Callable[[F], F]:
        """Register a function as a prompt (``@server.prompt`` or ``@server.prompt(...)``); its parameters are the
        prompt's (string) arguments. ``blocking``: where a sync function runs, as for ``tool``. A prompt of that
        name already here is refused, unless ``replace``."""
        bare, given = _bare("prompt", name)

        def register(fn: F) -> F:
            self.add_prompt(defined("prompt", fn, lambda: Prompt(fn, name=given, title=title, description=description,
                                                                  icons=icons, meta=meta, scopes=scopes,
                                                                  blocking=blocking)),
                            replace=replace)
            return fn

        return register(bare) if bare is not None else register

    def add_prompt(self, prompt: Prompt, *, replace: bool = False) -> None:
        """Serve ``prompt``; one of the same name already here is refused with a ``DefinitionError`` naming
        where each is defined, unless ``replace``."""
        self._add("prompts", self.prompts, prompt, replace)

    def remove_prompt(self, name: str) -> None:
        del self.prompts[name]
        self.list_changed("prompts")

    # -- completions --------------------------------------------------------------------------
    def completion(self, fn: Callable[..., Any] | None = None, /, *, argument: str | None = None,
                   prompt: str | None = None, resource_template: str | None = None,
                   replace: bool = False) -> Callable[[F], F]:
        """Register ``fn(value, arguments) -> list[str]`` completing one argument of a prompt or template:
        ``@server.completion(prompt="review", argument="tone")``. A completion of that argument already here is
        refused, unless ``replace``."""
        if fn is not None or not isinstance(argument, str) or (prompt is None) == (resource_template is None):
            raise DefinitionError(f"{definition_site(fn)}: completion: give argument= and exactly one of prompt= or "
                                  "resource_template=, as in @server.completion(prompt=\"review\", argument=\"tone\")")
        ref = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", resource_template)
        if not isinstance(ref[1], str):
            raise DefinitionError(f"{definition_site()}: completion: prompt= or resource_template= must be a string, "
                                  f"not {ref[1]!r}")
        key = (ref[0], ref[1], argument)

        def register(fn: F) -> F:
            completer = defined("completion", fn, lambda: Completer(fn))
            first = self.completers.get(key)
            if first is not None and not replace:
                raise duplicate("completion", f"of {argument} for {ref[1]}", first.defined_at, completer.defined_at,
                                "another argument")
            self.completers[key] = completer
            self.list_changed("completions")
            return fn

        return register


def _no_visibility(visibility: Sequence[str] | None, meta: JSONObject | None) -> JSONObject | None:
    if visibility is not None:
        raise ValueError("visibility= is for a tool with a view (ui=)")
    return meta


def _bare(kind: str, name: Any) -> tuple[Any, str | None]:
    """A decorator's first argument: the function itself (``@server.tool``: the function, no name), or the
    name it is given (``@server.tool("add")``); anything else is a ``DefinitionError``."""
    if name is None or isinstance(name, str):
        return None, name
    if callable(name):
        return name, None
    raise DefinitionError(f"{definition_site()}: {kind}: its name must be a string, not {name!r}")
