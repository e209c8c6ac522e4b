"""Access: the one gate between a request and what it names.

Every tool, prompt, resource, resource template and task that a request reaches is looked up here, and
only here, together with the caller's right to it (the component's ``scopes`` against the principal's):
``tools/call``, ``prompts/get``, ``resources/read``, ``resources/subscribe``, ``completion/complete``,
the ``resourceSubscriptions`` and ``taskIds`` of ``subscriptions/listen``, the ``tasks/*`` methods,
``skills/get``, ``resources/directory/read`` and the lists (``skills/list`` among them). A method that finds a component some other way skips the check; so none does (the test of
this module enumerates them). A caller's views (``wiremcp.views``) are decided here too: what is outside them is
left out of lists and unknown to the methods that name it.

Without a principal (stdio, or HTTP without authentication) there is nothing to check. A principal
lacking a scope gets ``InsufficientScope`` (HTTP: 403 with a step-up challenge); lists and listen
filters leave out what the caller may not use instead of refusing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from wiremcp import methods
from wiremcp.errors import InvalidParams, ResourceNotFound
from wiremcp.scopes import allows, authorize
from wiremcp.types import JSONObject
from wiremcp.views import View, ViewKind, shown
from wiremcp.views import theirs as views_of

if TYPE_CHECKING:
    from wiremcp.context import Context
    from wiremcp.prompts import Prompt
    from wiremcp.resources import Resource
    from wiremcp.server import MCPServer
    from wiremcp.skill_set import Directory
    from wiremcp.skills import Skill
    from wiremcp.tasks import TaskRecord
    from wiremcp.tools import Tool


class Scoped(Protocol):
    """What a caller may need scopes for: a tool, prompt or resource, a skill, a skill's directory."""

    @property
    def scopes(self) -> list[str]: ...


C = TypeVar("C", bound=Scoped)


def check(component: Scoped, ctx: Context) -> None:
    """Raise ``InsufficientScope`` unless the caller may use ``component``."""
    authorize(component.scopes, ctx.principal)


def permits(component: Scoped, ctx: Context) -> bool:
    """Whether the caller may use ``component`` (for what is filtered rather than refused)."""
    return allows(component.scopes, ctx.principal)


def tool(name: Any, ctx: Context) -> Tool:
    """The tool a ``tools/call`` names, if the caller may call it: the one ``called_tool`` found as the call
    came in (``Context.found_tool``), unless the call now names another (middleware may change it)."""
    found = ctx.found_tool
    if found is None or found.name != name:
        found = ctx.server.tools.get(_name(name, "tools/call"))
    if found is None or not (in_view("tools", found.name, ctx) or _searches_all(found)):
        raise InvalidParams(f"Unknown tool: {name}")
    check(found, ctx)
    return found


def called_tool(params: JSONObject, server: MCPServer) -> Tool | None:
    """The tool a ``tools/call`` (``params``) names, found but not judged: as a stateless call comes in over
    HTTP, its mirrored headers are checked against the tool's parameter headers (``wiremcp.inbound``), and
    ``tool`` then judges the caller's right to it, on this same lookup, when the call runs. None: the server
    has no such tool."""
    name = params.get("name")
    return server.tools.get(name) if isinstance(name, str) else None


def prompt(name: Any, ctx: Context, method: str = "prompts/get") -> Prompt:
    """The prompt a ``prompts/get`` (or a completion reference) names, if the caller may get it."""
    found = ctx.server.prompts.get(_name(name, method))
    if found is None or not in_view("prompts", found.name, ctx):
        raise InvalidParams(f"Unknown prompt: {name}")
    check(found, ctx)
    return found


def resource(uri: Any, ctx: Context, method: str = "resources/read") -> tuple[Resource, dict[str, str]]:
    """The resource (static, or a template's match with its variables) at ``uri``, if the caller may read
    it; reading and subscribing are one right."""
    if not isinstance(uri, str) or not uri:
        raise InvalidParams(f"{method} needs a string 'uri'")
    found = ctx.server.resources.find(uri)
    if found is None or not in_view("resources", found[0].uri, ctx):
        raise ResourceNotFound(uri)
    check(found[0], ctx)
    return found


def readable(uri: str, ctx: Context) -> bool:
    """Whether ``uri`` is a resource the caller may read (a listen request's ``resourceSubscriptions``)."""
    found = ctx.server.resources.find(uri)
    return found is not None and in_view("resources", found[0].uri, ctx) and permits(found[0], ctx)


def template(uri: Any, ctx: Context) -> Resource:
    """The resource template a completion reference names (by its URI template), if the caller may read it."""
    found = ctx.server.resources.templates.get(uri) if isinstance(uri, str) else None
    if found is None or found.template is None or not in_view("resources", found.uri, ctx):
        raise InvalidParams(f"Unknown resource template: {uri}")
    check(found, ctx)
    return found


def skill(uri: Any, ctx: Context) -> Skill:
    """The skill a ``skills/get`` names by its ``SKILL.md`` URI, if the caller may read it (unknown: -32602)."""
    if not isinstance(uri, str) or not uri:
        raise InvalidParams("skills/get needs a string 'uri'")
    found = ctx.server.skill_set.skills.get(uri)
    if found is None or not in_view("resources", found.uri, ctx):
        raise InvalidParams(f"Unknown skill: {uri}", {"uri": uri})
    check(found, ctx)
    return found


def directory(uri: Any, ctx: Context) -> Directory:
    """The directory a ``resources/directory/read`` names, if the caller may read it (a file or an unknown URI:
    -32602)."""
    if not isinstance(uri, str) or not uri:
        raise InvalidParams("resources/directory/read needs a string 'uri'")
    found = ctx.server.skill_set.directory(uri.rstrip("/"))
    if found is None or not in_view("resources", found.uri, ctx):
        raise InvalidParams(f"Not a directory: {uri}", {"uri": uri})
    check(found, ctx)
    return found


def _made_by(record: TaskRecord, ctx: Context) -> Tool | None:
    """The tool whose call the task runs, if the server still has it."""
    return ctx.server.tools.get(record.tool) if record.tool else None


def task(record: TaskRecord, ctx: Context) -> TaskRecord:
    """A task the caller owns (the store looked it up by owner), if it may still use the task's tool: the
    task's status and result are the tool's answer, under the tool's scopes."""
    made_by = _made_by(record, ctx)
    if made_by is not None:
        check(made_by, ctx)
    return record


def task_visible(record: TaskRecord, ctx: Context) -> bool:
    """Whether a list or a listen request shows the caller this task of its own (``task``'s rule)."""
    made_by = _made_by(record, ctx)
    return made_by is None or permits(made_by, ctx)


def visible(items: Sequence[C], ctx: Context, kind: ViewKind) -> Sequence[C]:
    """What a list of ``kind`` shows the caller: what its views show (``wiremcp.views``), and with
    ``filter_lists_by_scope`` (and a principal) only what it may use; otherwise ``items`` itself (the same
    object, so that its page stays cached)."""
    if ctx.principal is None:
        return items
    views = _views(ctx)
    if views is not None:
        named_by = "uri" if kind == "resources" else "name"
        items = [item for item in items if shown(views, kind, str(getattr(item, named_by))) or _searches_all(item)]
    if not ctx.server.filter_lists_by_scope:
        return items
    return [item for item in items if permits(item, ctx)]


def view_searches(ctx: Context) -> list[Any]:
    """The tool searches (``ToolSearch``) of the caller's views that offer their tools through one."""
    return [view.search for view in _views(ctx) or () if view.search is not None]


def _searches_all(item: object) -> bool:
    """Whether ``item`` is the search tool over a server's whole catalog (``wiremcp.tool_search``): every caller
    is shown it, whatever their views, since it answers with what their views show (``visible`` decides that)."""
    return getattr(item, "whole_catalog", False) is True


def _views(ctx: Context) -> list[View] | None:
    """The caller's views, None when none is theirs (or the server has none)."""
    views = ctx.server.views
    return views_of(list(views.values()), ctx.principal) if views and ctx.principal is not None else None


def in_view(kind: ViewKind, key: str, ctx: Context) -> bool:
    """Whether the ``kind`` named ``key`` (a tool's or prompt's name, a resource's, template's, skill's or skill
    directory's URI) is in the caller's views (all of the catalog is, when no view is theirs)."""
    views = _views(ctx)
    return views is None or shown(views, kind, key)


def named(method: str, params: JSONObject, server: MCPServer) -> Any:
    """The component a message names (a tool, prompt, resource or template, skill, skill directory), as the
    server has it, for middleware to look at; None if there is none. This decides nothing: the methods
    above decide whether the caller may use it."""
    declared = methods.BY_NAME.get(method)
    key = params.get(declared.names_component) if declared is not None and declared.names_component else None
    if not isinstance(key, str):
        ref = params.get("ref") if method == "completion/complete" else None
        if not isinstance(ref, dict):
            return None
        if ref.get("type") == "ref/prompt":
            return server.prompts.get(str(ref.get("name")))
        return server.resources.templates.get(str(ref.get("uri")))
    if method == "tools/call":
        return server.tools.get(key)
    if method == "prompts/get":
        return server.prompts.get(key)
    if method == "skills/get":
        return server.skill_set.skills.get(key)
    if method == "resources/directory/read":
        return server.skill_set.directory(key.rstrip("/"))
    if method.startswith("resources/"):
        found = server.resources.find(key)
        return found[0] if found is not None else None
    return None


def _name(value: Any, method: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"{method} needs a string 'name'")
    return value
