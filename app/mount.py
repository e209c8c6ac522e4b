"""Composition: one server definition served inside another under a namespace (``MCPServer.mount``).

A mounted child's tools and prompts appear in the parent as ``<prefix>_<name>``; its resources, templates,
views and skills as ``<scheme>://<prefix>/<rest>`` (``weather://forecast/{city}`` becomes
``weather://wx/forecast/{city}`` under ``wx``); its completions follow its prompts and templates. They are
the child's own components under another name: the same functions, schemas and scopes. The mount is live:
what the child adds, removes or updates later reaches the parent and its clients (``list_changed``,
``resources/updated``). A name that the parent (or another mount) already serves is refused with a
``DefinitionError``, at ``mount`` and at every later change of the child.

The child's middleware is kept: a request that names one of the child's components (``tools/call``,
``prompts/get``, ``resources/read``, ``resources/subscribe``, ``completion/complete``, ``skills/get``,
``resources/directory/read``) goes through the parent's middleware, then the child's, which sees the names
the child gave (``MountHop``); lists are the parent's own requests. A call of the parent's transform of one of
the child's tools (``wiremcp.transforms``) reaches the child's middleware as a call of the child's tool, with the
arguments the client sent under the tool's own names (the hidden ones are set after, as the tool is called).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from wiremcp import methods
from wiremcp.component import definition_site
from wiremcp.errors import DefinitionError
from wiremcp.middleware import Call, CallNext, chain
from wiremcp.skill_set import Source
from wiremcp.skills import Skill
from wiremcp.transforms import TransformedTool
from wiremcp.types import JSONObject
from wiremcp.uritemplate import UriTemplate

if TYPE_CHECKING:
    from wiremcp.resources import Resource
    from wiremcp.server import MCPServer
    from wiremcp.tools import Tool

_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class Mount:
    """``child`` served by ``parent`` under ``prefix``: what of the child the parent serves now, by the
    parent's names, and how to turn them back into the child's."""

    def __init__(self, parent: MCPServer, child: MCPServer, prefix: str | None) -> None:
        self.defined_at = definition_site()
        """``file:line`` of the ``mount`` call."""
        if not (prefix is None or (isinstance(prefix, str) and _PREFIX.fullmatch(prefix))):
            raise DefinitionError(f"{self.defined_at}: mount {child.name}: prefix {prefix!r} must be 1 to 64 letters, digits, '_' "
                                  "or '-', starting with a letter or digit")
        self.parent = parent
        self.child = child
        self.prefix = prefix
        self.tools: dict[str, str] = {}
        """The parent's name of each tool served from the child, and the child's."""
        self.prompts: dict[str, str] = {}
        self.resources: dict[str, str] = {}
        """The parent's URI (or URI template) of each resource served from the child, and the child's."""
        self.completers: set[tuple[str, str, str]] = set()
        self.skill_sources: dict[int, Source] = {}
        """The parent's copy of each of the child's skill sources, by the child's source's id."""

    # -- names -------------------------------------------------------------------------------------------
    def name(self, name: str) -> str:
        return f"{self.prefix}_{name}" if self.prefix is not None else name

    def uri(self, uri: str) -> str:
        """``scheme://rest`` as the parent serves it: ``scheme://<prefix>/rest``."""
        if self.prefix is None:
            return uri
        scheme, sep, rest = uri.partition("://")
        return f"{scheme}://{self.prefix}/{rest}" if sep else f"{self.prefix}/{uri}"

    def child_uri(self, uri: str) -> str | None:
        """The child's URI for a parent's URI under this mount; None if it is not under it."""
        if self.prefix is None:
            child = self.child
            found = child.resources.find(uri) is not None or uri in child.skill_set.skills
            return uri if found or child.skill_set.directory(uri.rstrip("/")) is not None else None
        scheme, sep, rest = uri.partition("://")
        head = f"{self.prefix}/"
        if sep and rest.startswith(head):
            return f"{scheme}://{rest[len(head):]}"
        return uri[len(head):] if not sep and uri.startswith(head) else None

    # -- keeping the parent in step ----------------------------------------------------------------------
    def sync(self, kind: str | None = None) -> None:
        """Serve in the parent what the child serves now (``kind``: only ``tools``, ``prompts`` or
        ``resources``; None: everything). A name already served otherwise raises ``DefinitionError``."""
        if kind in (None, "tools"):
            self._sync_tools()
        if kind in (None, "prompts"):
            self._sync_prompts()
        if kind in (None, "resources"):
            self._sync_skills()
            self._sync_resources()
        self._sync_completers()

    def clear(self) -> None:
        """Take what this mount serves out of the parent (it is being replaced)."""
        parent = self.parent
        for name in self.tools:
            parent.defined_tools.pop(name, None)
        for name in self.prompts:
            parent.prompts.pop(name, None)
        for uri in self.resources:
            parent.resources.static.pop(uri, None)
            parent.resources.templates.pop(uri, None)
        for key in self.completers:
            parent.completers.pop(key, None)
        for source in self.skill_sources.values():
            parent.skill_set.drop(source)
        self.tools, self.prompts, self.resources, self.completers, self.skill_sources = {}, {}, {}, set(), {}
        for kind in ("tools", "prompts", "resources"):
            parent.list_changed(kind)

    def _taken(self, kind: str, key: str) -> bool:
        """Whether the parent serves ``key`` otherwise than through this mount."""
        mine = getattr(self, kind)
        return key not in mine and self.parent.serves(kind, key)

    def _sync_tools(self) -> None:
        # the child's own tool search is not served as such: the parent searches the mount's tools itself
        tools = {name: t for name, t in self.child.tools.items() if getattr(t, "searcher", None) is None}
        self._sync_named("tools", tools, self.parent.defined_tools, self._tool)

    def _sync_prompts(self) -> None:
        self._sync_named("prompts", self.child.prompts, self.parent.prompts, _renamed)

    def _sync_named(self, kind: str, theirs: dict[str, Any], ours: dict[str, Any],
                    moved: Callable[[str, Any], Any]) -> None:
        """Tools or prompts (``kind``): the child's (``theirs``) into the parent's (``ours``), renamed."""
        wanted = {self.name(name): item for name, item in theirs.items()}
        self._refuse(kind, wanted)
        for name in getattr(self, kind):
            ours.pop(name, None)
        setattr(self, kind, {name: item.name for name, item in wanted.items()})
        for name, item in wanted.items():
            ours[name] = moved(name, item)
        self.parent.list_changed(kind)

    def _sync_resources(self) -> None:
        skills = self.child.skill_set
        skill_files = {skill.file_uri(f) for skill in skills.skills.values() for f in skill.files}
        children = [r for r in [*self.child.resources.static.values(), *self.child.resources.templates.values()]
                    if r.uri not in skill_files]  # the parent serves the skills from its own copy of their sources
        wanted = {self.uri(r.uri): r for r in children}
        self._refuse("resources", wanted)
        resources = self.parent.resources
        for uri in self.resources:
            resources.static.pop(uri, None)
            resources.templates.pop(uri, None)
        self.resources = {uri: r.uri for uri, r in wanted.items()}
        for uri, resource in wanted.items():
            moved = _moved(resource, uri)
            (resources.templates if moved.template else resources.static)[uri] = moved
        self.parent.list_changed("resources")

    def _sync_skills(self) -> None:
        """The child's skill sources, served by the parent under the prefix (the parent reads the folders
        itself, and keeps up with them as it does with its own)."""
        current = {id(source): source for source in self.child.skill_set.sources}
        for key in [k for k in self.skill_sources if k not in current]:
            self.parent.skill_set.drop(self.skill_sources.pop(key))
        for key, source in current.items():
            if key not in self.skill_sources:
                self.skill_sources[key] = self.parent.skill_set.add_source(self._source(source))

    def _source(self, source: Source) -> Source:
        prefix = "/".join(p for p in (self.prefix, source.prefix) if p)
        made = source.made
        if made is not None:
            made = Skill(self._path(made.path), made.frontmatter, made.files, made.scopes, made.list_files)
        return Source(prefix or None, source.scopes, source.list_files, source.refresh_seconds, root=source.root,
                      folder=source.folder, made=made, removed={self._path(p) for p in source.removed})

    def _path(self, path: str) -> str:
        return f"{self.prefix}/{path}" if self.prefix is not None else path

    def _sync_completers(self) -> None:
        for key in self.completers:
            self.parent.completers.pop(key, None)
        self.completers = set()
        for (kind, target, argument), completer in self.child.completers.items():
            key = (kind, self.name(target) if kind == "ref/prompt" else self.uri(target), argument)
            self.parent.completers[key] = completer
            self.completers.add(key)

    def _refuse(self, kind: str, wanted: dict[str, Any]) -> None:
        for key in wanted:
            if self._taken(kind, key):
                raise DefinitionError(f"{definition_site()}: mount {self.child.name} at {self.prefix or 'the top'!r} "
                                      f"({self.defined_at}): the parent {self.parent.name} already serves "
                                      f"{kind[:-1]} {key}")

    def _tool(self, name: str, tool: Tool) -> Tool:
        moved: Tool = _renamed(name, tool)
        ui = (tool.meta or {}).get("ui")
        if isinstance(ui, dict) and isinstance(view := ui.get("resourceUri"), str):
            meta = dict(tool.meta or {})
            meta["ui"] = {**ui, "resourceUri": self.uri(view)}
            if "ui/resourceUri" in meta:
                meta["ui/resourceUri"] = self.uri(view)
            moved.meta = meta
        return moved

    # -- the child's middleware ----------------------------------------------------------------------------
    def translate(self, call: Call) -> JSONObject | None:
        """The params of ``call`` as the child names things, if the call names one of the child's components."""
        params = call.params
        if call.method in ("tools/call", "prompts/get"):
            names = self.tools if call.method == "tools/call" else self.prompts
            name = call.name
            shaped = self.transformed(call)
            if shaped is not None:  # the parent's transform of the child's tool: the child's shape
                child: JSONObject = {**params, "name": names[shaped.source.name]}
                if "arguments" in params:
                    child["arguments"] = shaped.as_source(params["arguments"])
                return child
            return {**params, "name": names[name]} if name in names else None
        if call.method in methods.NAMES_BY_URI and call.uri is not None:
            inner = self.child_uri(call.uri)
            return {**params, "uri": inner} if inner is not None else None
        ref = params.get("ref") if call.method == "completion/complete" else None
        if isinstance(ref, dict):
            if ref.get("type") == "ref/prompt" and ref.get("name") in self.prompts:
                return {**params, "ref": {**ref, "name": self.prompts[ref["name"]]}}
            inner = self.child_uri(ref["uri"]) if isinstance(ref.get("uri"), str) else None
            if ref.get("type") == "ref/resource" and inner is not None:
                return {**params, "ref": {**ref, "uri": inner}}
        return None

    def transformed(self, call: Call) -> TransformedTool | None:
        """The parent's transform of one of the child's tools that ``call`` calls, if it calls one."""
        found = call.component if call.method == "tools/call" and call.name not in self.tools else None
        if isinstance(found, TransformedTool) and self.parent.defined_tools.get(found.source.name) is found.source \
                and found.source.name in self.tools:
            return found
        return None

    def back(self, params: JSONObject, shaped: TransformedTool | None = None,
             given: JSONObject | None = None, sent: JSONObject | None = None) -> JSONObject:
        """The child's params (as its middleware left them) in the parent's names again. ``shaped``: the
        parent's transform of the tool called, with the params ``given`` to the child's middleware and those
        the client ``sent``: what the middleware left as it was given is what the client sent."""
        out = dict(params)
        if shaped is not None and given is not None and sent is not None:
            out["name"] = shaped.name if out.get("name") == given.get("name") else self.name(str(out.get("name")))
            if out.get("arguments") is not given.get("arguments"):
                out["arguments"] = shaped.as_shown(out.get("arguments"))
            elif "arguments" in sent:
                out["arguments"] = sent["arguments"]
            return out
        if isinstance(out.get("name"), str) and "uri" not in out:
            out["name"] = self.name(out["name"])
        if isinstance(out.get("uri"), str):
            out["uri"] = self.uri(out["uri"])
        ref = out.get("ref")
        if isinstance(ref, dict):
            if isinstance(ref.get("name"), str):
                out["ref"] = {**ref, "name": self.name(ref["name"])}
            elif isinstance(ref.get("uri"), str):
                out["ref"] = {**ref, "uri": self.uri(ref["uri"])}
        return out


def mounted_first(server: MCPServer) -> Iterator[MCPServer]:
    """Every server mounted in ``server``, at any depth and each once, depth first, then ``server`` itself."""
    seen: set[int] = set()

    def walk(served: MCPServer) -> Iterator[MCPServer]:
        if id(served) in seen:
            return
        seen.add(id(served))
        for mount in served.mounts:
            yield from walk(mount.child)
        yield served

    return walk(server)


class MountHop:
    """The innermost step of a parent's middleware: a request that names a mounted child's component goes
    through the child's own middleware (and its children's), in the child's names, then on to the parent."""

    def __init__(self, mounts: list[Mount]) -> None:
        self.mounts = mounts

    async def __call__(self, call: Call, call_next: CallNext) -> JSONObject | None:
        if call.notification:
            return await call_next()
        for mount in self.mounts:
            pipeline = mount.child.pipeline
            if not pipeline:
                continue
            params = mount.translate(call)
            if params is None:
                continue
            inner = Call(mount.child, call.method, params, ctx=call.ctx, request_id=call.request_id,
                         principal=call.principal, session=call.session, stateless=call.stateless, peer=call.peer,
                         batch=call.batch, runtime=call.runtime)

            shaped = mount.transformed(call)

            async def onwards(inner: Call = inner, mount: Mount = mount, given: JSONObject = params,
                              shaped: TransformedTool | None = shaped) -> JSONObject | None:
                if inner.params is not given:
                    call.params = mount.back(inner.params, shaped, given, call.params)
                return await call_next()

            return await chain(pipeline, inner, onwards)
        return await call_next()


def _renamed(name: str, component: Any) -> Any:
    moved = copy.copy(component)
    moved.name = name
    return moved


def _moved(resource: Resource, uri: str) -> Resource:
    moved: Resource = copy.copy(resource)
    moved.uri = uri
    template = UriTemplate(uri)
    moved.template = template if template.is_template else None
    if moved.name == resource.uri.partition("://")[2]:
        moved.name = uri.partition("://")[2]
    return moved

